// Quorum rules (pure): frontier, source choice, tail choice, seal point.
#include <gtest/gtest.h>

#include <random>

#include "quorum.h"

namespace strata::logservice::repl {
namespace {

TEST(Quorum, ReadQuorumIntersectsWriteQuorum) {
  EXPECT_EQ(ReadQuorum(3, 2), 2u);
  EXPECT_EQ(ReadQuorum(5, 3), 3u);
  EXPECT_EQ(ReadQuorum(3, 3), 1u);
}

TEST(Quorum, FrontierIsWthHighestAmongSealedNodes) {
  std::vector<NodeAck> n = {{true, 100}, {true, 300}, {true, 200}};
  EXPECT_EQ(QuorumFrontier(n, 2, 0, 0), 200u);
  EXPECT_EQ(QuorumFrontier(n, 3, 0, 0), 100u);
  EXPECT_EQ(QuorumFrontier(n, 1, 0, 0), 300u);
  n[2].sealed = false;  // an unsealed node's acks do not count
  EXPECT_EQ(QuorumFrontier(n, 2, 0, 0), 100u);
  n[0].sealed = false;
  EXPECT_EQ(QuorumFrontier(n, 2, 0, 0), 0u);
}

TEST(Quorum, TailCountsOnlyAtTheStreamEndWithAQuorum) {
  // Stream durable to 1024 on all; tail (1024, 1300) acked by one node only.
  std::vector<NodeAck> n = {{true, 1024, 1024, 1300}, {true, 1024, 1024, 1100}, {true, 1024, 0, 0}};
  EXPECT_EQ(QuorumFrontier(n, 2, 1024, 1300), 1100u);
  n[2].tail_block = 1024;
  n[2].tail_end = 1300;
  EXPECT_EQ(QuorumFrontier(n, 2, 1024, 1300), 1300u);
  // Acks above the writer's current tail are clamped to it.
  EXPECT_EQ(QuorumFrontier(n, 2, 1024, 1200), 1200u);
  // A tail beyond the quorum stream end does not count.
  std::vector<NodeAck> m = {{true, 512, 1024, 1300}, {true, 512, 1024, 1300}, {true, 1024, 1024, 1300}};
  EXPECT_EQ(QuorumFrontier(m, 2, 1024, 1300), 512u);
  // A tail for another block does not count.
  std::vector<NodeAck> k = {{true, 1024, 512, 1000}, {true, 1024, 512, 1000}, {true, 1024}};
  EXPECT_EQ(QuorumFrontier(k, 2, 1024, 1300), 1024u);
}

// Found by the simulator (seed 729): a node still filling a gap below the
// tail's block stored the tail register and acknowledged it; counted, it let
// the frontier reach the tail's data end, then it replaced the register with
// a later tail while the blocks carrying those bytes sat beyond its gap,
// where the next seal cut them. Such a node does not count for the tail.
TEST(Quorum, TailDoesNotCountOnANodeWhoseBlocksEndBelowIt) {
  std::vector<NodeAck> n = {{true, 3328, 0, 0}, {true, 2048, 2752, 2775}, {true, 2752, 2752, 2775}};
  EXPECT_EQ(QuorumFrontier(n, 2, 2752, 2775), 2752u);  // B = 2752, only node 3 counts for the tail
  n[1].durable = 2752;                                  // node 2 filled its gap
  EXPECT_EQ(QuorumFrontier(n, 2, 2752, 2775), 2775u);
}

TEST(Quorum, FrontierNeverExceedsWhatWNodesHold) {
  std::mt19937_64 rng(7);
  for (int it = 0; it < 2000; ++it) {
    std::vector<NodeAck> n(3);
    for (auto& a : n) { a.sealed = rng() % 4 != 0; a.durable = rng() % 5000; }
    const std::size_t w = 1 + rng() % 3;
    const Lsn f = QuorumFrontier(n, w, 0, 0);
    std::size_t holding = 0;
    for (auto& a : n) holding += a.sealed && a.durable >= f;
    if (f > 0) {
      EXPECT_GE(holding, w);
    }
  }
}

TEST(Quorum, StreamEpochIsTheNewestSealBelowTheEnd) {
  const std::vector<SealEntry> h = {{1, 0}, {2, 500}, {3, 500}, {5, 800}};
  EXPECT_EQ(StreamEpochAt(h, 0), 0u);
  EXPECT_EQ(StreamEpochAt(h, 1), 1u);
  EXPECT_EQ(StreamEpochAt(h, 500), 1u);  // sealed in epoch 2 but holds none of its bytes
  EXPECT_EQ(StreamEpochAt(h, 501), 3u);
  EXPECT_EQ(StreamEpochAt(h, 900), 5u);
  EXPECT_EQ(StreamEpochAt({}, 900), 0u);
}

TEST(Quorum, SourceIsNewestStreamEpochThenLongest) {
  std::vector<NodeState> s(3);
  s[0].history = {{1, 0}};
  s[0].durable = 1000;  // epoch 1's unacknowledged suffix
  s[1].history = {{1, 0}, {2, 500}};
  s[1].durable = 800;
  s[2].history = {{1, 0}, {2, 500}};
  s[2].durable = 600;
  EXPECT_EQ(*ChooseSource(s), 1u);
  EXPECT_FALSE(ChooseSource({}).has_value());
}

TEST(Quorum, ANodeSealedButNotFilledDoesNotWinRecovery) {
  // Epoch 2 sealed node 1 at 1000 and died before it filled; node 0 holds
  // epoch 1's acknowledged stream up to 1200.
  std::vector<NodeState> s(2);
  s[0].history = {{1, 0}};
  s[0].durable = 1200;
  s[1].history = {{1, 0}, {2, 1000}};
  s[1].durable = 300;
  EXPECT_EQ(*ChooseSource(s), 0u);
}

// Epoch 2 sealed nodes 1 and 2 at 1024 (node 0 was down) and its only
// acknowledged write was the tail (1024, 1300) on both. A takeover that
// hears from nodes 0 and 1 sees equal block streams (stream epoch 1, durable
// 1024); node 0 holds nothing of epoch 2, so its history cannot vouch for
// the tail. Node 1's tail (epoch 2, data end 1300) is beyond node 0's
// blocks: node 1 must win, and the tail with it.
TEST(Quorum, AnAcknowledgedTailBeyondAnotherNodesBlocksWinsRecovery) {
  std::vector<NodeState> s(2);
  s[0].history = {{1, 0}};
  s[0].durable = 1024;
  s[1].history = {{1, 0}, {2, 1024}};
  s[1].durable = 1024;
  s[1].tail = TailImage{2, 1024, 1300, std::string(512, 't')};
  ASSERT_EQ(*ChooseSource(s), 1u);
  EXPECT_EQ(ChooseTail(s, s[1].history, s[1].durable), s[1].tail);
  // The order in which nodes answered does not matter.
  std::swap(s[0], s[1]);
  EXPECT_EQ(*ChooseSource(s), 0u);
  // An older writer's tail at the same block is not beyond the newer one's.
  s[1].tail = TailImage{1, 1024, 1400, std::string(512, 'o')};
  EXPECT_EQ(*ChooseSource(s), 0u);
  // A tail the node's own history does not vouch for (its writer is not in
  // it) counts for nothing: that node ranks by its blocks alone.
  s[0].tail.epoch = 3;
  EXPECT_EQ(*ChooseSource(s), 1u);  // (1, 1400) beats the block stream (1, 1024)
  s[1].tail = TailImage{};
  EXPECT_EQ(*ChooseSource(s), 0u);  // equal block streams: the first
  // Complete blocks of the same epoch beyond the tail's data end win (the
  // completed block holds the tail's data).
  s[0].tail = TailImage{2, 1024, 1300, std::string(512, 't')};
  s[1].history = {{1, 0}, {2, 1024}};
  s[1].durable = 1536;
  EXPECT_EQ(*ChooseSource(s), 1u);
  // A tail not at the node's own block end (its blocks lag) counts for nothing.
  s[1].durable = 512;
  s[1].tail = TailImage{2, 1024, 1500, std::string(512, 'l')};
  EXPECT_EQ(*ChooseSource(s), 0u);
}

// Found by the simulator's soak (seed 586959091317). Writer 12 recovered
// epoch 9's stream up to 112128 without a tail and made it durable on W
// nodes before acknowledging; writer 11, dead in its Open, had sealed
// another node at 106496 and put a tail there. Node 0 holds all writer 12
// recovered but no byte of its own: its last byte is epoch 9's. It must
// rank as writer 12 (its whole recovered log is there), above epoch 11's
// tail, or [106496, 112128) is cut.
TEST(Quorum, ALogThatHoldsANewerWritersRecoveredLogRanksAsThatWriter) {
  std::vector<NodeState> s(2);
  s[0].history = {{9, 65536, 65536}, {12, 112128, 112128}};
  s[0].durable = 112128;
  s[1].history = {{9, 65536, 65536}, {11, 106496, 106900}};
  s[1].durable = 106496;
  s[1].tail = TailImage{11, 106496, 106900, std::string(512, 't')};
  EXPECT_EQ(RecoveredEpochAt(s[0].history, 112128), 12u);
  EXPECT_EQ(*ChooseSource(s), 0u);
  // Without recorded ends (a node_meta written before they were kept) the
  // old rank applies: epoch 9's stream loses to epoch 11's tail.
  s[0].history = {{9, 65536}, {12, 112128}};
  EXPECT_EQ(*ChooseSource(s), 1u);
}

// Why the seal LSN alone is not enough (the first attempt at the case
// above failed 11 of seeds 1..3000): writer 12 also recovered a tail beyond
// its seal LSN, which node 0 lacks and node 1 holds as blocks of the stream
// it was recovered from. Node 0 reached the seal LSN, not the recovered
// end: it ranks by its last byte, and the node holding the tail's bytes wins.
TEST(Quorum, ReachingASealLsnWithoutTheRecoveredTailIsNotEnough) {
  std::vector<NodeState> s(2);
  s[0].history = {{9, 0, 0}, {12, 1024, 1100}};  // recovered [0, 1024) + tail to 1100
  s[0].durable = 1024;
  s[1].history = {{9, 0, 0}};
  s[1].durable = 1536;  // epoch 9's blocks, the tail's bytes among them
  EXPECT_EQ(RecoveredEpochAt(s[0].history, 1024), 9u);
  EXPECT_EQ(*ChooseSource(s), 1u);
  // With the tail's bytes (re-put under 12), node 0 holds all of it.
  s[0].tail = TailImage{12, 1024, 1100, std::string(512, 'r')};
  EXPECT_EQ(*ChooseSource(s), 0u);
}

// Found by the simulator (seed 4489 while the seal learned to carry the
// tail). Node 0 held writer 10's recovered tail (block 11392, to 11405, the
// only copy it had of bytes writer 8 acknowledged) and was behind: writer
// 12, which had recovered from another node without writer 10 in its
// history, sealed it at 11456 and it kept the register. Its history no
// longer vouches for the register, but the seal did not cut below the
// register's block: the blocks below are still writer 10's stream, so the
// register is anchored and counts, and the recovery takes it.
TEST(Quorum, AnAnchoredRegisterCountsAfterADivergingSeal) {
  std::vector<NodeState> s(2);
  s[0].history = {{8, 10496, 10523}, {9, 11456, 11503}, {11, 11456, 11503}, {12, 11456, 11503}};
  s[0].durable = 11392;
  s[0].tail = TailImage{10, 11392, 11405, std::string(64, 'a')};
  s[0].tail_anchored = true;
  s[1].history = s[0].history;
  s[1].durable = 8384;
  ASSERT_EQ(*ChooseSource(s), 0u);
  EXPECT_EQ(CountedRegisterEpoch(s[0]), 10u);
  EXPECT_EQ(ChooseTail(s, s[0].history, 11392, CountedRegisterEpoch(s[0])), s[0].tail);
  EXPECT_FALSE(ChooseTail(s, s[0].history, 11392).valid());  // by the history alone it does not belong
  // Not anchored (a seal cut below its block): the register counts for nothing.
  s[0].tail_anchored = false;
  EXPECT_EQ(CountedRegisterEpoch(s[0]), 0u);
  // Anchored, but a newer writer's whole recovered log ends at the block
  // without it: that writer never had those bytes acknowledged, and the
  // log ranks as that writer, unextended.
  s[0].tail_anchored = true;
  s[0].history.push_back({13, 11392, 11392});
  EXPECT_EQ(CountedRegisterEpoch(s[0]), 0u);
}

TEST(Quorum, TailChoiceNewestEpochThenLongestAtTheEndOfTheSameStream) {
  const std::vector<SealEntry> h = {{1, 0}, {2, 512}};
  std::vector<NodeState> s(4);
  s[0].tail = TailImage{1, 1024, 1400, std::string(512, 'a')};  // epoch 1 wrote past epoch 2's seal: other stream
  s[1].tail = TailImage{2, 1024, 1100, std::string(512, 'b')};
  s[2].tail = TailImage{2, 512, 900, std::string(512, 'c')};    // not at the end
  s[3].tail = TailImage{3, 1024, 1500, std::string(512, 'd')};  // epoch 3 is not in this stream
  EXPECT_EQ(ChooseTail(s, h, 1024).image[0], 'b');
  EXPECT_FALSE(ChooseTail(s, h, 2048).valid());
  // Epoch 1's tail at 512 is still the stream's own (epoch 2 sealed at 512).
  s[2].tail = TailImage{1, 512, 600, std::string(512, 'e')};
  EXPECT_EQ(ChooseTail(s, h, 512).image[0], 'e');
}

TEST(Quorum, SealPointCutsWhereTheHistoriesDiverge) {
  const std::vector<SealEntry> h3 = {{1, 0}, {2, 500}, {3, 800}};
  // A node that saw epochs 1 and 2: its bytes past 800 are epoch 2's suffix.
  EXPECT_EQ(SealPoint({{1, 0}, {2, 500}}, 1000, h3), 800u);
  // A node of epoch 1 only: its bytes past 500 are epoch 1's unacknowledged suffix.
  EXPECT_EQ(SealPoint({{1, 0}}, 1000, h3), 500u);
  EXPECT_EQ(SealPoint({{1, 0}}, 300, h3), 300u);  // lagging: nothing to cut
  EXPECT_EQ(SealPoint({}, 50, h3), 0u);
  // A node sealed by an epoch (4) the new writer never heard of: cut at
  // that epoch's seal, since its bytes past it are not in the new stream.
  EXPECT_EQ(SealPoint({{1, 0}, {2, 500}, {4, 700}}, 1000, {{1, 0}, {2, 500}, {5, 900}}), 700u);
  // The new writer's own seal always bounds the cut.
  EXPECT_EQ(SealPoint({{1, 0}, {2, 500}}, 1000, {{1, 0}, {2, 500}, {3, 900}}), 900u);
}

// ---- rebuilding nodes (docs/design/logservice-node-rebuild.md) ----

NodeState Rebuilding(std::string id, Lsn durable = 0) {
  NodeState s;
  s.node_id = std::move(id);
  s.rebuilding = true;
  s.durable = durable;
  return s;
}
NodeState Member(std::string id, Lsn durable) {
  NodeState s;
  s.node_id = std::move(id);
  s.durable = durable;
  return s;
}

// The old bug: a node that lost its disk answered "I hold nothing" and the
// writer recovered the other answer's shorter log. It does not vote now.
TEST(Quorum, ARebuildingNodeDoesNotVoteInRecovery) {
  // Acknowledged up to 900 on the lost node and node 3; node 2 lags at 400.
  const std::vector<NodeState> lost_and_lagging = {Rebuilding("n1"), Member("n2", 400)};
  EXPECT_FALSE(RecoveryVoters(lost_and_lagging, 3, 2)) << "one member is not a read quorum";
  const std::vector<NodeState> all = {Rebuilding("n1"), Member("n2", 400), Member("n3", 900)};
  auto v = RecoveryVoters(all, 3, 2);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<std::size_t>{1, 2}));
  std::vector<NodeState> voters;
  for (std::size_t k : *v) voters.push_back(all[k]);
  EXPECT_EQ(voters[*ChooseSource(voters)].node_id, "n3");
}

