// The log service under the fake NIC's fault injection: a 3-node
// in-process cluster (InProcessCluster) over rdma:// on one FakeVerbsFabric
// whose NIC fails posts, completes requests with IBV_WC_RETRY_EXC_ERR or
// IBV_WC_REM_ACCESS_ERR, fails polls, moves queue pairs to the error state
// and drops links (rdma/include/strata/rdma/fake_verbs_fabric.h,
// FakeVerbsFaults), all drawn from one seed. Every fault closes a
// connection of a node or of the writer with a status naming what failed;
// the client reconnects, re-seals and resends, as it must on a real NIC.
//
// One seed, in phases:
//   1. generation 1 (a writer) appends blocks of 512 bytes to 128 KiB (the
//      large ones by SendBulk) while the faults fire; every durable LSN it is
//      told (on_durable, a WaitDurable that succeeds) is recorded; every
//      error it returns must be kUnavailable/kTimeout with a message, never
//      kFenced (nobody else writes) and never a hang (each wait is bounded);
//   2. the faults stop. Half the seeds let generation 1 finish (everything
//      durable, read back byte-exact through its own reconnected
//      connections); the others drop it while the faults still fire, as a
//      writer that crashes with sends in flight;
//   3. generation 2 opens (recovery: promise, read, seal): the recovered
//      log holds every LSN generation 1 was told durable, each byte as
//      generation 1 wrote it (bytes are derived from (seed, generation,
//      LSN), so a byte from the wrong writer or the wrong place shows);
//      generation 2 appends after it and reads the whole log back;
//   4. everything shuts down: no Transport left a region registered on the
//      fabric, and the NIC recorded no buffer the engine touched while the
//      NIC owned it.
//
// Seeds: kSeeds fixed ones in CI (one ctest test each); STRATA_TEST_SEED=<n>
// runs that seed alone (a failing test prints the line to use);
// STRATA_FAKE_NIC_FAULT_SEEDS=<n> runs n seeds from the first fixed one
// (a longer soak). Thread timing still varies between runs of one seed (the
// nodes, the client and the NIC run on their own threads); the seed fixes
// the NIC's fault decisions, the workload and the fault rates.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include "codec.h"
#include "in_process_cluster.h"
#include "rpc.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using std::chrono::milliseconds;
using testing::InProcessCluster;

constexpr std::uint64_t kFirstSeed = 3100;
constexpr int kSeeds = 20;

// The byte generation `gen` writes at `lsn` under `seed`: two generations
// never agree on a byte (the XOR constant differs), and a byte read from
// another LSN almost never matches.
char GenByte(std::uint64_t seed, int gen, std::uint64_t lsn) {
  const std::uint64_t x = (lsn + seed * 0x9E3779B97F4A7C15ull) * 2654435761u;
  return static_cast<char>((x >> 17) ^ (static_cast<std::uint64_t>(gen) * 0x55u));
}

std::string GenBytes(std::uint64_t seed, int gen, std::uint64_t from, std::size_t n) {
  std::string s(n, 0);
  for (std::size_t i = 0; i < n; ++i) s[i] = GenByte(seed, gen, from + i);
  return s;
}

// First offset where `got` differs from `want`, for a readable failure.
std::string FirstDifference(const std::string& got, const std::string& want, std::uint64_t base) {
  if (got.size() != want.size())
    return "read " + std::to_string(got.size()) + " bytes from " + std::to_string(base) + ", wanted " +
           std::to_string(want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) return "first wrong byte at LSN " + std::to_string(base + i);
  return "";
}

// The faults of one seed: every kind, each per-event rate drawn between
// 1/4000 and 1/250 (a few dozen events of a run fault), polls a hundred
// times rarer (busy polling makes them that much more frequent), and a
// budget so a high draw cannot keep every link down for the whole run.
rdma::FakeVerbsFabricOptions FabricFor(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto rate = [&] { return 1.0 / (250 << (rng() % 5)); };
  rdma::FakeVerbsFabricOptions o;
  o.seed = seed;
  o.faults.post_send_fails = rate();
  o.faults.post_recv_fails = rate();
  o.faults.poll_fails = rate() / 100;
  o.faults.error_completion = rate();
  o.faults.remote_access_error = rate();
  o.faults.qp_error = rate();
  o.faults.disconnect = rate();
  o.faults.max_faults = 40;
  o.faults.enabled = false;  // turned on once the cluster is up (phase 1)
  return o;
}

