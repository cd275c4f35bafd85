#include "test_support.h"

#include <cstdlib>
#include <filesystem>
#include <random>

namespace strata::logservice::testing {

std::uint64_t TestSeed(std::uint64_t salt) {
  std::uint64_t base = 20260522;
  if (const char* env = std::getenv("STRATA_TEST_SEED")) base = std::strtoull(env, nullptr, 10);
  std::uint64_t seed = base * 0x9E3779B97F4A7C15ull + salt;
  ::testing::Test::RecordProperty("seed", std::to_string(base));
  std::printf("[ seed     ] STRATA_TEST_SEED=%llu (salt %llu)\n", static_cast<unsigned long long>(base),
              static_cast<unsigned long long>(salt));
  return seed;
}

LogSink CapturingLog::sink() {
  auto mu = mu_;
  auto lines = lines_;
  return [mu, lines](LogLevel level, std::string_view text) {
    std::lock_guard<std::mutex> lock(*mu);
    lines->push_back({level, std::string(text)});
  };
}

void CapturingLog::Expect(std::string substring, std::string why) {
  allowed_.emplace_back(std::move(substring), std::move(why));
}

std::vector<std::string> CapturingLog::lines() const {
  std::lock_guard<std::mutex> lock(*mu_);
  std::vector<std::string> out;
  for (const auto& l : *lines_) out.push_back(std::string(LogLevelName(l.level)) + " " + l.text);
  return out;
}

bool CapturingLog::Contains(const std::string& substring) const {
  std::lock_guard<std::mutex> lock(*mu_);
  for (const auto& l : *lines_)
    if (l.text.find(substring) != std::string::npos) return true;
  return false;
}

void CapturingLog::VerifyNoUnexpected() const {
  std::lock_guard<std::mutex> lock(*mu_);
  for (const auto& l : *lines_) {
    if (l.level == LogLevel::kInfo) continue;
    bool allowed = false;
    for (const auto& [substring, why] : allowed_) allowed = allowed || l.text.find(substring) != std::string::npos;
    EXPECT_TRUE(allowed) << "unexpected " << LogLevelName(l.level) << " line: " << l.text;
  }
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp ? tmp : "/tmp") + "/logstore_test.XXXXXX";
  char* made = ::mkdtemp(pattern.data());
  if (made == nullptr) std::abort();
  path_ = made;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string RandomBytes(std::uint64_t seed, std::size_t n) {
  std::mt19937_64 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

}  // namespace strata::logservice::testing
