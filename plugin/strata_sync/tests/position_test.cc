// Unit tests of the strong-sync position rules (strata_sync_position.h):
// how acks, ack points and waiters are matched and which position N
// replicas hold.
#include "strata_sync_position.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using strata::sync::compare_log_names;
using strata::sync::Pos;
using strata::sync::quorum_position;

TEST(StrataSyncPosition, SameFileOrdersByOffset) {
  EXPECT_TRUE((Pos{"binlog.000001", 100} < Pos{"binlog.000001", 200}));
  EXPECT_FALSE((Pos{"binlog.000001", 200} < Pos{"binlog.000001", 100}));
  EXPECT_TRUE((Pos{"binlog.000001", 100} <= Pos{"binlog.000001", 100}));
  EXPECT_TRUE((Pos{"binlog.000001", 100} == Pos{"binlog.000001", 100}));
}

// A waiter registered before a rotate is covered by any ack in a later file,
// whatever the offsets.
TEST(StrataSyncPosition, LaterFileCoversEarlierFile) {
  const Pos waiter{"binlog.000001", 900000};
  EXPECT_TRUE(waiter <= (Pos{"binlog.000002", 4}));
  EXPECT_FALSE((Pos{"binlog.000002", 4}) <= (Pos{"binlog.000001", 900000}));
}

// The numeric extension is compared by value: a string compare would put
// binlog.1000000 before binlog.999999 and stall every waiter after the
// millionth rotate.
TEST(StrataSyncPosition, ExtensionComparedByValue) {
  EXPECT_LT(compare_log_names("binlog.999999", "binlog.1000000"), 0);
  EXPECT_GT(compare_log_names("binlog.1000000", "binlog.999999"), 0);
  EXPECT_EQ(compare_log_names("binlog.000010", "binlog.10"), 0);
  EXPECT_LT(compare_log_names("binlog.000009", "binlog.000010"), 0);
  EXPECT_TRUE((Pos{"binlog.999999", 5000} < Pos{"binlog.1000000", 4}));
}

// Names that do not share a stem or have no numeric extension still get a
// total order (std::set and std::multimap rely on it).
TEST(StrataSyncPosition, OtherNamesCompareAsStrings) {
  EXPECT_LT(compare_log_names("a-bin.000002", "b-bin.000001"), 0);
  EXPECT_LT(compare_log_names("binlog", "binlog.000001"), 0);
  EXPECT_LT(compare_log_names("binlog.00a", "binlog.00b"), 0);
  EXPECT_EQ(compare_log_names("binlog.", "binlog."), 0);
  std::set<Pos> s{{"binlog.000002", 4}, {"binlog.1000000", 4},
                  {"binlog.000002", 4}, {"binlog.999999", 7}};
  EXPECT_EQ(s.size(), 3u);
  EXPECT_EQ(s.begin()->file, "binlog.000002");
  EXPECT_EQ(s.rbegin()->file, "binlog.1000000");
}

TEST(StrataSyncPosition, QuorumIsNthHighest) {
  const std::vector<Pos> acked{{"binlog.000001", 500},
                               {"binlog.000002", 100},
                               {"binlog.000001", 900}};
  Pos q;
  ASSERT_TRUE(quorum_position(acked, 1, &q));
  EXPECT_EQ(q, (Pos{"binlog.000002", 100}));
  ASSERT_TRUE(quorum_position(acked, 2, &q));
  EXPECT_EQ(q, (Pos{"binlog.000001", 900}));
  ASSERT_TRUE(quorum_position(acked, 3, &q));
  EXPECT_EQ(q, (Pos{"binlog.000001", 500}));
}

TEST(StrataSyncPosition, NoQuorumWithTooFewReplicas) {
  Pos q{"untouched", 1};
  EXPECT_FALSE(quorum_position({}, 1, &q));
  EXPECT_FALSE(quorum_position({{"binlog.000001", 5}}, 2, &q));
  EXPECT_FALSE(quorum_position({{"binlog.000001", 5}}, 0, &q));
  EXPECT_EQ(q.file, "untouched");
}

// Two replicas acked the same position: N=2 holds it.
TEST(StrataSyncPosition, QuorumWithTies) {
  Pos q;
  ASSERT_TRUE(quorum_position(
      {{"binlog.000003", 77}, {"binlog.000003", 77}, {"binlog.000001", 9}}, 2,
      &q));
  EXPECT_EQ(q, (Pos{"binlog.000003", 77}));
}
