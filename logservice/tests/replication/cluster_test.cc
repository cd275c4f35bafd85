// Multi-process tests: 3 real logserviced processes on loopback, the client
// library as writer/reader, kill -9 / restart / SIGTERM. Every wait is
// bounded; ports are picked by the kernel (port 0) and reused on restart.
#include <gtest/gtest.h>

#include <sstream>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cluster_client_support.h"
#include "local_cluster.h"
#include "strata/logservice/client.h"

namespace strata::logservice {
namespace {

using client::ClusterConfig;
using client::Code;
using client::LogClient;
using std::chrono::milliseconds;
using testing::LocalCluster;
using testing::ReadRange;

ClusterConfig Config(const LocalCluster& c, client::OpenMode mode = client::OpenMode::kWriter) {
  ClusterConfig cfg = testing::LocalClusterConfig(c);
  cfg.mode = mode;
  return cfg;
}

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

std::unique_ptr<LogClient> OpenOk(const ClusterConfig& cfg) {
  auto c = LogClient::Open(cfg);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// Appends n blocks of 512 bytes at the stream end.
void AppendBlocks(LogClient& lc, int n) {
  for (int i = 0; i < n; ++i) {
    const auto at = lc.stream_end();
    ASSERT_TRUE(lc.Append(at, Bytes(at, 512)).ok());
  }
}

// Waits until the writer sees node i durable at >= lsn (bounded).
bool WaitNodeDurable(LogClient& lc, int i, std::uint64_t lsn, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    auto s = lc.status();
    if (s.nodes[i].sealed && s.nodes[i].durable >= lsn) return true;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return false;
}

int RunCtl(const LocalCluster& c, std::string* out) {
  std::string nodes;
  for (const auto& a : c.addresses()) nodes += (nodes.empty() ? "" : ",") + a;
  const std::string cmd = std::string(LOGSERVICECTL_PATH) + " status --nodes=" + nodes +
                          " --cluster_id=" + c.cluster_id() + " --secret_file=" + c.secret_file() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return WEXITSTATUS(pclose(p));
}


// The number after "key=" in a logservicectl line (~0 if absent).
std::uint64_t Field(const std::string& line, const std::string& key) {
  const auto at = line.find(" " + key + "=");
  if (at == std::string::npos) return ~std::uint64_t{0};
  return std::strtoull(line.c_str() + at + key.size() + 2, nullptr, 10);
}

std::string CtlOut(const LocalCluster& c) {
  std::string out;
  RunCtl(c, &out);
  return out;
}

TEST(Cluster, AppendReadCheckpointPagesStatusAndCleanShutdown) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto cfg = Config(c);
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
  EXPECT_EQ(callback_max.load(), 64u * 512);  // on_durable saw the frontier, in increasing order
  EXPECT_EQ(regressions.load(), 0);
  EXPECT_EQ(ReadRange(*lc, 0, 64 * 512), Bytes(0, 64 * 512));
  EXPECT_EQ(ReadRange(*lc, 1000, 3000), Bytes(1000, 2000));

  ASSERT_NO_FATAL_FAILURE(testing::ExpectCheckpointAndPageRoundTrips(*lc));

  std::string out;
  EXPECT_EQ(RunCtl(c, &out), 0) << out;
  EXPECT_NE(out.find("durable_lsn=32768"), std::string::npos) << out;
  EXPECT_NE(out.find("promised_epoch=1"), std::string::npos) << out;

  lc.reset();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c.Stop(i), 0);
    const std::string log = c.Log(i);
    EXPECT_NE(log.find("event=shutdown"), std::string::npos) << log;
  }
  EXPECT_EQ(c.UnexpectedLogLines({}), "");
}

