#include <gtest/gtest.h>

#include <string>

#include "text_out.h"

using strata_audit::TextOut;

TEST(TextOut, AppendsAfterWhatTheStringHeldAndTrimsWhenDone) {
  std::string s = "head:";
  {
    TextOut o(&s);
    EXPECT_EQ(o.size(), 5u);
    o.put('a');
    o.put(std::string_view("bc"));
    char *p = o.reserve(3);
    p[0] = 'x';
    p[1] = 'y';
    o.commit(2);  // reserved 3, wrote 2
    EXPECT_EQ(o.size(), 10u);
  }
  EXPECT_EQ(s, "head:abcxy");
}

// Growth past the spare keeps what was written, and a later TextOut on a
// string whose capacity grew large still gives exactly what it wrote.
TEST(TextOut, GrowsAndKeepsContent) {
  std::string s;
  std::string want;
  {
    TextOut o(&s);
    for (int i = 0; i < 5000; ++i) {
      const std::string piece = std::to_string(i) + ",";
      o.put(piece);
      want += piece;
    }
    const std::string big(100000, 'z');
    o.put(big);
    want += big;
  }
  EXPECT_EQ(s, want);
  s.clear();
  {
    TextOut o(&s);
    o.put("small");
  }
  EXPECT_EQ(s, "small");
}
