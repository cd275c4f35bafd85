// Unit tests of the AFTER_COMMIT pending-commit map
// (strata_sync_sessions.h): which position a session's statement waits for
// and which sessions an ack settles.
#include "strata_sync_sessions.h"

#include <gtest/gtest.h>

using strata::sync::PendingCommits;
using strata::sync::Pos;

TEST(StrataSyncSessions, EmptyHasNothing) {
  PendingCommits s;
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.find(7), nullptr);
  EXPECT_FALSE(s.take(7).has_value());
}

// Two commits in one statement (a procedure): the later one is waited for,
// also across a rotate, and an earlier one recorded late does not move it
// back.
TEST(StrataSyncSessions, KeepsTheLaterPosition) {
  PendingCommits s;
  s.record(1, Pos{"binlog.000009", 500});
  s.record(1, Pos{"binlog.000010", 4});
  ASSERT_NE(s.find(1), nullptr);
  EXPECT_EQ(*s.find(1), (Pos{"binlog.000010", 4}));
  s.record(1, Pos{"binlog.000009", 900});
  EXPECT_EQ(*s.find(1), (Pos{"binlog.000010", 4}));
  EXPECT_EQ(s.size(), 1u);
}

TEST(StrataSyncSessions, TakeSettlesOnce) {
  PendingCommits s;
  s.record(1, Pos{"binlog.000001", 100});
  s.record(2, Pos{"binlog.000001", 200});
  auto p = s.take(1);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, (Pos{"binlog.000001", 100}));
  EXPECT_FALSE(s.take(1).has_value());
  EXPECT_EQ(s.size(), 1u);
  EXPECT_NE(s.find(2), nullptr);
}

// An ack drops exactly the sessions it covers (equal included).
TEST(StrataSyncSessions, ForgetCoveredKeepsTheRest) {
  PendingCommits s;
  s.record(1, Pos{"binlog.000001", 100});
  s.record(2, Pos{"binlog.000001", 200});
  s.record(3, Pos{"binlog.000002", 50});
  s.forget_covered(Pos{"binlog.000001", 200});
  EXPECT_EQ(s.find(1), nullptr);
  EXPECT_EQ(s.find(2), nullptr);
  ASSERT_NE(s.find(3), nullptr);
  s.forget_covered(Pos{"binlog.000002", 4});
  EXPECT_NE(s.find(3), nullptr);
  s.forget_covered(Pos{"binlog.000003", 4});
  EXPECT_TRUE(s.empty());
}

// Numeric extensions past six digits order by value, as everywhere else.
TEST(StrataSyncSessions, ForgetCoveredAcrossLongExtensions) {
  PendingCommits s;
  s.record(1, Pos{"binlog.999999", 700});
  s.record(2, Pos{"binlog.1000000", 4});
  s.forget_covered(Pos{"binlog.1000000", 3});
  EXPECT_EQ(s.find(1), nullptr);
  EXPECT_NE(s.find(2), nullptr);
}

TEST(StrataSyncSessions, ClearCounts) {
  PendingCommits s;
  s.record(1, Pos{"binlog.000001", 100});
  s.record(2, Pos{"binlog.000001", 200});
  EXPECT_EQ(s.clear(), 2u);
  EXPECT_TRUE(s.empty());
}