// The commit-anatomy stage clocks (issue 32) move with what happened: the
// client counts groups queued, acked by a first and a second node and made
// durable, and a blocking WaitDurable; each node counts its appends' and
// tails' stages and its fdatasyncs (logservicectl status).
TEST(Cluster, StageClocksMoveWithAppendsTailsAndWaits) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  // Every append and every tail its own request, so that each node counts
  // each stage per group (batching would let a node behind the quorum get a
  // group's tail with the next group's append; tested below).
  ClusterConfig cfg = Config(c);
  cfg.node_requests_in_flight = 0;
  auto lc = OpenOk(cfg);
  ASSERT_TRUE(lc);
  const client::WriteStats before = lc->write_stats();
  constexpr int kGroups = 20;
  for (int i = 0; i < kGroups; ++i) {
    const auto at = lc->stream_end();
    ASSERT_TRUE(lc->Append(at, Bytes(at, 512)).ok());
    ASSERT_TRUE(lc->PutTail(at + 512, Bytes(at + 512, 512), at + 512 + 100).ok());
    ASSERT_TRUE(lc->WaitDurable(at + 512 + 100, milliseconds(5000)).ok());
  }
  const client::WriteStats after = lc->write_stats();
  EXPECT_EQ(after.appends - before.appends, static_cast<std::uint64_t>(kGroups));
  EXPECT_EQ(after.tails - before.tails, static_cast<std::uint64_t>(kGroups));
  EXPECT_GE(after.posts - before.posts, static_cast<std::uint64_t>(2 * kGroups * 2));  // >= W nodes each
  EXPECT_GE(after.durable_groups - before.durable_groups, static_cast<std::uint64_t>(kGroups));
  EXPECT_GT(after.durable_ns, before.durable_ns);
  EXPECT_GE(after.first_acks - before.first_acks, after.second_acks - before.second_acks);
  EXPECT_GE(after.second_acks - before.second_acks, static_cast<std::uint64_t>(kGroups));
  // Each group's first ack comes no later than its second, its second no
  // later than the frontier covering it.
  EXPECT_LE(after.first_ack_ns - before.first_ack_ns, after.second_ack_ns - before.second_ack_ns);
  std::uint64_t hist = 0;
  for (int b = 0; b < client::LatencyHistogram::kBuckets; ++b) hist += after.durable_hist.counts[b];
  EXPECT_EQ(hist, after.durable_groups);
  // The first wait after a PutTail cannot find the tail durable yet.
  EXPECT_GE(after.waits - before.waits, 1u);
  EXPECT_GE(after.wait_wakeups - before.wait_wakeups, after.waits - before.waits);
  EXPECT_GT(after.wait_ns, before.wait_ns);

  const std::string out = CtlOut(c);
  std::istringstream lines(out);
  std::string line;
  int nodes = 0;
  while (std::getline(lines, line)) {
    if (line.find("node=") == std::string::npos) continue;
    ++nodes;
    SCOPED_TRACE(line);
    const std::uint64_t appends = Field(line, "appends"), sync_acks = Field(line, "sync_acks");
    EXPECT_GE(appends, static_cast<std::uint64_t>(kGroups));
    EXPECT_GE(Field(line, "tail_requests"), static_cast<std::uint64_t>(kGroups));
    EXPECT_GE(Field(line, "sync_batches"), 1u);
    // A batch holds appends (sync_acks) or tails, which share the group commit.
    EXPECT_LE(Field(line, "sync_batches"), sync_acks + Field(line, "tail_requests"));
    EXPECT_GT(Field(line, "sync_ns"), 0u);
    EXPECT_GT(Field(line, "append_total_ns"), 0u);
    EXPECT_GT(Field(line, "tail_save_ns"), 0u);
    // received -> reply covers the queue and the handling.
    EXPECT_GE(Field(line, "tail_total_ns"), Field(line, "tail_queue_ns") + Field(line, "tail_save_ns"));
  }
  EXPECT_EQ(nodes, 3) << out;
}

