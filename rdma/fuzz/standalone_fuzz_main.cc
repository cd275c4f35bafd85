// Runs a libFuzzer-style target (LLVMFuzzerTestOneInput) without libFuzzer,
// with any compiler:
//
//   <target> [--runs=N] [--seed=S] [--max_len=L] [file...]
//
// Files (corpus entries, crash reproducers) run first, then the target's own
// seeds (StrataFuzzSeeds, if it defines one), then N inputs made by random
// mutations of the seeds and earlier inputs: bit flips, overwritten bytes,
// "interesting" 32-bit values, inserted / erased / duplicated spans,
// truncation, splicing. There is no coverage feedback: this is the smoke run
// that keeps each target building and its invariants holding in every ctest
// run; real fuzzing is the clang build with -fsanitize=fuzzer. The seed
// comes from --seed, else STRATA_TEST_SEED, else a fixed default, and is
// printed, so a failure reproduces. A target reports a bug by aborting.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" __attribute__((weak)) void StrataFuzzSeeds(std::vector<std::string>* seeds);

namespace {

void Run(const std::string& input) {
  // A private heap copy so out-of-bounds reads are past a real allocation.
  std::vector<uint8_t> copy(input.begin(), input.end());
  LLVMFuzzerTestOneInput(copy.empty() ? nullptr : copy.data(), copy.size());
}

std::string Mutate(std::string s, const std::vector<std::string>& pool, std::mt19937_64& rng, size_t max_len) {
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    const size_t n = s.size();
    switch (rng() % 9) {
      case 0:
        if (n) s[rng() % n] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:
        if (n) s[rng() % n] = static_cast<char>(rng());
        break;
      case 2:
        if (n >= 4) {
          static const uint32_t kInteresting[] = {0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0x7fffffff, 0x80000000u,
                                                  0xffffffffu, 4096, 65536};
          const uint32_t v = kInteresting[rng() % (sizeof kInteresting / sizeof kInteresting[0])];
          std::memcpy(&s[rng() % (n - 3)], &v, 4);
        }
        break;
      case 3: {
        const size_t at = n ? rng() % (n + 1) : 0;
        std::string junk(1 + rng() % 16, '\0');
        for (auto& c : junk) c = static_cast<char>(rng());
        s.insert(at, junk);
        break;
      }
      case 4:
        if (n) {
          const size_t at = rng() % n;
          s.erase(at, 1 + rng() % (n - at));
        }
        break;
      case 5:
        if (n) {
          const size_t at = rng() % n, len = 1 + rng() % (n - at);
          s.insert(rng() % (n + 1), s.substr(at, len));
        }
        break;
      case 6:
        if (n) s.resize(rng() % n);
        break;
      case 7:
        if (!pool.empty()) {
          const std::string& other = pool[rng() % pool.size()];
          s = s.substr(0, n ? rng() % (n + 1) : 0) + other.substr(other.empty() ? 0 : rng() % other.size());
        }
        break;
      default:
        if (n) s[0] = static_cast<char>(rng());  // most targets use byte 0 as a mode
        break;
    }
  }
  if (s.size() > max_len) s.resize(max_len);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  long runs = 20000;
  size_t max_len = 4096;
  uint64_t seed = 20261123;
  if (const char* env = std::getenv("STRATA_TEST_SEED")) seed = std::strtoull(env, nullptr, 10);
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--runs=", 0) == 0) runs = std::atol(a.c_str() + 7);
    else if (a.rfind("--seed=", 0) == 0) seed = std::strtoull(a.c_str() + 7, nullptr, 10);
    else if (a.rfind("--max_len=", 0) == 0) max_len = std::strtoull(a.c_str() + 10, nullptr, 10);
    else files.push_back(a);
  }
  std::printf("standalone fuzz driver (no coverage feedback): seed %llu, %ld runs\n",
              static_cast<unsigned long long>(seed), runs);
  std::fflush(stdout);
  std::vector<std::string> pool;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "cannot read %s\n", f.c_str());
      return 2;
    }
    pool.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    Run(pool.back());
  }
  if (StrataFuzzSeeds) StrataFuzzSeeds(&pool);
  for (const auto& s : pool) Run(s);
  if (pool.empty()) pool.push_back(std::string(64, '\0'));
  std::mt19937_64 rng(seed);
  for (long i = 0; i < runs; ++i) {
    std::string input = rng() % 16 == 0 ? std::string(rng() % 256, '\0') : pool[rng() % pool.size()];
    if (input.size() && rng() % 16 == 0)
      for (auto& c : input) c = static_cast<char>(rng());
    input = Mutate(std::move(input), pool, rng, max_len);
    Run(input);
    if (pool.size() < 512) pool.push_back(std::move(input));
    else pool[rng() % pool.size()] = std::move(input);
  }
  std::printf("done: %ld inputs, no invariant broken\n", runs);
  return 0;
}
