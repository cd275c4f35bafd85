// Shared helpers for the logstore tests: the seed (from STRATA_TEST_SEED, or
// a fixed default, printed so every failure reproduces), a log sink that
// fails the test on unexpected WARN/ERROR lines unless allow-listed, and
// scratch directories on the real disk.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice::testing {

// Seed for this test: STRATA_TEST_SEED or 20260522, mixed with `salt`. Logged.
std::uint64_t TestSeed(std::uint64_t salt = 0);

// Collects log lines. Expect() adds an allow-list entry (substring + why);
// VerifyNoUnexpected() fails the test for any WARN/ERROR matching no entry.
class CapturingLog {
 public:
  LogSink sink();
  void Expect(std::string substring, std::string why);
  std::vector<std::string> lines() const;
  bool Contains(const std::string& substring) const;
  void VerifyNoUnexpected() const;

 private:
  struct Line { LogLevel level; std::string text; };
  std::shared_ptr<std::mutex> mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::vector<Line>> lines_ = std::make_shared<std::vector<Line>>();
  std::vector<std::pair<std::string, std::string>> allowed_;
};

// A fresh directory under $TMPDIR (or /tmp), removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string RandomBytes(std::uint64_t seed, std::size_t n);

}  // namespace strata::logservice::testing

#define ASSERT_OK(expr)                                  \
  do {                                                   \
    const ::strata::logservice::Status _s = (expr);      \
    ASSERT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)
#define EXPECT_OK(expr)                                  \
  do {                                                   \
    const ::strata::logservice::Status _s = (expr);      \
    EXPECT_TRUE(_s.ok()) << #expr << ": " << _s.ToString(); \
  } while (0)