TEST(Quorum, OnlyEveryNodeRebuildingIsANewCluster) {
  EXPECT_EQ(RecoveryVoters({Rebuilding("a"), Rebuilding("b"), Rebuilding("c")}, 3, 2),
            (std::vector<std::size_t>{0, 1, 2}));
  EXPECT_FALSE(RecoveryVoters({Rebuilding("a"), Rebuilding("b")}, 3, 2)) << "the third may hold the log";
  EXPECT_FALSE(RecoveryVoters({Rebuilding("a"), Rebuilding("b"), Member("c", 10)}, 3, 2))
      << "two lost disks: the survivor alone may lack acknowledged bytes";
  EXPECT_EQ(RecoveryVoters({Member("a", 5), Member("b", 7)}, 3, 2), (std::vector<std::size_t>{0, 1}));
}

// Every node rebuilding, but one of them was a member that moved its damaged
// log aside: acknowledged redo existed and may be only in that copy. Taking
// the cluster for a new one would start an empty log over it.
TEST(Quorum, AClusterWithALostMembersLogIsNotNew) {
  NodeState lost = Rebuilding("b");
  lost.was_member = true;
  EXPECT_FALSE(RecoveryVoters({Rebuilding("a"), lost, Rebuilding("c")}, 3, 2));
  EXPECT_FALSE(RecoveryVoters({lost, lost, lost}, 3, 2));
  NodeState member = Member("c", 10);
  member.was_member = true;
  EXPECT_EQ(RecoveryVoters({lost, Member("a", 10), member}, 3, 2), (std::vector<std::size_t>{1, 2}))
      << "with R members the lost log does not matter: they hold every acknowledged byte";
}

