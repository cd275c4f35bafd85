// Multi-process fault tests beyond the basic scenarios: protocol-level
// fencing and persisted promises, malformed input, a stalled (SIGSTOPped)
// node, backpressure, and a seeded randomized crash/restart workload.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>

#include "codec.h"
#include "cluster_client_support.h"
#include "local_cluster.h"
#include "rpc.h"
#include "strata/logservice/client.h"
#include "storage/log_store.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using repl::Frame;
using std::chrono::milliseconds;
using testing::LocalCluster;
using testing::ReadRange;
using wire::MsgType;
using wire::ReplyCode;

client::ClusterConfig Config(const LocalCluster& c) { return testing::LocalClusterConfig(c); }

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

std::shared_ptr<repl::RpcChannel> Channel(rdma::Transport& t, const std::string& addr) {
  auto ch = repl::RpcChannel::Connect(t, addr, nullptr, nullptr);
  EXPECT_TRUE(ch.ok()) << ch.status().ToString();
  return ch.ok() ? *ch : nullptr;
}

Frame Promise(std::uint64_t epoch, std::uint64_t writer) {
  Frame f;
  f.type = MsgType::kPromiseReq;
  f.epoch = epoch;
  f.writer_id = writer;
  return f;
}

TEST(NodeProtocol, PromisesAreDurableAndStaleEpochsRefused) {
  LocalCluster c(1);
  ASSERT_TRUE(c.StartAll());
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(c.cluster_id(), c.secret()));
  ASSERT_TRUE(t.ok());
  {
    auto ch = Channel(**t, c.address(0));
    ASSERT_TRUE(ch);
    auto r = ch->Call(Promise(5, 11), milliseconds(3000));
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->code, ReplyCode::kOk);
    EXPECT_EQ(r->state.promised_epoch, 5u);
    EXPECT_EQ(ch->Call(Promise(5, 11), milliseconds(3000))->code, ReplyCode::kOk);  // idempotent
    EXPECT_EQ(ch->Call(Promise(5, 12), milliseconds(3000))->code, ReplyCode::kStaleEpoch);  // same epoch, other writer
    EXPECT_EQ(ch->Call(Promise(4, 11), milliseconds(3000))->code, ReplyCode::kStaleEpoch);
    Frame a;
    a.type = MsgType::kAppendReq;
    a.epoch = 5;
    a.lsn = 0;
    a.data = "abc";
    EXPECT_EQ(ch->Call(a, milliseconds(3000))->code, ReplyCode::kNotSealed);  // promised, not sealed
    a.epoch = 3;
    EXPECT_EQ(ch->Call(a, milliseconds(3000))->code, ReplyCode::kStaleEpoch);
  }
  c.Kill(0);  // kill -9: the promise was fsync'ed before it was acknowledged
  ASSERT_TRUE(c.Start(0));
  auto ch = Channel(**t, c.address(0));
  ASSERT_TRUE(ch);
  auto r = ch->Call(Promise(4, 11), milliseconds(3000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->code, ReplyCode::kStaleEpoch);
  EXPECT_EQ(r->state.promised_epoch, 5u);
  EXPECT_NE(r->error.find("promised epoch 5"), std::string::npos) << r->error;
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

TEST(NodeProtocol, MalformedMessageClosesThatConnectionWithALoggedReason) {
  LocalCluster c(1);
  ASSERT_TRUE(c.StartAll());
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(c.cluster_id(), c.secret()));
  ASSERT_TRUE(t.ok());
  std::atomic<bool> closed{false};
  rdma::ConnectionHandlers h;
  h.on_message = [](rdma::Connection&, const rdma::Message&) {};
  h.on_close = [&](rdma::Connection&, const rdma::Status&) { closed = true; };
  auto conn = (*t)->Connect(c.address(0), h);
  ASSERT_TRUE(conn.ok());
  std::string garbage = repl::Encode(Promise(1, 1));
  garbage[wire::kVersionOffset] = 9;
  ASSERT_TRUE((*conn)->Send(std::as_bytes(std::span(garbage.data(), garbage.size())), {}, milliseconds(1000)).ok());
  for (int i = 0; i < 300 && !closed; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_TRUE(closed.load());
  EXPECT_NE(c.Log(0).find("event=bad_message"), std::string::npos) << c.Log(0);
  EXPECT_NE(c.Log(0).find("unsupported replication protocol version 9"), std::string::npos) << c.Log(0);
  // The node still serves well-formed peers, and nothing was stored.
  auto ch = Channel(**t, c.address(0));
  ASSERT_TRUE(ch);
  auto r = ch->Call(Frame{}, milliseconds(3000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state.promised_epoch, 0u);
  // Allowed: the test sends a version-9 message.
  EXPECT_EQ(c.UnexpectedLogLines({"event=bad_message"}), "");
}

TEST(Cluster, StalledNodeDoesNotBlockTheQuorumAndCatchesUp) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto lc = LogClient::Open(Config(c));
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  LogClient& w = **lc;
  c.Pause(2);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 50; ++i) {
    const auto at = w.stream_end();
    ASSERT_TRUE(w.Append(at, Bytes(at, 4096)).ok());
    ASSERT_TRUE(w.WaitDurable(at + 4096, milliseconds(5000)).ok()) << w.status().reason;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // The silent node is reported once the transport's keepalive gives up.
  bool reported = false;
  for (int i = 0; i < 300 && !reported; ++i) {  // keepalive_timeout is 5 s
    reported = w.status().reason.find("node3") != std::string::npos;
    if (!reported) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(reported) << w.status().reason;
  c.Resume(2);
  const auto end = w.stream_end();
  bool caught_up = false;
  for (int i = 0; i < 200 && !caught_up; ++i) {
    auto s = w.status();
    caught_up = s.nodes[2].sealed && s.nodes[2].durable >= end;
    if (!caught_up) std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_TRUE(caught_up) << w.status().reason;
  // Allowed: SIGSTOP: node3 finds its peers/clients silent, peers time it out.
  EXPECT_EQ(c.UnexpectedLogLines({"Timeout: peer silent"}), "");
}

TEST(Cluster, BackpressureBoundsInFlightBytes) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto cfg = Config(c);
  cfg.max_inflight_bytes = 64 << 10;
  auto lc = LogClient::Open(cfg);
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  LogClient& w = **lc;
  c.Kill(1);
  c.Kill(2);
  for (int i = 0; i < 16; ++i) ASSERT_TRUE(w.Append(w.stream_end(), Bytes(w.stream_end(), 4096), milliseconds(100)).ok());
  auto s = w.Append(w.stream_end(), Bytes(w.stream_end(), 4096), milliseconds(300));
  EXPECT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("in-flight window full"), std::string::npos) << s.message();
  EXPECT_EQ(w.stream_end(), 64u << 10);  // the refused append left no trace
  ASSERT_TRUE(c.Start(2));
  ASSERT_TRUE(w.Append(w.stream_end(), Bytes(w.stream_end(), 4096), milliseconds(10000)).ok()) << w.status().reason;
  ASSERT_TRUE(w.WaitDurable(w.stream_end(), milliseconds(10000)).ok());
  EXPECT_EQ(ReadRange(w, 0, w.stream_end()), Bytes(0, w.stream_end()));
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

// A node whose disk fills stops acknowledging instead of lying: node3 runs
// with a 512 KiB disk budget (disk_limit_bytes: writes past it fail with
// ENOSPC exactly as on a full disk). The quorum (node1, node2) keeps
// acknowledging; node3's reported durable LSN stops below its budget and
// everything below it really is on its disk (checked by opening its log
// after a kill -9). With node1 down too, only one healthy node is left:
// nothing more is acknowledged and the client says why (node3's store error,
// "No space left on device"). Restarted with room, node3 catches up.
TEST(Cluster, DiskFullNodeStopsAcknowledgingRatherThanLying) {
  LocalCluster c(3);
  const std::uint64_t budget = 512 << 10;
  c.SetExtraArgs(2, {"--disk_limit_bytes=" + std::to_string(budget)});
  ASSERT_TRUE(c.StartAll());
  // Every 4 KiB append its own request, so node3's disk fills exactly and
  // every later append fails on it. Coalesced (the client's batching), a
  // request of up to 128 KiB fails where the next 4 KiB one still fits:
  // node3 then takes the last append below (written, not durable behind
  // its unfillable gap), answers OK, and the client's reason names only
  // node1 (a timeout, not "unavailable"); durability is the same.
  client::ClusterConfig cfg = Config(c);
  cfg.node_requests_in_flight = 0;
  auto lc = LogClient::Open(cfg);
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  LogClient& w = **lc;
  // 2 MiB, four times node3's budget, all acknowledged by node1 + node2.
  for (int i = 0; i < 512; ++i) {
    const auto at = w.stream_end();
    ASSERT_TRUE(w.Append(at, Bytes(at, 4096)).ok());
    if (i % 32 == 31) {
      ASSERT_TRUE(w.WaitDurable(at + 4096, milliseconds(10000)).ok()) << w.status().reason;
    }
  }
  const auto acked = w.stream_end();
  ASSERT_TRUE(w.WaitDurable(acked, milliseconds(10000)).ok()) << w.status().reason;
  // node3 reports the failure and never a durable LSN past what fits.
  bool reported = false;
  for (int i = 0; i < 200 && !reported; ++i) {
    reported = w.status().nodes[2].last_error.find("No space left") != std::string::npos;
    if (!reported) std::this_thread::sleep_for(milliseconds(25));
  }
  ASSERT_TRUE(reported) << w.status().reason;
  const std::uint64_t claimed = w.status().nodes[2].durable;
  EXPECT_LT(claimed, budget);
  EXPECT_NE(c.Log(2).find("No space left on device"), std::string::npos);
  // kill 2 of 3 healthy: node1 down, node3 full. No acknowledgement, and why.
  c.Kill(0);
  const auto at = w.stream_end();
  ASSERT_TRUE(w.Append(at, Bytes(at, 4096)).ok());
  auto s = w.WaitDurable(at + 4096, milliseconds(1500));
  ASSERT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("No space left"), std::string::npos) << s.message();
  EXPECT_LT(w.durable_lsn(), at + 4096);
  // What node3 claimed is on its disk: kill -9 it and read its log directly.
  c.Kill(2);
  {
    auto store = LogStore::Open(PosixFileSystem(), c.root() + "/n3/redo", LogStoreOptions{});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_GE((*store)->frontier().durable_lsn, claimed);
    std::string got;
    while (got.size() < claimed) {
      auto r = (*store)->Read(got.size(), claimed - got.size());
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      if (r->empty()) break;
      for (const auto& range : *r) got += range.bytes;
    }
    ASSERT_GE(got.size(), claimed);
    EXPECT_EQ(got.substr(0, claimed), Bytes(0, claimed));
  }
  // Room again (no budget) and node1 back: the stuck append completes and
  // node3 catches up to the stream end from its peers.
  c.SetExtraArgs(2, {});
  ASSERT_TRUE(c.Start(0));
  ASSERT_TRUE(c.Start(2));
  ASSERT_TRUE(w.WaitDurable(at + 4096, milliseconds(10000)).ok()) << w.status().reason;
  bool caught_up = false;
  for (int i = 0; i < 400 && !caught_up; ++i) {
    auto st = w.status();
    caught_up = st.nodes[2].sealed && st.nodes[2].durable >= at + 4096;
    if (!caught_up) std::this_thread::sleep_for(milliseconds(25));
  }
  EXPECT_TRUE(caught_up) << w.status().reason;
  EXPECT_EQ(ReadRange(w, 0, w.stream_end()), Bytes(0, w.stream_end()));
  // Allowed: node3's ENOSPC store errors are what this test provokes; kill -9
  // can leave a torn unacknowledged record that recovery cuts.
  EXPECT_EQ(c.UnexpectedLogLines({"No space left on device", "recovery: cutting torn tail"}), "");
}

// Seeded workload: several writer generations; in each, a random node is
// killed and restarted mid-stream and the writer itself dies at a random
// point without waiting. Every acknowledged byte must survive, and the log
// must always equal the deterministic content (no stale suffix resurfaces).
TEST(Cluster, RandomizedCrashesNeverLoseAcknowledgedBytes) {
  std::mt19937_64 rng(testing::ClusterTestSeed());
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  std::uint64_t acked = 0;
  for (int gen = 0; gen < 4; ++gen) {
    auto lc = LogClient::Open(Config(c));
    ASSERT_TRUE(lc.ok()) << "generation " << gen << ": " << lc.status().ToString();
    LogClient& w = **lc;
    ASSERT_GE(w.sealed_end(), acked) << "generation " << gen;
    ASSERT_EQ(ReadRange(w, 0, w.sealed_end()), Bytes(0, w.sealed_end())) << "generation " << gen;
    const int victim = static_cast<int>(rng() % 3);
    const int kill_at = 5 + static_cast<int>(rng() % 20), restart_at = kill_at + 5 + static_cast<int>(rng() % 10);
    const int rounds = restart_at + 5 + static_cast<int>(rng() % 10);
    for (int r = 0; r < rounds; ++r) {
      if (r == kill_at) c.Kill(victim);
      if (r == restart_at) {
        ASSERT_TRUE(c.Start(victim));
      }
      const auto at = w.stream_end();
      const std::size_t n = 1 + rng() % 20000;
      ASSERT_TRUE(w.Append(at, Bytes(at, n)).ok());
      if (rng() % 2) {
        ASSERT_TRUE(w.WaitDurable(at + n, milliseconds(5000)).ok()) << w.status().reason;
      }
      acked = std::max(acked, w.durable_lsn());
    }
    acked = std::max(acked, w.durable_lsn());
  }  // each generation's writer dies with appends in flight
  auto lc = LogClient::Open(Config(c));
  ASSERT_TRUE(lc.ok());
  EXPECT_GE((*lc)->sealed_end(), acked);
  EXPECT_EQ(ReadRange(**lc, 0, (*lc)->sealed_end()), Bytes(0, (*lc)->sealed_end()));
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

}  // namespace
}  // namespace strata::logservice
