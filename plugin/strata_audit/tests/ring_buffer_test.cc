#include <gtest/gtest.h>

#include "ring_buffer.h"

using strata_audit::RingBuffer;

namespace {
std::string drain(RingBuffer &r) {
  std::string_view a, b;
  r.peek(&a, &b);
  std::string s = std::string(a) + std::string(b);
  r.consume(s.size());
  return s;
}
}  // namespace

TEST(RingBuffer, PushPeekConsume) {
  RingBuffer r(16);
  EXPECT_TRUE(r.push("hello\n"));
  EXPECT_TRUE(r.push("world\n"));
  EXPECT_EQ(r.used(), 12u);
  EXPECT_FALSE(r.push("toolong\n"));  // all or nothing
  EXPECT_EQ(r.used(), 12u);
  EXPECT_EQ(drain(r), "hello\nworld\n");
  EXPECT_TRUE(r.empty());
}

TEST(RingBuffer, WrapsAround) {
  RingBuffer r(10);
  ASSERT_TRUE(r.push("abcdef"));
  std::string_view a, b;
  r.peek(&a, &b);
  r.consume(4);                 // "ef" left at 4..5
  ASSERT_TRUE(r.push("ghijkl"));  // 6..9 then 0..1
  r.peek(&a, &b);
  EXPECT_EQ(a, "efghij");
  EXPECT_EQ(b, "kl");
  EXPECT_EQ(drain(r), "efghijkl");
}

TEST(RingBuffer, ExactFit) {
  RingBuffer r(4);
  EXPECT_TRUE(r.push("abcd"));
  EXPECT_EQ(r.free_space(), 0u);
  EXPECT_FALSE(r.push("e"));
  EXPECT_EQ(drain(r), "abcd");
}