// A write that completes blocks and leaves a partial one (InnoDB's usual
// commit) goes to each node as one message, written to its journal together
// and made durable by one fdatasync: one post per node per write (240, two
// per node per write, with the tail sent apart) and about one sync per
// write on each node. A busy transport may make the client post again, and
// a loaded machine split a batch, hence the slack. What was written reads
// back, and a new writer recovers it, tail included. The client holds no
// write here (node_requests_in_flight 0): with batching, a node behind the
// quorum may get two writes in one message, fewer than counted here
// (ConcurrentWritesAreCoalescedPerNode... below).
TEST(Cluster, AppendWithTailIsOneMessageAndOneSyncPerNode) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  constexpr int kWrites = 40;
  std::string expected;
  std::uint64_t end = 0;
  {
    ClusterConfig one_by_one = Config(c);
    one_by_one.node_requests_in_flight = 0;
    auto lc = OpenOk(one_by_one);
    ASSERT_TRUE(lc);
    auto syncs = [&] {
      std::vector<std::uint64_t> v;
      std::istringstream lines(CtlOut(c));
      std::string line;
      while (std::getline(lines, line))
        if (line.find("node=") != std::string::npos) v.push_back(Field(line, "fdatasyncs"));
      return v;
    };
    const std::vector<std::uint64_t> before = syncs();
    ASSERT_EQ(before.size(), 3u);
    const client::WriteStats stats_before = lc->write_stats();
    expected = Bytes(0, lc->stream_end());
    for (int i = 0; i < kWrites; ++i) {
      const auto at = lc->stream_end();
      const std::string blocks = Bytes(at, 1024);
      std::string image = Bytes(at + 1024, 512);
      const std::size_t used = 50 + 7 * i;
      image.replace(used, 512 - used, 512 - used, '\0');
      end = at + 1024 + used;
      ASSERT_TRUE(lc->AppendWithTail(at, blocks, image, end).ok());
      ASSERT_TRUE(lc->WaitDurable(end, milliseconds(5000)).ok());
      expected += blocks;
      if (i == kWrites - 1) expected += image.substr(0, used);
    }
    const client::WriteStats stats_after = lc->write_stats();
    const std::uint64_t posts = stats_after.posts - stats_before.posts;
    EXPECT_GE(posts, static_cast<std::uint64_t>(3 * kWrites));
    EXPECT_LE(posts, static_cast<std::uint64_t>(3 * kWrites + kWrites / 2));
    const std::vector<std::uint64_t> after = syncs();
    ASSERT_EQ(after.size(), 3u);
    for (int n = 0; n < 3; ++n)
      EXPECT_LE(after[n] - before[n], static_cast<std::uint64_t>(kWrites + kWrites / 4)) << "node " << n + 1;
    EXPECT_EQ(ReadRange(*lc, 0, end), expected);
  }  // the writer "dies" here
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  EXPECT_EQ(lc->sealed_end(), end);
  EXPECT_EQ(ReadRange(*lc, 0, end), expected);
  // A carried tail is checked as PutTail's is: nothing appended on refusal.
  const auto at = lc->stream_end();
  EXPECT_EQ(lc->AppendWithTail(at, Bytes(at, 512), Bytes(at + 512, 512), at + 512 + 513).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(lc->stream_end(), at);
  EXPECT_EQ(c.UnexpectedLogLines({}), "");
}

