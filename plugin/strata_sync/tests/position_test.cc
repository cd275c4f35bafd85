// Unit tests of the strong-sync position rules (strata_sync_position.h):
// how acks, ack points and waiters are matched and which position N
// replicas hold.
#include "strata_sync_position.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

using strata::sync::compare_log_names;
using strata::sync::Pos;

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