// Runs that take part: a soak count, one replayed seed, or the CI set.
std::vector<std::uint64_t> SeedsToRun() {
  if (const char* s = std::getenv("STRATA_TEST_SEED")) return {std::strtoull(s, nullptr, 10)};
  int n = kSeeds;
  if (const char* s = std::getenv("STRATA_FAKE_NIC_FAULT_SEEDS")) n = std::atoi(s);
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < n; ++i) seeds.push_back(kFirstSeed + i);
  return seeds;
}

// told = max(told, lsn), from the client's I/O thread and the test's.
void RaiseTo(std::atomic<std::uint64_t>& told, std::uint64_t lsn) {
  std::uint64_t cur = told.load();
  while (lsn > cur && !told.compare_exchange_weak(cur, lsn)) {
  }
}

// A status the client returned while faults fired: a node problem it could
// not hide within the wait, said in words. Anything else is a failure.
void ExpectClearError(const client::ClientStatus& st, const char* what) {
  EXPECT_TRUE(st.code() == Code::kUnavailable || st.code() == Code::kTimeout) << what << ": " << st.ToString();
  EXPECT_FALSE(st.message().empty()) << what << ": an error without a message";
}

// Reads [from, to) with bounded retries (a node may still be reconnecting).
std::string ReadRange(LogClient& lc, std::uint64_t from, std::uint64_t to) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(15000);
  while (from + out.size() < to && std::chrono::steady_clock::now() < deadline) {
    auto r = lc.Read(from + out.size(), to - from - out.size());
    if (!r.ok() || r->empty()) {
      std::this_thread::sleep_for(milliseconds(50));
      continue;
    }
    out += *r;
  }
  return out;
}

// The client's view of each node, and what it logged, for a failure message.
std::string Describe(const LogClient& lc, const std::string& client_log) {
  const client::ClusterStatus s = lc.status();
  std::string out = "client: stream_end " + std::to_string(s.stream_end) + " durable " + std::to_string(s.durable_lsn) +
                    " healthy " + std::to_string(s.healthy) + " reason '" + s.reason + "'\n";
  for (const auto& n : s.nodes)
    out += "  " + n.address + " connected=" + std::to_string(n.connected) + " sealed=" + std::to_string(n.sealed) +
           " durable=" + std::to_string(n.durable) + " last_error='" + n.last_error + "'\n";
  return out + "client log:\n" + client_log;
}

// The last lines each node logged.
std::string NodeLogs(const InProcessCluster& c) {
  std::string out;
  for (int i = 0; i < 3; ++i) {
    const std::string log = c.NodeLog(i);
    out += "node " + std::to_string(i + 1) + " log (tail):\n" + log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  }
  return out;
}

// Opens a client, retrying within a bound: with faults firing an Open can
// fail, and must then say why.
std::unique_ptr<LogClient> Open(const client::ClusterConfig& cfg, int attempts) {
  for (int i = 0; i < attempts; ++i) {
    auto c = LogClient::Open(cfg);
    if (c.ok()) return std::move(*c);
    ExpectClearError(c.status(), "Open");
  }
  return nullptr;
}

