// The main cluster test's assertions with the nodes in this process, once
// over TCP and once over rdma:// on the fake NIC (InProcessCluster): every
// replication message of the cluster then crosses the verbs engine, small
// ones as SEND into receive slots, large appends and catch-up reads as RDMA
// WRITE with immediate into the peer's bulk ring (send_path.h). The
// multi-process tests (cluster_test.cc) stay on TCP: the fake NIC is an
// in-process fabric.
//
// Over the fake NIC every test also fails on a buffer the verbs engine
// touched while the NIC owned it.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "codec.h"
#include "cluster_client_support.h"
#include "in_process_cluster.h"
#include "local_cluster.h"
#include "rpc.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using std::chrono::milliseconds;
using testing::InProcessCluster;
using testing::TestTransport;

// Allowed in every test over the fake NIC: each Transport created on it
// says so once at warning level (rdma/src/transport.cc), on purpose, so
// that a production log would show it.
const char* const kFakeNicNotice = "in-process fake NIC";

std::uint64_t Seed() {
  static const std::uint64_t seed = [] {
    const char* s = std::getenv("STRATA_TEST_SEED");
    std::uint64_t v = s ? std::strtoull(s, nullptr, 10) : std::random_device{}();
    std::fprintf(stderr, "STRATA_TEST_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

std::unique_ptr<LogClient> OpenOk(const client::ClusterConfig& cfg) {
  auto c = LogClient::Open(cfg);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

void AppendBlocks(LogClient& lc, int n, std::size_t size = 512) {
  for (int i = 0; i < n; ++i) {
    const auto at = lc.stream_end();
    ASSERT_TRUE(lc.Append(at, Bytes(at, size)).ok());
  }
}

std::string ReadAll(LogClient& lc, std::uint64_t from, std::uint64_t to) {
  std::string out;
  while (from + out.size() < to) {
    auto r = lc.Read(from + out.size(), to - from - out.size());
    if (!r.ok() || r->empty()) break;
    out += *r;
  }
  return out;
}

bool WaitNodeDurable(LogClient& lc, int i, std::uint64_t lsn, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = lc.status();
    if (s.nodes[i].sealed && s.nodes[i].durable >= lsn) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

// What `logservicectl status` asks each node (a StatusReq over its own
// Transport), on the cluster's transport.
Result<repl::NodeState> NodeStatus(InProcessCluster& c, int i) {
  auto net = c.NewNetwork();
  if (!net) return Status::IoError("no network");
  auto ch = repl::RpcChannel::Connect(*net, c.addresses()[i], {}, {});
  if (!ch.ok()) return ch.status();
  auto rep = (*ch)->Call(repl::Frame{}, milliseconds(3000));
  (*ch)->Close();
  if (!rep.ok()) return rep.status();
  return rep->state;
}

class InProcessClusterTest : public ::testing::TestWithParam<TestTransport> {
 protected:
  void TearDown() override {
    for (const auto& v : cluster_.violations()) ADD_FAILURE() << "fake NIC: " << v;
  }
  InProcessCluster cluster_{3, GetParam(), Seed()};
};

// cluster_test.cc's AppendReadCheckpointPagesStatusAndCleanShutdown, with
// the status read as logservicectl reads it and a Node::Stop for SIGTERM.
TEST_P(InProcessClusterTest, AppendReadCheckpointPagesStatusAndCleanShutdown) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  for (const auto& a : c.addresses())
    EXPECT_EQ(a.rfind(GetParam() == TestTransport::kTcp ? "tcp://" : "rdma://", 0), 0u) << a;
  auto cfg = c.Config();
  std::atomic<std::uint64_t> callback_max{0};
  std::atomic<int> regressions{0};
  cfg.on_durable = [&](std::uint64_t lsn) {
    if (lsn <= callback_max.load()) ++regressions;
    callback_max = lsn;
  };
  auto lc = OpenOk(cfg);
  ASSERT_TRUE(lc);
  EXPECT_EQ(lc->epoch(), 1u);
  EXPECT_EQ(lc->sealed_end(), 0u);
  AppendBlocks(*lc, 64);
  ASSERT_TRUE(lc->WaitDurable(64 * 512, milliseconds(5000)).ok());
  for (int i = 0; i < 200 && callback_max.load() < 64 * 512; ++i) std::this_thread::sleep_for(milliseconds(5));
  EXPECT_EQ(callback_max.load(), 64u * 512);
  EXPECT_EQ(regressions.load(), 0);
  EXPECT_EQ(ReadAll(*lc, 0, 64 * 512), Bytes(0, 64 * 512));  // one ReadResp of 32 KiB + headers: bulk
  EXPECT_EQ(ReadAll(*lc, 1000, 3000), Bytes(1000, 2000));

  ASSERT_NO_FATAL_FAILURE(testing::ExpectCheckpointAndPageRoundTrips(*lc));

  for (int i = 0; i < 3; ++i) {
    auto st = NodeStatus(c, i);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    EXPECT_EQ(st->durable, 32768u) << "node " << i;
    EXPECT_EQ(st->promised_epoch, 1u) << "node " << i;
  }

  lc.reset();
  for (int i = 0; i < 3; ++i) {
    c.Stop(i);
    EXPECT_NE(c.NodeLog(i).find("event=stopped durable=32768"), std::string::npos) << c.NodeLog(i);
  }
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

// Appends of up to 128 KiB (the client's chunk: AppendReq by SendBulk) while
// a node is down; the restarted node fills the gap from a peer (ReadReq,
// ReadResp of up to 1 MiB by SendBulk) and then holds everything alone.
TEST_P(InProcessClusterTest, LargeAppendsAndARestartedNodeCatchesUpThroughTheBulkPath) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto lc = OpenOk(c.Config());
  ASSERT_TRUE(lc);
  const std::size_t sizes[] = {512, 40000, 131072, 100, 65536};
  for (int round = 0; round < 20; ++round) {
    for (std::size_t size : sizes) AppendBlocks(*lc, 1, size);
    if (round == 5) c.Stop(2);
    ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok()) << lc->status().reason;
  }
  ASSERT_TRUE(c.Start(2));
  AppendBlocks(*lc, 2, 131072);
  ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok());
  const std::uint64_t acked = lc->stream_end();
  ASSERT_TRUE(WaitNodeDurable(*lc, 2, acked, milliseconds(15000))) << lc->status().reason << c.NodeLog(2);
  EXPECT_NE(c.NodeLog(2).find("event=gap_fill"), std::string::npos) << c.NodeLog(2);
  EXPECT_EQ(ReadAll(*lc, 0, acked), Bytes(0, acked));
  // Node 1 goes; a reader recovers everything from nodes 2 and 3 (the rebuilt one).
  lc.reset();
  c.Stop(0);
  auto ro = OpenOk(c.Config(client::OpenMode::kReadOnly));
  ASSERT_TRUE(ro);
  EXPECT_EQ(ro->sealed_end(), acked);
  EXPECT_EQ(ReadAll(*ro, 0, acked), Bytes(0, acked));
  ro.reset();
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, InProcessClusterTest,
                         ::testing::Values(TestTransport::kTcp, TestTransport::kFakeVerbs),
                         [](const ::testing::TestParamInfo<TestTransport>& p) { return testing::TestTransportName(p.param); });

}  // namespace
}  // namespace strata::logservice
