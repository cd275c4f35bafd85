#include <gtest/gtest.h>

#include "query_text.h"

using namespace strata_audit;

namespace {
std::string redact(std::string_view s) {
  std::string out;
  redact_literals(s, &out);
  return out;
}
}  // namespace

TEST(Redact, Literals) {
  EXPECT_EQ(redact("UPDATE t SET pw='s3cr''et' WHERE id=1"),
            "UPDATE t SET pw='?' WHERE id=1");
  EXPECT_EQ(redact("select \"a\\\"b\", 'c\\'d', 2"), "select \"?\", '?', 2");
  EXPECT_EQ(redact("select `it's`, 'x'"), "select `it's`, '?'");
  EXPECT_EQ(redact("select 'unterminated"), "select '?'");
  EXPECT_EQ(redact("no literals here"), "no literals here");
  EXPECT_EQ(redact("''"), "'?'");
}

TEST(Truncate, Utf8Boundaries) {
  EXPECT_EQ(truncate_utf8("hello", 0), "hello");
  EXPECT_EQ(truncate_utf8("hello", 10), "hello");
  EXPECT_EQ(truncate_utf8("hello", 3), "hel");
  // "é" is 2 bytes: cutting inside it drops it whole.
  EXPECT_EQ(truncate_utf8("ab\xc3\xa9z", 3), "ab");
  EXPECT_EQ(truncate_utf8("ab\xc3\xa9z", 4), "ab\xc3\xa9");
  EXPECT_EQ(truncate_utf8("\xff\xff\xff", 2), "\xff\xff");
}