// Batching (docs/design/logservice-bulk-path.md, section 6): commits from
// several threads, each one InnoDB-shaped write (AppendWithTail of the
// blocks it completed and the partial block, or PutTail alone) followed by
// a wait for its end to be durable. Sent one by one, each write is one
// request per node, so a node would count at least as many requests
// (appends + tail_requests) as there are writes; with the client holding
// a node's next writes while it has one unanswered, each node counts far
// fewer. Each node's own log holds exactly the bytes written (a
// coalesced request writes what the separate ones would have), and a new
// writer recovers every acknowledged LSN, tail included.
TEST(Cluster, ConcurrentWritesAreCoalescedPerNodeAndEveryAcknowledgedLsnSurvives) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  constexpr int kThreads = 8, kWritesEach = 40, kWrites = kThreads * kWritesEach;
  constexpr std::uint64_t kBlock = 512;
  std::uint64_t data_end = 0;       // where the log ends, tail included
  std::atomic<std::uint64_t> acked{0};  // highest end a WaitDurable confirmed
  testing::NodeProbe probe(c);
  auto requests = [&] {
    std::vector<std::uint64_t> v;
    for (int i = 0; i < 3; ++i) {
      auto st = probe.State(i);
      if (!st) return std::vector<std::uint64_t>{};
      v.push_back(st->counters[static_cast<int>(wire::NodeCounter::kAppends)] +
                  st->counters[static_cast<int>(wire::NodeCounter::kTailRequests)]);
    }
    return v;
  };
  {
    auto lc = OpenOk(Config(c));
    ASSERT_TRUE(lc);
    lc->set_written_acks(false);  // as InnoDB under innodb_flush_log_at_trx_commit=1
    const std::vector<std::uint64_t> before = requests();
    ASSERT_EQ(before.size(), 3u);
    std::mutex order;  // the LSN order, as InnoDB's log writer mutex
    std::atomic<int> failures{0};
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; ++t) {
      ts.emplace_back([&, t] {
        std::mt19937_64 rng(testing::ClusterTestSeed() + t);
        for (int k = 0; k < kWritesEach; ++k) {
          std::uint64_t end;
          {
            std::lock_guard<std::mutex> l(order);
            end = data_end + 20 + rng() % 700;
            if (end % kBlock == 0) ++end;  // every write leaves a partial block
            const std::uint64_t full_end = end / kBlock * kBlock, at = lc->stream_end();
            std::string image = Bytes(full_end, kBlock);
            std::fill(image.begin() + (end - full_end), image.end(), '\0');
            client::ClientStatus st;
            if (full_end > at) st = lc->AppendWithTail(at, Bytes(at, full_end - at), image, end);
            else st = lc->PutTail(full_end, image, end);
            if (!st.ok()) {
              ADD_FAILURE() << "write to " << end << ": " << st.ToString();
              ++failures;
              return;
            }
            data_end = end;
          }
          const client::ClientStatus st = lc->WaitDurable(end, milliseconds(10000));
          if (!st.ok()) {
            ADD_FAILURE() << "wait for " << end << ": " << st.ToString();
            ++failures;
            return;
          }
          std::uint64_t a = acked.load();
          while (a < end && !acked.compare_exchange_weak(a, end)) {
          }
        }
      });
    }
    for (auto& th : ts) th.join();
    ASSERT_EQ(failures.load(), 0);
    EXPECT_EQ(acked.load(), data_end);
    const std::vector<std::uint64_t> after = requests();
    ASSERT_EQ(after.size(), 3u);
    std::printf("%d writes; requests per node: %llu %llu %llu\n", kWrites,
                static_cast<unsigned long long>(after[0] - before[0]),
                static_cast<unsigned long long>(after[1] - before[1]),
                static_cast<unsigned long long>(after[2] - before[2]));
    for (int n = 0; n < 3; ++n) {
      // W = 2: the third node may still be behind; the two that made the
      // last write durable counted their requests already.
      SCOPED_TRACE("node " + std::to_string(n + 1));
      EXPECT_LE(after[n] - before[n], static_cast<std::uint64_t>(kWrites * 3 / 4));
    }
    // Each node's own log: the bytes written there, whether they came one
    // request per write or coalesced.
    const std::uint64_t blocks_end = data_end / kBlock * kBlock;
    int holding_all = 0;
    for (int n = 0; n < 3; ++n) {
      auto st = probe.State(n);
      ASSERT_TRUE(st);
      const std::uint64_t durable = std::min<std::uint64_t>(st->durable, blocks_end);
      EXPECT_EQ(probe.ReadFrom(n, 0, durable), Bytes(0, durable)) << "node " << n + 1;
      if (st->durable >= blocks_end && st->tail.block_lsn == blocks_end && st->tail.data_end == data_end) {
        EXPECT_EQ(st->tail.image.substr(0, data_end - blocks_end), Bytes(blocks_end, data_end - blocks_end));
        ++holding_all;
      }
    }
    EXPECT_GE(holding_all, 2);  // a write quorum holds every acknowledged byte
  }  // the writer "dies" here
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  EXPECT_EQ(lc->sealed_end(), data_end);
  EXPECT_EQ(ReadRange(*lc, 0, data_end), Bytes(0, data_end));
  EXPECT_EQ(c.UnexpectedLogLines({}), "");
}