class FakeNicFaultTest : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(FakeNicFaultTest, DurableBytesSurviveFaultsAndRecovery) {
  const std::uint64_t seed = GetParam();
  // Printed first: a run that hangs until ctest's timeout still names it.
  std::fprintf(stderr, "fake NIC fault seed %llu (replay: STRATA_TEST_SEED=%llu)\n",
               static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  SCOPED_TRACE("replay with STRATA_TEST_SEED=" + std::to_string(seed));
  std::mt19937_64 rng(seed ^ 0xF00D);
  const bool gen1_finishes = rng() % 2 == 0;

  auto cluster = std::make_unique<InProcessCluster>(3, FabricFor(seed));
  const std::shared_ptr<rdma::FakeVerbsFabric> fabric = cluster->fabric();
  ASSERT_TRUE(cluster->StartAll()) << cluster->UnexpectedLogLines();

  // ---- phase 1: generation 1 appends while the NIC faults ----
  std::atomic<std::uint64_t> told_durable{0};
  std::mutex client_log_mu;
  std::string client_log;
  auto gen1_log = [&] {
    std::lock_guard<std::mutex> lock(client_log_mu);
    return client_log;
  };
  std::uint64_t gen1_end = 0;
  {
    auto cfg = cluster->Config();
    cfg.log = [&](std::string_view line) {
      std::lock_guard<std::mutex> lock(client_log_mu);
      client_log += std::string(line) + "\n";
    };
    cfg.on_durable = [&](std::uint64_t lsn) { RaiseTo(told_durable, lsn); };
    auto gen1 = Open(cfg, 1);
    ASSERT_TRUE(gen1) << "the first writer opens before any fault";
    fabric->SetFaultsEnabled(true);
    const std::size_t sizes[] = {512, 512, 4096, 40000, 131072, 512, 65536};
    // The last few appends are not waited for: a writer dropped after them
    // leaves them in flight.
    for (int i = 0; i < 124; ++i) {
      const std::uint64_t at = gen1->stream_end();
      const std::size_t size = sizes[rng() % std::size(sizes)];
      const auto st = gen1->Append(at, GenBytes(seed, 1, at, size), milliseconds(3000));
      if (!st.ok()) {
        ExpectClearError(st, "Append");
        continue;
      }
      if (i % 8 == 7 && i < 120) {
        const std::uint64_t end = gen1->stream_end();
        const auto waited = gen1->WaitDurable(end, milliseconds(3000));
        if (waited.ok()) {
          RaiseTo(told_durable, end);
        } else {
          ExpectClearError(waited, "WaitDurable");
        }
      }
    }
    gen1_end = gen1->stream_end();
    // ---- phase 2: the faults stop; generation 1 finishes or is dropped ----
    if (gen1_finishes) {
      fabric->SetFaultsEnabled(false);
      const auto st = gen1->WaitDurable(gen1_end, milliseconds(20000));
      ASSERT_TRUE(st.ok()) << "with the faults over the writer must reach its end: " << st.ToString()
                           << "\n" << Describe(*gen1, gen1_log()) << NodeLogs(*cluster);
      RaiseTo(told_durable, gen1_end);
      const std::string back = ReadRange(*gen1, 0, gen1_end);
      ASSERT_EQ(FirstDifference(back, GenBytes(seed, 1, 0, gen1_end), 0), "") << "generation 1 reads its log back";
    }
    gen1.reset();  // without gen1_finishes: with sends in flight and faults firing
    fabric->SetFaultsEnabled(false);
  }
  const std::uint64_t acked = told_durable.load();
  std::fprintf(stderr, "seed %llu: faults fired: %s; generation 1 wrote %llu bytes, %llu told durable (%s)\n",
               static_cast<unsigned long long>(seed), fabric->faults_fired().ToString().c_str(),
               static_cast<unsigned long long>(gen1_end), static_cast<unsigned long long>(acked),
               gen1_finishes ? "finished" : "dropped mid-fault");
  EXPECT_GT(fabric->faults_fired().total(), 0u) << "the seed's faults never fired: the run proved nothing";
  ASSERT_LE(acked, gen1_end);

  // ---- phase 3: generation 2 recovers, checks, appends ----
  {
    auto gen2 = Open(cluster->Config(), 3);
    ASSERT_TRUE(gen2) << "a writer opens once the faults are over";
    const std::uint64_t sealed = gen2->sealed_end();
    ASSERT_GE(sealed, acked) << "recovery lost bytes generation 1 was told were durable";
    ASSERT_LE(sealed, gen1_end) << "recovery found bytes nobody wrote";
    if (gen1_finishes) {
      EXPECT_EQ(sealed, gen1_end);
    }
    const std::string recovered = ReadRange(*gen2, 0, sealed);
    ASSERT_EQ(FirstDifference(recovered, GenBytes(seed, 1, 0, sealed), 0), "") << "recovered log, sealed at " << sealed;
    for (int i = 0; i < 8; ++i) {
      const std::uint64_t at = gen2->stream_end();
      ASSERT_TRUE(gen2->Append(at, GenBytes(seed, 2, at, i % 2 ? 512 : 40000), milliseconds(5000)).ok());
    }
    const std::uint64_t end = gen2->stream_end();
    const auto st = gen2->WaitDurable(end, milliseconds(10000));
    ASSERT_TRUE(st.ok()) << st.ToString() << " / " << gen2->status().reason;
    const std::string all = ReadRange(*gen2, 0, end);
    ASSERT_EQ(FirstDifference(all, GenBytes(seed, 1, 0, sealed) + GenBytes(seed, 2, sealed, end - sealed), 0), "")
        << "generation 2's log";
  }

  // ---- phase 4: shutdown leaves nothing registered, nothing violated ----
  for (int i = 0; i < 3; ++i) cluster->Stop(i);
  // Allowed: each Transport on the fake NIC says so once at warning level,
  // on purpose (rdma/src/transport.cc). Connections closed by the faults are
  // not on the list because the cluster already counts a peer's Closed or
  // IoError as routine, as logserviced does (in_process_cluster.cc).
  EXPECT_EQ(cluster->UnexpectedLogLines({"in-process fake NIC"}), "");
  cluster.reset();
  for (const auto& v : fabric->violations()) ADD_FAILURE() << "fake NIC: " << v;
  EXPECT_EQ(fabric->registered_bytes(), 0u) << "a queue pair outlived every Transport";
}

// What seed 3127 found (one run in about fifty): a node's acknowledgements
// of the last appends were lost with its connection (the link dropped after
// the node synced them); the client reconnected and resealed it, and the
// seal reply said the node held everything, but the client only recomputed
// its durable frontier on an AppendResp or StatusResp. With nothing more
// appended, neither came again (the node was neither lagging nor silent by
// the client's own numbers), and WaitDurable timed out with three healthy
// nodes that all held the bytes. Here the same, without chance: a Network
// that swallows every AppendResp and StatusResp while the nodes sync, then
// drops the connections.
class AckDroppingNetwork final : public Network {
 public:
  explicit AckDroppingNetwork(std::shared_ptr<Network> inner) : inner_(std::move(inner)) {}
  Runtime& runtime() override { return inner_->runtime(); }
  rdma::Result<std::unique_ptr<rdma::Listener>> Listen(std::string_view address, rdma::AcceptHandler on_accept) override {
    return inner_->Listen(address, std::move(on_accept));
  }
  rdma::Result<std::shared_ptr<rdma::Connection>> Connect(std::string_view address,
                                                          rdma::ConnectionHandlers handlers) override {
    auto deliver = std::move(handlers.on_message);
    handlers.on_message = [this, deliver](rdma::Connection& c, const rdma::Message& m) {
      repl::Frame f;
      if (dropping_ && repl::Decode(m.payload(), &f).ok() &&
          (f.type == wire::MsgType::kAppendResp || f.type == wire::MsgType::kStatusResp))
        return;
      if (deliver) deliver(c, m);
    };
    auto conn = inner_->Connect(address, std::move(handlers));
    if (conn.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      conns_.push_back(conn.value());
    }
    return conn;
  }
  void set_dropping(bool on) { dropping_ = on; }
  void CloseAll() {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& w : conns_)
      if (auto c = w.lock()) c->Close();
    conns_.clear();
  }

