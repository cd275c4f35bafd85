// Client-side helpers of the multi-process cluster tests; see the header.
#include "cluster_client_support.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <thread>

#include "rpc.h"

namespace strata::logservice::testing {

using std::chrono::milliseconds;

std::uint64_t ClusterTestSeed() {
  static const std::uint64_t seed = [] {
    const char* s = std::getenv("STRATA_TEST_SEED");
    const std::uint64_t v = s ? std::strtoull(s, nullptr, 10) : std::random_device{}();
    std::fprintf(stderr, "STRATA_TEST_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return seed;
}

client::ClusterConfig LocalClusterConfig(const LocalCluster& c) {
  client::ClusterConfig cfg;
  cfg.nodes = c.addresses();
  cfg.transport = client::TransportKind::kTcp;
  cfg.write_quorum = cfg.nodes.size() / 2 + 1;
  cfg.cluster_id = c.cluster_id();
  cfg.secret = c.secret();
  cfg.open_timeout = milliseconds(8000);
  cfg.op_timeout = milliseconds(2000);
  cfg.reconnect_interval = milliseconds(100);
  cfg.seed = ClusterTestSeed();
  return cfg;
}

std::string ReadRange(client::LogClient& lc, std::uint64_t from, std::uint64_t to) {
  std::string out;
  for (int failures = 0; from + out.size() < to && failures < 100;) {
    auto r = lc.Read(from + out.size(), to - from - out.size());
    if (!r.ok() || r->empty()) {
      ++failures;
      std::this_thread::sleep_for(milliseconds(20));
      continue;
    }
    out += *r;
  }
  return out;
}

void AppendBlocksDurable(client::LogClient& lc, int blocks) {
  constexpr std::size_t kBlock = 512;
  for (int i = 0; i < blocks; ++i) {
    const auto at = lc.stream_end();
    ASSERT_TRUE(lc.Append(at, RedoBytes(at, kBlock)).ok());
  }
  ASSERT_TRUE(lc.WaitDurable(lc.stream_end(), milliseconds(10000)).ok()) << lc.status().reason;
}

void ExpectCheckpointAndPageRoundTrips(client::LogClient& lc) {
  EXPECT_EQ(lc.ReadCheckpoint().status().code(), client::Code::kNotFound);
  ASSERT_TRUE(lc.WriteCheckpoint(4096, "meta-1").ok());
  auto ck = lc.ReadCheckpoint();
  ASSERT_TRUE(ck.ok());
  EXPECT_EQ(ck->lsn, 4096u);
  EXPECT_EQ(ck->metadata, "meta-1");

  ASSERT_TRUE(lc.PutPage(5, 7, 100, std::string(16384, 'a')).ok());
  ASSERT_TRUE(lc.PutPage(5, 7, 200, std::string(16384, 'b')).ok());
  auto pg = lc.GetPage(5, 7, 150);
  ASSERT_TRUE(pg.ok());
  EXPECT_EQ(pg->lsn, 100u);
  EXPECT_EQ(pg->image[0], 'a');
  EXPECT_EQ(lc.GetPage(5, 8, 150).status().code(), client::Code::kNotFound);
}

NodeProbe::NodeProbe(const LocalCluster& c) : c_(c) {
  auto t = rdma::Transport::Create(repl::ReplicationTransportOptions(c.cluster_id(), c.secret()));
  EXPECT_TRUE(t.ok());
  if (t.ok()) transport_ = std::move(*t);
}

std::optional<repl::NodeState> NodeProbe::State(int i) {
  repl::Frame q;
  q.type = wire::MsgType::kStatusReq;
  auto r = Call(i, q);
  if (!r || r->code != wire::ReplyCode::kOk) return std::nullopt;
  return r->state;
}

std::string NodeProbe::ReadFrom(int i, std::uint64_t from, std::uint64_t to) {
  std::string out;
  while (from + out.size() < to) {
    repl::Frame q;
    q.type = wire::MsgType::kReadReq;
    q.lsn = from + out.size();
    q.max_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(wire::kMaxReadBytes, to - q.lsn));
    auto r = Call(i, q);
    if (!r || r->code != wire::ReplyCode::kOk || r->ranges.empty()) break;
    for (const auto& range : r->ranges) {
      if (range.start != from + out.size()) return out;
      out += range.bytes;
    }
  }
  return out.substr(0, std::min<std::size_t>(out.size(), to - from));
}

std::optional<repl::Frame> NodeProbe::Call(int i, const repl::Frame& q) {
  if (!transport_) return std::nullopt;
  auto ch = repl::RpcChannel::Connect(*transport_, c_.address(i), nullptr, nullptr);
  if (!ch.ok()) return std::nullopt;
  auto r = (*ch)->Call(q, milliseconds(2000));
  if (!r.ok()) return std::nullopt;
  return std::move(*r);
}

int RunShell(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return WEXITSTATUS(pclose(p));
}

}  // namespace strata::logservice::testing