TEST(Cluster, TailIsOverwrittenAndRecovered) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  std::string img2;
  {
    auto lc = OpenOk(Config(c));
    ASSERT_TRUE(lc);
    AppendBlocks(*lc, 2);
    std::string img1 = Bytes(1024, 512);
    img1.replace(100, 412, 412, '\0');
    ASSERT_TRUE(lc->PutTail(1024, img1, 1124).ok());
    ASSERT_TRUE(lc->WaitDurable(1124, milliseconds(5000)).ok());
    img2 = Bytes(1024, 512);
    img2.replace(300, 212, 212, '\0');
    ASSERT_TRUE(lc->PutTail(1024, img2, 1324).ok());
    ASSERT_TRUE(lc->WaitDurable(1324, milliseconds(5000)).ok());
    EXPECT_EQ(ReadRange(*lc, 1024, 1536), img2);
  }  // the writer "dies" here
  {
    auto ro = OpenOk(Config(c, client::OpenMode::kReadOnly));
    ASSERT_TRUE(ro);
    EXPECT_EQ(ro->sealed_end(), 1324u);
    EXPECT_EQ(ReadRange(*ro, 0, 1536), Bytes(0, 1024) + img2);
  }
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  EXPECT_EQ(lc->epoch(), 2u);
  EXPECT_EQ(lc->stream_end(), 1024u);
  EXPECT_EQ(lc->sealed_end(), 1324u);
  EXPECT_EQ(ReadRange(*lc, 0, 1536), Bytes(0, 1024) + img2);
  // The new writer completes the block: the tail retires.
  ASSERT_TRUE(lc->Append(1024, Bytes(1024, 512)).ok());
  ASSERT_TRUE(lc->WaitDurable(1536, milliseconds(5000)).ok());
  EXPECT_EQ(ReadRange(*lc, 0, 1536), Bytes(0, 1536));
  EXPECT_EQ(c.UnexpectedLogLines({}), "");
}

// A commit that lives only in the tail register survives a takeover that
// also hears from a node which never saw that tail's writer. Writer A
// (epoch 1) writes two blocks to all three nodes. Node1 is down while
// writer B (epoch 2) takes over: B seals node2 and node3 at 1024 and its one
// acknowledged write is the tail (1024, 1300), on node2 and node3 only. B
// dies; node1 returns, node3 goes down. Writer C hears from node1 (blocks to
// 1024, sealed by epoch 1 only) and node2 (the same blocks and B's tail):
// equal block streams, and the tail is beyond node1's blocks. C must recover
// 1300, not 1024.
TEST(Cluster, AcknowledgedTailSurvivesATakeoverThatAlsoHearsANodeWithoutIt) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  {
    auto a = OpenOk(Config(c));
    ASSERT_TRUE(a);
    AppendBlocks(*a, 2);
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(WaitNodeDurable(*a, i, 1024, milliseconds(10000)));
  }
  c.Kill(0);
  std::string img = Bytes(1024, 512);
  img.replace(276, 236, 236, '\0');
  {
    auto b = OpenOk(Config(c));
    ASSERT_TRUE(b);
    EXPECT_EQ(b->epoch(), 2u);
    EXPECT_EQ(b->sealed_end(), 1024u);
    ASSERT_TRUE(b->PutTail(1024, img, 1300).ok());
    ASSERT_TRUE(b->WaitDurable(1300, milliseconds(5000)).ok()) << b->status().reason;
  }  // writer B dies; 1300 was acknowledged
  ASSERT_TRUE(c.Start(0));
  c.Kill(2);
  auto w = OpenOk(Config(c));
  ASSERT_TRUE(w);
  EXPECT_EQ(w->epoch(), 3u);
  EXPECT_EQ(w->stream_end(), 1024u);
  EXPECT_EQ(w->sealed_end(), 1300u) << "the acknowledged tail was dropped";
  EXPECT_TRUE(ReadRange(*w, 0, 1536) == Bytes(0, 1024) + img) << "the recovered log is not writer B's";
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

TEST(Cluster, KillNineDuringStreamThenRestartCatchesUp) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  std::uint64_t acked = 0;
  for (int round = 0; round < 60; ++round) {
    AppendBlocks(*lc, 8);
    if (round == 20) c.Kill(2);
    ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok()) << lc->status().reason;
    acked = lc->stream_end();
  }
  EXPECT_FALSE(lc->status().nodes[2].connected);
  ASSERT_TRUE(c.Start(2));
  AppendBlocks(*lc, 8);
  ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok());
  acked = lc->stream_end();
  ASSERT_TRUE(WaitNodeDurable(*lc, 2, acked, milliseconds(10000))) << lc->status().reason << c.Log(2) << lc->status().nodes[2].durable << CtlOut(c);
  EXPECT_NE(c.Log(2).find("event=gap_fill"), std::string::npos);
  // Node 3 really holds everything: lose the other two one at a time.
  c.Kill(0);
  AppendBlocks(*lc, 4);
  ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok()) << lc->status().reason;
  acked = lc->stream_end();
  ASSERT_TRUE(c.Start(0));
  ASSERT_TRUE(WaitNodeDurable(*lc, 0, acked, milliseconds(10000))) << lc->status().reason;
  c.Kill(1);
  lc.reset();
  auto lc2 = OpenOk(Config(c));
  ASSERT_TRUE(lc2);
  EXPECT_EQ(lc2->sealed_end(), acked);
  EXPECT_EQ(ReadRange(*lc2, 0, acked), Bytes(0, acked));
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

