// Unit tests of which replica servers hold which commit groups and of the
// quorum (strata_sync_ack_ledger.h): a claim counts only for points the
// source sent to that server, and a server votes once however many
// connections it has.
#include "strata_sync_ack_ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using strata::sync::AckLedger;
using strata::sync::count_servers;
using strata::sync::Pos;
using strata::sync::ReplicaIdentity;

namespace {

Pos at(std::uint64_t pos) { return Pos{"binlog.000001", pos}; }

}  // namespace

// A replica that was never sent a waiting group holds nothing, whatever it
// claims: the position it starts its dump at (the binary log's end), or a
// forged ack far ahead.
TEST(StrataSyncAckLedger, ClaimsCountOnlyForWhatWasSent) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  l.add_point(at(100));
  EXPECT_EQ(l.confirm(r, at(100)), 0u);
  EXPECT_EQ(l.confirm(r, Pos{"binlog.000009", 4}), 0u);
  EXPECT_FALSE(l.holds(r, at(100)));
  EXPECT_FALSE(l.advance(1).has_value());
  // Once the group is sent to it, its ack counts.
  l.sent(r, at(100));
  EXPECT_EQ(l.confirm(r, at(100)), 1u);
  EXPECT_TRUE(l.holds(r, at(100)));
  auto q = l.advance(1);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, at(100));
  EXPECT_TRUE(l.points().empty());
}

// A replica that was sent a group, wrote it and lost its connection before
// its ack arrived reconnects after the group: that claim counts, since the
// source sent it the group.
TEST(StrataSyncAckLedger, ReconnectAfterSentGroupCounts) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  l.add_point(at(100));
  l.sent(r, at(100));
  const auto again = l.server({"uuid-r", 2});
  EXPECT_EQ(again, r);
  EXPECT_EQ(l.confirm(again, at(150)), 1u);  // the new dump's start
  ASSERT_TRUE(l.advance(1).has_value());
}

// A replica that skipped a group (it connected after it) and acks later
// ones does not release the skipped group, nor the later ones (the quorum
// is a prefix of the log).
TEST(StrataSyncAckLedger, SkippedGroupBlocksTheQuorum) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  for (std::uint64_t p : {100, 200, 300}) l.add_point(at(p));
  l.sent(r, at(200));
  l.sent(r, at(300));
  EXPECT_EQ(l.confirm(r, at(300)), 2u);
  std::size_t visited = 0;
  EXPECT_FALSE(l.advance(1, &visited).has_value());
  EXPECT_EQ(visited, 1u);
  // Another replica that has the first group lets the quorum pass all.
  const auto other = l.server({"uuid-o", 3});
  l.sent(other, at(100));
  l.confirm(other, at(100));
  auto q = l.advance(1);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, at(300));
}

// Two connections of one replica (one UUID) are one vote: a requirement of
// two needs a second server.
TEST(StrataSyncAckLedger, OneVotePerServer) {
  AckLedger l;
  const auto first = l.server({"uuid-r", 2});
  const auto second = l.server({"uuid-r", 2});
  EXPECT_EQ(first, second);
  l.add_point(at(100));
  l.sent(first, at(100));
  l.confirm(first, at(100));
  l.sent(second, at(100));
  l.confirm(second, at(100));
  EXPECT_FALSE(l.advance(2).has_value());
  // Another UUID with the same server id is not a second vote either.
  const auto same_id = l.server({"uuid-x", 2});
  EXPECT_NE(same_id, first);
  l.sent(same_id, at(100));
  l.confirm(same_id, at(100));
  EXPECT_FALSE(l.advance(2).has_value());
  const auto other = l.server({"uuid-o", 3});
  l.sent(other, at(100));
  l.confirm(other, at(100));
  ASSERT_TRUE(l.advance(2).has_value());
}

