// A node that lost its whole storage (docs/design/logservice-node-rebuild.md),
// with 3 real logserviced processes on loopback: it must not vote the log
// shorter in a recovery, it must rebuild from a peer although the peers
// released the log below their checkpoint, and once rebuilt it must count
// and serve as any member. Every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

#include "codec.h"
#include "cluster_client_support.h"
#include "local_cluster.h"
#include "rpc.h"
#include "strata/logservice/client.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice {
namespace {

using client::ClusterConfig;
using client::Code;
using client::LogClient;
using repl::Frame;
using std::chrono::milliseconds;
using testing::AppendBlocksDurable;
using testing::LocalCluster;
using testing::NodeProbe;
using testing::ReadRange;
using wire::MsgType;
using wire::ReplyCode;

constexpr std::size_t kBlock = 512;

ClusterConfig Config(const LocalCluster& c, milliseconds open_timeout = milliseconds(8000)) {
  ClusterConfig cfg = testing::LocalClusterConfig(c);
  cfg.open_timeout = open_timeout;
  return cfg;
}

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

// Wipes node i's whole data directory (the disk was replaced) and restarts it.
void WipeAndRestart(LocalCluster& c, int i) {
  c.Kill(i);
  std::error_code ec;
  std::filesystem::remove_all(c.root() + "/n" + std::to_string(i + 1), ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(c.Start(i));
}

// Until node i is a member holding the same log range as node `peer` (bounded).
bool WaitRebuilt(NodeProbe& p, int i, int peer, milliseconds timeout, std::string* last) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = p.State(i);
    auto q = p.State(peer);
    if (s && q) {
      *last = "node " + std::to_string(i + 1) + ": released " + std::to_string(s->released) + " durable " +
              std::to_string(s->durable) + " rebuilding " + std::to_string(s->rebuilding) + "; node " +
              std::to_string(peer + 1) + ": released " + std::to_string(q->released) + " durable " +
              std::to_string(q->durable);
      if (!s->rebuilding && s->released == q->released && s->durable == q->durable && s->durable > 0) return true;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

// The scenario: commit, checkpoint and release below it on the
// nodes, commit more (and a tail), the writer dies, one node's storage is
// deleted and the node restarted. The next writer recovers every
// acknowledged byte, the emptied node rebuilds from a peer starting at the
// peer's released LSN (it cannot start at 0: that is gone everywhere) and
// becomes a member; then with a different node down, the rebuilt node and
// the third recover, serve and acknowledge everything.
TEST(Rebuild, WipedNodeRebuildsFromThePeersReleasedStartAndServes) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  NodeProbe probe(c);
  std::uint64_t ckpt = 0, acked = 0;
  {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    LogClient& w = **lc;
    AppendBlocksDurable(w, 128);
    ckpt = w.stream_end() / 2;
    ASSERT_TRUE(w.WriteCheckpoint(ckpt, "ckpt-meta").ok());
    ASSERT_TRUE(w.Release(ckpt).ok());
    AppendBlocksDurable(w, 64);
    const auto at = w.stream_end();
    std::string image = Bytes(at, 100);
    image.resize(kBlock, '\0');
    ASSERT_TRUE(w.PutTail(at, image, at + 100).ok());
    ASSERT_TRUE(w.WaitDurable(at + 100, milliseconds(10000)).ok()) << w.status().reason;
    acked = w.durable_lsn();
  }  // the writer dies (nothing more is sent)
  for (int i = 0; i < 3; ++i) {
    auto s = probe.State(i);
    ASSERT_TRUE(s);
    ASSERT_EQ(s->released, ckpt) << "node " << i + 1 << " did not release below the checkpoint";
  }

  WipeAndRestart(c, 1);
  {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    LogClient& w = **lc;
    ASSERT_GE(w.sealed_end(), acked);
    auto cp = w.ReadCheckpoint();
    ASSERT_TRUE(cp.ok()) << cp.status().ToString();
    EXPECT_EQ(cp->lsn, ckpt);
    EXPECT_EQ(cp->metadata, "ckpt-meta");
    EXPECT_EQ(ReadRange(w, ckpt, acked), Bytes(ckpt, acked - ckpt));
    std::string why;
    ASSERT_TRUE(WaitRebuilt(probe, 1, 0, milliseconds(15000), &why)) << why;
    ASSERT_TRUE(WaitRebuilt(probe, 1, 2, milliseconds(5000), &why)) << why;
    // Everything it holds is the log, byte for byte, from the peers' start.
    auto s = probe.State(1);
    ASSERT_TRUE(s);
    EXPECT_EQ(probe.ReadFrom(1, s->released, s->durable), Bytes(s->released, s->durable - s->released));
  }

  // A different node down: the rebuilt node and node 3 are a full quorum.
  c.Kill(0);
  {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    LogClient& w = **lc;
    ASSERT_GE(w.sealed_end(), acked);
    EXPECT_EQ(ReadRange(w, ckpt, w.sealed_end()), Bytes(ckpt, w.sealed_end() - ckpt));
    auto s = probe.State(1);
    ASSERT_TRUE(s);
    EXPECT_FALSE(s->rebuilding);
    EXPECT_EQ(probe.ReadFrom(1, ckpt, s->durable), Bytes(ckpt, s->durable - ckpt));
    auto cp = w.ReadCheckpoint();
    ASSERT_TRUE(cp.ok()) << cp.status().ToString();
    EXPECT_EQ(cp->lsn, ckpt);
    // And it acknowledges: with node 1 down, nothing is durable without it.
    AppendBlocksDurable(w, 8);
    EXPECT_EQ(ReadRange(w, ckpt, w.stream_end()), Bytes(ckpt, w.stream_end() - ckpt));
  }
  // Allowed: kill -9 can stop a node between the writes of one record.
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

// The old bug: acknowledged bytes lived on nodes 1 and 3 (node 2 was down);
// node 1 then lost its storage and node 3 went down. A writer that hears
// only nodes 1 and 2 must not recover node 2's shorter log: node 1's "I
// hold nothing" is not a vote. It waits for node 3, and then recovers
// everything.
TEST(Rebuild, AWipedNodeDoesNotVoteARecoveryShorter) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  std::uint64_t acked = 0;
  {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    LogClient& w = **lc;
    AppendBlocksDurable(w, 16);
    c.Kill(1);
    AppendBlocksDurable(w, 64);  // on nodes 1 and 3 only
    acked = w.durable_lsn();
  }
  WipeAndRestart(c, 0);
  c.Kill(2);
  ASSERT_TRUE(c.Start(1));
  {
    auto lc = LogClient::Open(Config(c, milliseconds(3000)));
    ASSERT_FALSE(lc.ok()) << "recovered " << (*lc)->sealed_end() << " of " << acked
                          << " acknowledged bytes from a wiped node and a lagging one";
    EXPECT_EQ(lc.status().code(), Code::kUnavailable) << lc.status().ToString();
    EXPECT_NE(lc.status().message().find("rebuilding"), std::string::npos) << lc.status().ToString();
  }
  ASSERT_TRUE(c.Start(2));
  auto lc = LogClient::Open(Config(c));
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  ASSERT_GE((*lc)->sealed_end(), acked);
  EXPECT_EQ(ReadRange(**lc, 0, (*lc)->sealed_end()), Bytes(0, (*lc)->sealed_end()));
  NodeProbe probe(c);
  std::string why;
  EXPECT_TRUE(WaitRebuilt(probe, 0, 2, milliseconds(15000), &why)) << why;
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

// The repair for a damaged log that Open refuses (docs/logservice-storage.md,
// "Healing"): move the node's redo directory aside. The node keeps its
// node_meta (its promises), and must still not count as holding its log.
TEST(Rebuild, ANodeThatLostOnlyItsLogRebuildsToo) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  std::uint64_t acked = 0;
  {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    AppendBlocksDurable(**lc, 32);
    acked = (*lc)->durable_lsn();
  }
  c.Kill(0);
  std::error_code ec;
  std::filesystem::rename(c.root() + "/n1/redo", c.root() + "/n1/redo.damaged", ec);
  ASSERT_FALSE(ec) << ec.message();
  ASSERT_TRUE(c.Start(0));
  NodeProbe probe(c);
  auto s = probe.State(0);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->rebuilding);
  EXPECT_GT(s->promised_epoch, 0u) << "its promises are kept";
  auto lc = LogClient::Open(Config(c));
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  ASSERT_GE((*lc)->sealed_end(), acked);
  std::string why;
  EXPECT_TRUE(WaitRebuilt(probe, 0, 1, milliseconds(15000), &why)) << why;
  EXPECT_EQ(probe.ReadFrom(0, 0, acked), Bytes(0, acked));
  // Expected: the node says once that it found node_meta without a log.
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail", "event=log_lost"}), "");
}

}  // namespace
}  // namespace strata::logservice