TEST(Cluster, TwoOfThreeDownStopsAcksWithReasonThenResumes) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  AppendBlocks(*lc, 4);
  ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok());
  c.Kill(1);
  c.Kill(2);
  AppendBlocks(*lc, 4);
  const auto target = lc->stream_end();
  auto s = lc->WaitDurable(target, milliseconds(1500));
  ASSERT_EQ(s.code(), Code::kUnavailable) << s.ToString();
  EXPECT_NE(s.message().find("2 of 3 nodes unreachable"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("node2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("node3"), std::string::npos) << s.message();
  EXPECT_NE(lc->status().reason.find("connection refused"), std::string::npos) << lc->status().reason;
  EXPECT_LT(lc->durable_lsn(), target);
  ASSERT_TRUE(c.Start(1));
  ASSERT_TRUE(lc->WaitDurable(target, milliseconds(10000)).ok()) << lc->status().reason;
  AppendBlocks(*lc, 4);
  ASSERT_TRUE(lc->WaitDurable(lc->stream_end(), milliseconds(5000)).ok());
  EXPECT_EQ(ReadRange(*lc, 0, lc->stream_end()), Bytes(0, lc->stream_end()));
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

TEST(Cluster, StaleWriterIsFencedAfterTakeover) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto a = OpenOk(Config(c));
  ASSERT_TRUE(a);
  AppendBlocks(*a, 4);
  ASSERT_TRUE(a->WaitDurable(2048, milliseconds(5000)).ok());
  auto cfg_b = Config(c);
  cfg_b.seed = testing::ClusterTestSeed() + 1;
  auto b = OpenOk(cfg_b);
  ASSERT_TRUE(b);
  EXPECT_GT(b->epoch(), a->epoch());
  EXPECT_EQ(b->sealed_end(), 2048u);
  // The old writer keeps writing: nothing of it may become durable.
  (void)a->Append(2048, Bytes(2048, 512));
  auto s = a->WaitDurable(2560, milliseconds(3000));
  EXPECT_EQ(s.code(), Code::kFenced) << s.ToString();
  EXPECT_EQ(a->Append(a->stream_end(), Bytes(0, 512)).code(), Code::kFenced);
  EXPECT_EQ(a->WriteCheckpoint(100, "x").code(), Code::kFenced);
  EXPECT_TRUE(a->status().fenced);
  // The new writer's stream is intact and continues at the sealed end.
  ASSERT_TRUE(b->Append(2048, std::string(512, 'B')).ok());
  ASSERT_TRUE(b->WaitDurable(2560, milliseconds(5000)).ok());
  EXPECT_EQ(ReadRange(*b, 2048, 2560), std::string(512, 'B'));
  EXPECT_EQ(c.UnexpectedLogLines({}), "");
}

TEST(Cluster, RecoveryAfterWriterDiesTruncatesBeyondDurableEndOnAllNodes) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  std::uint64_t acked;
  {
    auto a = OpenOk(Config(c));
    ASSERT_TRUE(a);
    AppendBlocks(*a, 16);
    ASSERT_TRUE(a->WaitDurable(a->stream_end(), milliseconds(5000)).ok());
    acked = a->stream_end();
    // Only node1 hears the rest of the stream: never acknowledged.
    c.Kill(1);
    c.Kill(2);
    AppendBlocks(*a, 16);
    ASSERT_TRUE(WaitNodeDurable(*a, 0, a->stream_end(), milliseconds(5000)));
    EXPECT_EQ(a->durable_lsn(), acked);
  }  // writer dies mid-stream
  c.Kill(0);
  ASSERT_TRUE(c.Start(1));
  ASSERT_TRUE(c.Start(2));
  auto b = OpenOk(Config(c));
  ASSERT_TRUE(b);
  EXPECT_EQ(b->sealed_end(), acked);
  // node1 comes back holding 16 unacknowledged blocks: the seal cuts them.
  ASSERT_TRUE(c.Start(0));
  ASSERT_TRUE(WaitNodeDurable(*b, 0, acked, milliseconds(10000))) << b->status().reason;
  EXPECT_NE(c.Log(0).find("cut=" + std::to_string(acked) + " had_complete=" + std::to_string(acked + 16 * 512)),
            std::string::npos)
      << c.Log(0);
  ASSERT_TRUE(b->Append(acked, std::string(512, 'N')).ok());
  ASSERT_TRUE(b->WaitDurable(acked + 512, milliseconds(5000)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(WaitNodeDurable(*b, i, acked + 512, milliseconds(10000)));
  std::string out;
  EXPECT_EQ(RunCtl(c, &out), 0) << out;
  for (int i = 0; i < 3; ++i) {
    const std::string want = "durable_lsn=" + std::to_string(acked + 512) +
                             " complete_lsn=" + std::to_string(acked + 512) +
                             " highest_lsn=" + std::to_string(acked + 512);
    std::size_t pos = 0, hits = 0;
    while ((pos = out.find(want, pos)) != std::string::npos) ++hits, ++pos;
    EXPECT_EQ(hits, 3u) << out;
  }
  // Reading through node1 alone returns the new writer's bytes.
  c.Kill(1);
  EXPECT_EQ(ReadRange(*b, acked, acked + 512), std::string(512, 'N'));
  // Allowed: kill -9 can stop a node between the writes of one record; its
  // recovery cuts that unacknowledged torn tail (storage layer, logged).
  EXPECT_EQ(c.UnexpectedLogLines({"recovery: cutting torn tail"}), "");
}

#ifdef STRATA_LOGSERVICE_WITH_GRPC
TEST(Admin, GrpcStatusThroughLogservicectl) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  AppendBlocks(*lc, 8);
  ASSERT_TRUE(lc->WaitDurable(8 * 512, milliseconds(5000)).ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(WaitNodeDurable(*lc, i, 8 * 512, milliseconds(5000)));
  std::string admins;
  for (int i = 0; i < 3; ++i) admins += (i ? "," : "") + c.admin_address(i);
  const std::string cmd = std::string(LOGSERVICECTL_PATH) + " status --admin=" + admins +
                          " --token_file=" + c.readonly_token_file() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_TRUE(p);
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(WEXITSTATUS(pclose(p)), 0) << out;
  for (const char* node : {"node=n1", "node=n2", "node=n3"}) EXPECT_NE(out.find(node), std::string::npos) << out;
  std::size_t pos = 0, hits = 0;
  while ((pos = out.find("durable_lsn=4096", pos)) != std::string::npos) ++hits, ++pos;
  EXPECT_EQ(hits, 3u) << out;
  // Every field the issue asks for, per node: epoch, durable LSN, segments,
  // disk use, counters.
  std::stringstream lines(out);
  std::string line;
  int nodes = 0;
  while (std::getline(lines, line)) {
    if (line.find("node=n") == std::string::npos) continue;
    ++nodes;
    EXPECT_EQ(Field(line, "promised_epoch"), lc->epoch()) << line;
    EXPECT_EQ(Field(line, "seal_epoch"), lc->epoch()) << line;
    EXPECT_EQ(Field(line, "segments"), 1u) << line;
    EXPECT_GT(Field(line, "disk_bytes"), 4096u) << line;
    EXPECT_GE(Field(line, "appends"), 1u) << line;
    EXPECT_GE(Field(line, "fdatasyncs"), 1u) << line;
    EXPECT_GE(Field(line, "promises"), 1u) << line;
  }
  EXPECT_EQ(nodes, 3) << out;
  // JSON over gRPC, and a node that does not answer: named, exit status 1.
  std::string json;
  EXPECT_EQ(testing::RunShell(std::string(LOGSERVICECTL_PATH) + " status --json --admin=" + admins +
                       " --token_file=" + c.readonly_token_file(), &json), 0) << json;
  EXPECT_NE(json.find("\"durable_lsn\":\"4096\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"disk_bytes\":"), std::string::npos) << json;
  c.Kill(1);
  std::string down;
  EXPECT_EQ(testing::RunShell(std::string(LOGSERVICECTL_PATH) + " status --admin=" + admins +
                       " --token_file=" + c.readonly_token_file(), &down), 1) << down;
  EXPECT_NE(down.find(c.admin_address(1)), std::string::npos) << down;
  EXPECT_NE(down.find("error="), std::string::npos) << down;
  EXPECT_NE(down.find("node=n3"), std::string::npos) << down;
}
#endif

// The same status over the replication transport (authenticated with the
// cluster secret), the path that works without gRPC.
TEST(Admin, TransportStatusThroughLogservicectl) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto lc = OpenOk(Config(c));
  ASSERT_TRUE(lc);
  AppendBlocks(*lc, 8);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(WaitNodeDurable(*lc, i, 8 * 512, milliseconds(5000)));
  std::string out;
  ASSERT_EQ(RunCtl(c, &out), 0) << out;
  std::stringstream lines(out);
  std::string line;
  int nodes = 0;
  while (std::getline(lines, line)) {
    if (line.find("node=n") == std::string::npos) continue;
    ++nodes;
    EXPECT_EQ(Field(line, "promised_epoch"), lc->epoch()) << line;
    EXPECT_EQ(Field(line, "durable_lsn"), 4096u) << line;
    EXPECT_EQ(Field(line, "segments"), 1u) << line;
    EXPECT_GT(Field(line, "disk_bytes"), 4096u) << line;
  }
  EXPECT_EQ(nodes, 3) << out;
  c.Kill(2);
  out.clear();
  EXPECT_EQ(RunCtl(c, &out), 1) << out;
  EXPECT_NE(out.find(c.address(2) + " error="), std::string::npos) << out;
}

// Release frees the nodes' log below the stored checkpoint, never above it:
// without a checkpoint nothing goes; above it the cap holds; a new writer
// still recovers the same end and reads from the checkpoint on.
TEST(Cluster, ReleaseFreesBelowTheCheckpointOnly) {
  LocalCluster cluster(3);
  ASSERT_TRUE(cluster.StartAll());
  auto w = OpenOk(Config(cluster));
  ASSERT_NE(w, nullptr);
  AppendBlocks(*w, 64);
  const std::uint64_t end = w->stream_end();
  ASSERT_TRUE(w->WaitDurable(end, milliseconds(10000)).ok());
  ASSERT_TRUE(w->Release(16 * 512).ok());
  EXPECT_EQ(ReadRange(*w, 0, 512), Bytes(0, 512)) << "released without a checkpoint";
  ASSERT_TRUE(w->WriteCheckpoint(20 * 512, "meta").ok());
  ASSERT_TRUE(w->Release(40 * 512).ok());
  auto below = w->Read(0, 512);
  EXPECT_TRUE(!below.ok() || below->empty()) << "bytes below the checkpoint are still there";
  EXPECT_EQ(ReadRange(*w, 20 * 512, end), Bytes(20 * 512, end - 20 * 512)) << "released above the checkpoint";
  w.reset();
  auto again = OpenOk(Config(cluster));
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->stream_end(), end);
  EXPECT_EQ(ReadRange(*again, 20 * 512, end), Bytes(20 * 512, end - 20 * 512));
}

TEST(Cluster, WrongSecretIsRefused) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto cfg = Config(c);
  cfg.secret = "not-the-secret";
  cfg.open_timeout = milliseconds(2000);
  auto lc = LogClient::Open(cfg);
  ASSERT_FALSE(lc.ok());
  EXPECT_EQ(lc.status().code(), Code::kAuthFailed) << lc.status().ToString();
  EXPECT_NE(lc.status().message().find("authentication"), std::string::npos) << lc.status().message();
  // The node logged the refusal (one structured line; it may land just
  // after the client saw the refusal) and stored nothing.
  for (int i = 0; i < 100 && c.Log(0).find("event=transport") == std::string::npos; ++i)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_NE(c.Log(0).find("event=transport"), std::string::npos) << c.Log(0);
  EXPECT_EQ(c.Log(0).find("event=promise"), std::string::npos) << c.Log(0);
  // Allowed: the test presents a wrong secret.
  EXPECT_EQ(c.UnexpectedLogLines({"AuthFailed: authentication failed"}), "");
}

}  // namespace
}  // namespace strata::logservice
