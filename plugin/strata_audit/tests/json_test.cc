#include <gtest/gtest.h>

#include <random>

#include "json.h"

using strata_audit::append_json_string;
using strata_audit::utf8_sequence_length;

namespace {

std::string esc(std::string_view s) {
  std::string out;
  append_json_string(&out, s);
  return out;
}

// A strict JSON string parser for the test: returns false on anything that
// is not a valid JSON string literal made of valid UTF-8.
bool valid_json_string(const std::string &s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return false;
  size_t i = 1;
  while (i + 1 < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c < 0x20) return false;
    if (c == '\\') {
      const char e = s[i + 1];
      if (e == 'u') {
        if (i + 6 > s.size() - 1) return false;
        for (int k = 2; k < 6; ++k)
          if (!isxdigit(static_cast<unsigned char>(s[i + k]))) return false;
        i += 6;
        continue;
      }
      if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos)
        return false;
      i += 2;
      continue;
    }
    const size_t n = utf8_sequence_length(std::string_view(s).substr(i, s.size() - 1 - i));
    if (n == 0) return false;
    i += n;
  }
  return i == s.size() - 1;
}

}  // namespace

TEST(Json, PlainAndSpecials) {
  EXPECT_EQ(esc("select 1"), "\"select 1\"");
  EXPECT_EQ(esc("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(esc("l1\nl2\r\t"), "\"l1\\nl2\\r\\t\"");
  EXPECT_EQ(esc(std::string_view("\0\x01\x1f", 3)), "\"\\u0000\\u0001\\u001f\"");
  EXPECT_EQ(esc(""), "\"\"");
}

TEST(Json, Utf8PassesThrough) {
  EXPECT_EQ(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
            "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(Json, InvalidBytesBecomeLatin1Escapes) {
  EXPECT_EQ(esc("\xff"), "\"\\u00ff\"");
  EXPECT_EQ(esc("a\xc3"), "\"a\\u00c3\"");              // truncated sequence
  EXPECT_EQ(esc("\xc0\xaf"), "\"\\u00c0\\u00af\"");     // overlong '/'
  EXPECT_EQ(esc("\xed\xa0\x80"), "\"\\u00ed\\u00a0\\u0080\"");  // surrogate
  EXPECT_EQ(esc("\xf4\x90\x80\x80"), "\"\\u00f4\\u0090\\u0080\\u0080\"");
}

TEST(Json, RandomBytesAlwaysGiveValidJson) {
  std::mt19937 rng(12345);  // fixed seed: failures reproduce
  for (int iter = 0; iter < 20000; ++iter) {
    std::string in(rng() % 40, '\0');
    for (auto &c : in) c = static_cast<char>(rng() & 0xff);
    const std::string out = esc(in);
    ASSERT_TRUE(valid_json_string(out)) << "iteration " << iter;
    ASSERT_EQ(out.find('\n'), std::string::npos);
  }
}

namespace {

// The escaping rules, one byte (or UTF-8 sequence) at a time: the
// reference that the chunked, run-copying implementation must match.
std::string reference_escape(std::string_view s) {
  std::string out = "\"";
  char buf[8];
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20) {
      snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
    } else {
      const size_t n = utf8_sequence_length(s.substr(i));
      if (n == 0) {
        snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out.append(s.data() + i, n);
        i += n;
        continue;
      }
    }
    ++i;
  }
  return out + "\"";
}

}  // namespace

// Long statements are escaped in chunks: sequences and escapes that
// straddle a chunk boundary come out as if escaped byte by byte.
TEST(Json, LongInputMatchesByteByByteReference) {
  const std::string pieces[] = {"a", "\"", "\\", "\n", std::string(1, '\0'),
                                "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
                                "\xff", "\xe2\x82"};
  std::mt19937 rng(777);  // fixed seed: failures reproduce
  for (int iter = 0; iter < 300; ++iter) {
    std::string in;
    const size_t len = rng() % 5000;
    while (in.size() < len) {
      // Mostly plain text, as statements are.
      in += rng() % 4 ? std::string(rng() % 40, 'x') : pieces[rng() % 10];
    }
    const std::string out = esc(in);
    ASSERT_EQ(out, reference_escape(in)) << "iteration " << iter;
    ASSERT_TRUE(valid_json_string(out)) << "iteration " << iter;
  }
  // A 3-byte sequence starting on the last byte of the first chunk.
  const std::string edge = std::string(1023, 'q') + "\xe2\x82\xac" + "\"";
  EXPECT_EQ(esc(edge), reference_escape(edge));
}