TEST(Quorum, ARebuildingNodeMustReachTheCertifyLsnInBlocksOrInItsTail) {
  EXPECT_TRUE(ReachesCertifyLsn(1000, {}, 5, 1000));
  EXPECT_FALSE(ReachesCertifyLsn(999, {}, 5, 1000));
  EXPECT_TRUE(ReachesCertifyLsn(512, TailImage{5, 512, 1000, std::string(512, 'x')}, 5, 1000));
  EXPECT_FALSE(ReachesCertifyLsn(512, TailImage{4, 512, 1000, std::string(512, 'x')}, 5, 1000))
      << "a register of another epoch is not the sealing writer's tail";
  EXPECT_FALSE(ReachesCertifyLsn(100, TailImage{5, 512, 1000, std::string(512, 'x')}, 5, 1000))
      << "a tail above a gap: the node drops it when the next tail comes";
  EXPECT_TRUE(ReachesCertifyLsn(0, {}, 1, 0)) << "a new cluster";
}

TEST(Quorum, ARebuildingNodeBecomesAMemberOnlyWhenEveryPeerAllowsIt) {
  NodeState b = Member("b", 0), c = Member("c", 0);
  b.promised_epoch = c.promised_epoch = 7;
  EXPECT_EQ(WhyNotMember(7, 7, 0, 2, {b, c}), "");
  EXPECT_EQ(WhyNotMember(0, 7, 0, 2, {b, c}), "not sealed by any writer");
  EXPECT_EQ(WhyNotMember(7, 7, 0, 2, {b}), "1 of 2 peers answered");
  c.promised_epoch = 9;  // a newer writer, whose promise we may have lost
  EXPECT_NE(WhyNotMember(7, 7, 0, 2, {b, c}).find("promised epoch 9"), std::string::npos);
  EXPECT_EQ(WhyNotMember(7, 9, 0, 2, {b, c}), "") << "a promise we hold ourselves is not forgotten";
  // Unless a peer holds that epoch for another writer: we may have promised
  // it to that writer before we lost our disk (seed 780223869627).
  c.writer_id = 33;
  EXPECT_NE(WhyNotMember(7, 9, 44, 2, {b, c}).find("promised our epoch 9 to another writer"), std::string::npos);
  EXPECT_EQ(WhyNotMember(7, 9, 33, 2, {b, c}), "");
  c.writer_id = 0;
  NodeState d = Rebuilding("d");
  d.promised_epoch = 7;
  d.seal_epoch = 0;  // never sealed: a new cluster must not get a lone member
  EXPECT_NE(WhyNotMember(7, 7, 0, 2, {b, d}).find("not sealed in epoch 7"), std::string::npos);
  d.seal_epoch = 7;
  EXPECT_EQ(WhyNotMember(7, 7, 0, 2, {b, d}), "");
}

}  // namespace
}  // namespace strata::logservice::repl