 private:
  std::shared_ptr<Network> inner_;
  std::atomic<bool> dropping_{false};
  std::mutex mu_;
  std::vector<std::weak_ptr<rdma::Connection>> conns_;
};

// A node's durable end as `logservicectl status` reads it.
std::uint64_t NodeDurable(InProcessCluster& c, int i) {
  auto net = c.NewNetwork();
  auto ch = repl::RpcChannel::Connect(*net, c.addresses()[i], {}, {});
  if (!ch.ok()) return 0;
  auto rep = (*ch)->Call(repl::Frame{}, milliseconds(3000));
  (*ch)->Close();
  return rep.ok() ? rep->state.durable : 0;
}

TEST(FakeNicFaultRegression, DurabilityASealReplyReportsReachesWaitDurable) {
  InProcessCluster c(3, rdma::FakeVerbsFabricOptions{});
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto cfg = c.Config();
  auto net = std::make_shared<AckDroppingNetwork>(cfg.network);
  cfg.network = net;
  auto lc = Open(cfg, 1);
  ASSERT_TRUE(lc);
  ASSERT_TRUE(lc->Append(0, GenBytes(1, 1, 0, 4096)).ok());
  ASSERT_TRUE(lc->WaitDurable(4096, milliseconds(5000)).ok());
  net->set_dropping(true);
  ASSERT_TRUE(lc->Append(4096, GenBytes(1, 1, 4096, 4096)).ok());
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(10000);
  for (int i = 0; i < 3; ++i)
    while (NodeDurable(c, i) < 8192) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "node " << i + 1 << " never synced the append";
      std::this_thread::sleep_for(milliseconds(10));
    }
  EXPECT_EQ(lc->durable_lsn(), 4096u) << "the acknowledgements were swallowed";
  net->set_dropping(false);
  net->CloseAll();  // the client reconnects and reseals every node
  const auto st = lc->WaitDurable(8192, milliseconds(5000));
  EXPECT_TRUE(st.ok()) << st.ToString() << "\n" << Describe(*lc, "");
  lc.reset();
}

INSTANTIATE_TEST_SUITE_P(Seeds, FakeNicFaultTest, ::testing::ValuesIn(SeedsToRun()),
                         [](const ::testing::TestParamInfo<std::uint64_t>& p) { return std::to_string(p.param); });

}  // namespace
}  // namespace strata::logservice