TEST(StrataSyncAckLedger, ServersNotConnections) {
  ReplicaIdentity a{"uuid-a", 2}, a_again{"uuid-a", 2}, b{"uuid-b", 3},
      a_other_id{"uuid-a", 9}, no_uuid_2{"", 2}, no_uuid_4{"", 4};
  EXPECT_EQ(count_servers({&a, &a_again}), 1u);
  EXPECT_EQ(count_servers({&a, &b}), 2u);
  EXPECT_EQ(count_servers({&a, &a_other_id, &b}), 2u);
  EXPECT_EQ(count_servers({&a, &no_uuid_2}), 1u);
  EXPECT_EQ(count_servers({&no_uuid_2, &no_uuid_4, &b}), 3u);
  // Transitive: no_uuid_2 ~ a by id, a ~ a_other_id by UUID.
  EXPECT_EQ(count_servers({&no_uuid_2, &a_other_id, &a}), 1u);
}

// GTID auto-positioning: a replica whose ack was lost with its connection
// reconnects with a GTID set that has the group's transaction. That claim
// counts, since the source sent it the group; the same claim by a server
// that was never sent the group counts for nothing and is reported.
TEST(StrataSyncAckLedger, TransactionClaimsCountOnlyForWhatWasSent) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  const auto other = l.server({"uuid-o", 3});
  for (std::uint64_t p : {100, 200}) l.add_point(at(p));
  l.sent(r, at(100), "src:1");
  l.sent(r, at(200), "src:2");
  EXPECT_EQ(l.transaction(at(100)), "src:1");
  const auto has_first = [](const std::string &t) { return t == "src:1"; };
  std::vector<Pos> overreaching;
  EXPECT_EQ(l.confirm_transactions(other, has_first, &overreaching), 0u);
  EXPECT_EQ(overreaching, std::vector<Pos>{at(100)});
  EXPECT_FALSE(l.advance(1).has_value());
  overreaching.clear();
  EXPECT_EQ(l.confirm_transactions(r, has_first, &overreaching), 1u);
  EXPECT_TRUE(overreaching.empty());
  EXPECT_TRUE(l.holds(r, at(100)));
  EXPECT_FALSE(l.holds(r, at(200)));  // it does not claim the second
  auto q = l.advance(1);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(*q, at(100));
  EXPECT_EQ(l.transaction(at(100)), "");  // passed, forgotten
  // Claimed again: already held points are not counted twice, nor as
  // overreaching.
  const auto has_both = [](const std::string &) { return true; };
  EXPECT_EQ(l.confirm_transactions(r, has_both, &overreaching), 1u);
  EXPECT_TRUE(overreaching.empty());
  EXPECT_EQ(l.confirm_transactions(r, has_both, &overreaching), 0u);
  EXPECT_TRUE(overreaching.empty());
}

// The first name given for a point is kept; a point sent without a name
// (the dump did not see its transaction start) is not claimable by GTID.
TEST(StrataSyncAckLedger, TransactionNames) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  l.add_point(at(100));
  l.add_point(at(200));
  l.sent(r, at(100));
  EXPECT_EQ(l.transaction(at(100)), "");
  EXPECT_EQ(l.confirm_transactions(
                r, [](const std::string &) { return true; }),
            0u);
  l.sent(r, at(200), "src:2");
  l.sent(r, at(200), "forged:9");
  EXPECT_EQ(l.confirm_transactions(
                r, [](const std::string &t) { return t == "forged:9"; }),
            0u);
  EXPECT_EQ(l.confirm_transactions(
                r, [](const std::string &t) { return t == "src:2"; }),
            1u);
  l.drop_oldest();
  l.clear_points();
  EXPECT_EQ(l.transaction(at(200)), "");
}

TEST(StrataSyncAckLedger, DropOldestAndClear) {
  AckLedger l;
  const auto r = l.server({"uuid-r", 2});
  l.add_point(at(100));
  l.add_point(at(200));
  l.sent(r, at(100));
  l.drop_oldest();
  EXPECT_EQ(l.confirm(r, at(200)), 0u);  // 100 was dropped, 200 not sent
  l.clear_points();
  EXPECT_TRUE(l.points().empty());
  l.clear();
  EXPECT_EQ(l.server({"uuid-o", 3}), 0u);
}
