// A node whose log is damaged heals from its peers (issue 29, hole 3:
// "fail-stop that segment, say so, and heal it from peers"), with 3 real
// logserviced processes on loopback. A flipped byte in a sealed segment or
// in the newest one, found at start or by the scrub of a running node: the
// node moves its log aside (redo.damaged-N, kept as evidence), rebuilds it
// from a peer, becomes a member again, and serves every acknowledged byte,
// byte for byte; meanwhile it counts toward no quorum. Before this, the
// node refused to start (and a running node kept counting as a holder of
// bytes it could no longer read). Every wait is bounded.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

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
// Small segments, so that a few hundred blocks fill several of them.
const std::string kSmallSegments = "--segment_bytes=65536";

ClusterConfig Config(const LocalCluster& c, milliseconds open_timeout = milliseconds(8000)) {
  ClusterConfig cfg = testing::LocalClusterConfig(c);
  cfg.open_timeout = open_timeout;
  // One request, so one journal record, per appended block: a segment holds
  // many records and a byte flipped in its middle lies inside one that
  // others follow (FlipByteInTheMiddle). Coalesced, the blocks a test
  // appends without waiting would go as a few records of up to 128 KiB,
  // each larger than these tests' 64 KiB segments.
  cfg.node_requests_in_flight = 0;
  return cfg;
}

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

std::string NodeDir(const LocalCluster& c, int i) { return c.root() + "/n" + std::to_string(i + 1); }

// The node's redo segment files, oldest first.
std::vector<std::string> Segments(const std::string& redo_dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(redo_dir))
    if (e.path().extension() == ".seg") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

// XORs one byte in the middle of the file: inside a record that others
// follow, so no recovery rule can take it for a torn end. pwrite goes
// through the page cache, so a running node's next read of it sees it too.
void FlipByteInTheMiddle(const std::string& file) {
  const auto size = std::filesystem::file_size(file);
  ASSERT_GT(size, 4 * kBlock) << file;
  const int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  const off_t at = static_cast<off_t>(size / 2);
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, at), 1);
  b ^= 0x5a;
  ASSERT_EQ(::pwrite(fd, &b, 1, at), 1);
  ::close(fd);
}

// Until node i is a member whose durable end reaches `at_least` (bounded).
bool WaitMember(NodeProbe& p, int i, std::uint64_t at_least, milliseconds timeout, std::string* last) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto s = p.State(i)) {
      *last = "node " + std::to_string(i + 1) + ": durable " + std::to_string(s->durable) + " rebuilding " +
              std::to_string(s->rebuilding);
      if (!s->rebuilding && s->durable >= at_least) return true;
    } else {
      *last = "node " + std::to_string(i + 1) + " does not answer";
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

bool WaitLogLine(const LocalCluster& c, int i, const std::string& needle, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (c.Log(i).find(needle) != std::string::npos) return true;
    std::this_thread::sleep_for(milliseconds(50));
  }
  return false;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class Heal : public ::testing::Test {
 protected:
  Heal() : c_(3) {
    for (int i = 0; i < 3; ++i) c_.SetExtraArgs(i, {kSmallSegments});
  }

  // Acknowledged blocks across several segments on every node; the writer
  // then goes away. Returns the acknowledged end.
  std::uint64_t WriteAcknowledged(int blocks) {
    auto lc = LogClient::Open(Config(c_));
    EXPECT_TRUE(lc.ok()) << lc.status().ToString();
    if (!lc.ok()) return 0;
    AppendBlocksDurable(**lc, blocks);
    return (*lc)->durable_lsn();
  }

  // Node `healed` is back: a member with every acknowledged byte, the damaged
  // copy kept with its reason; then with another node down, the healed one
  // and the third recover and serve everything (it counts again).
  void ExpectHealed(int healed, std::uint64_t acked) {
    NodeProbe probe(c_);
    {
      // A writer seals the rebuilding node (two members are a read quorum).
      auto lc = LogClient::Open(Config(c_));
      ASSERT_TRUE(lc.ok()) << lc.status().ToString();
      ASSERT_GE((*lc)->sealed_end(), acked);
      std::string why;
      ASSERT_TRUE(WaitMember(probe, healed, acked, milliseconds(20000), &why)) << why;
    }
    EXPECT_EQ(probe.ReadFrom(healed, 0, acked), Bytes(0, acked)) << "the rebuilt log, byte for byte";
    const std::string copy = NodeDir(c_, healed) + "/redo.damaged-1";
    EXPECT_TRUE(std::filesystem::is_directory(copy)) << "the damaged log is kept aside";
    EXPECT_NE(ReadFile(copy + "/DAMAGED").find("CRC"), std::string::npos) << "with its reason";
    const int other = (healed + 1) % 3;
    c_.Kill(other);
    auto lc = LogClient::Open(Config(c_));
    ASSERT_TRUE(lc.ok()) << lc.status().ToString();
    ASSERT_GE((*lc)->sealed_end(), acked);
    EXPECT_EQ(ReadRange(**lc, 0, acked), Bytes(0, acked));
    AppendBlocksDurable(**lc, 4);  // acknowledged only with the healed node's help
    ASSERT_TRUE(c_.Start(other));
  }

  LocalCluster c_;
};

// Bit rot in a sealed segment, found when the node starts.
TEST_F(Heal, AFlippedByteInASealedSegmentIsMovedAsideAndRebuiltFromPeers) {
  ASSERT_TRUE(c_.StartAll());
  const std::uint64_t acked = WriteAcknowledged(600);
  ASSERT_GT(acked, 0u);
  ASSERT_EQ(c_.Stop(0), 0);
  const auto segments = Segments(NodeDir(c_, 0) + "/redo");
  ASSERT_GE(segments.size(), 3u) << "the test needs sealed segments";
  FlipByteInTheMiddle(segments.front());
  ASSERT_TRUE(c_.Start(0)) << "a damaged log must not keep the node down:\n" << c_.Log(0);
  EXPECT_NE(c_.Log(0).find("event=log_quarantined"), std::string::npos) << c_.Log(0);
  ExpectHealed(0, acked);
  EXPECT_EQ(c_.UnexpectedLogLines({"recovery: cutting torn tail", "event=log_quarantined", "event=log_lost",
                                   "refusing to open"}),
            "");
}

// The newest segment: a damaged record with valid ones after it is not a
// torn tail, and healing must not cut it either.
TEST_F(Heal, AFlippedByteInTheNewestSegmentIsMovedAsideAndRebuiltFromPeers) {
  ASSERT_TRUE(c_.StartAll());
  const std::uint64_t acked = WriteAcknowledged(300);
  ASSERT_GT(acked, 0u);
  ASSERT_EQ(c_.Stop(1), 0);
  const auto segments = Segments(NodeDir(c_, 1) + "/redo");
  ASSERT_FALSE(segments.empty());
  FlipByteInTheMiddle(segments.back());
  ASSERT_TRUE(c_.Start(1)) << "a damaged log must not keep the node down:\n" << c_.Log(1);
  ExpectHealed(1, acked);
  EXPECT_EQ(c_.UnexpectedLogLines({"recovery: cutting torn tail", "event=log_quarantined", "event=log_lost",
                                   "refusing to open"}),
            "");
}

// Rot on a running node, in records nobody reads: the scrub finds it, the
// node stops counting, restarts itself and rebuilds while the writer goes on.
TEST_F(Heal, TheScrubFindsRotInARunningNodeWhichHealsItself) {
  c_.SetExtraArgs(2, {kSmallSegments, "--scrub_interval_seconds=1"});
  ASSERT_TRUE(c_.StartAll());
  auto lc = LogClient::Open(Config(c_));
  ASSERT_TRUE(lc.ok()) << lc.status().ToString();
  AppendBlocksDurable(**lc, 400);
  const std::uint64_t before = (*lc)->durable_lsn();
  const auto segments = Segments(NodeDir(c_, 2) + "/redo");
  ASSERT_GE(segments.size(), 2u);
  FlipByteInTheMiddle(segments.front());
  ASSERT_TRUE(WaitLogLine(c_, 2, "event=log_damaged found_by=scrub", milliseconds(15000))) << c_.Log(2);
  ASSERT_TRUE(WaitLogLine(c_, 2, "event=log_quarantined", milliseconds(15000))) << c_.Log(2);
  AppendBlocksDurable(**lc, 50);  // the writer carries on with the two others
  const std::uint64_t acked = (*lc)->durable_lsn();
  ASSERT_GT(acked, before);
  (*lc).reset();
  ExpectHealed(2, acked);
  EXPECT_EQ(c_.UnexpectedLogLines({"recovery: cutting torn tail", "event=log_quarantined", "event=log_lost",
                                   "event=log_damaged", "refusing to open", "are corrupt",
                                   "event=transport", "reply_dropped"}),
            "");
}

// Every node's log damaged at once (a bug rather than rot looks like this):
// each moves its log aside, and no writer may take three empty nodes for a
// new cluster and start an empty log over acknowledged redo. It refuses,
// naming what to do; the copies are there.
TEST_F(Heal, EveryNodeDamagedIsRefusedNotTakenForANewCluster) {
  ASSERT_TRUE(c_.StartAll());
  const std::uint64_t acked = WriteAcknowledged(300);
  ASSERT_GT(acked, 0u);
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(c_.Stop(i), 0);
    FlipByteInTheMiddle(Segments(NodeDir(c_, i) + "/redo").front());
  }
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c_.Start(i)) << c_.Log(i);
  auto lc = LogClient::Open(Config(c_, milliseconds(3000)));
  ASSERT_FALSE(lc.ok()) << "a writer opened an empty log over " << acked << " acknowledged bytes";
  EXPECT_EQ(lc.status().code(), Code::kUnavailable) << lc.status().ToString();
  EXPECT_NE(lc.status().message().find("lost a log that held acknowledged redo"), std::string::npos)
      << lc.status().ToString();
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(std::filesystem::is_directory(NodeDir(c_, i) + "/redo.damaged-1")) << "node " << i + 1;
}

// damaged_log=stop keeps the node down with the damage named, for an
// operator who wants to look at the disk first; nothing is moved.
TEST_F(Heal, DamagedLogStopKeepsTheNodeDownAndTheFilesInPlace) {
  c_.SetExtraArgs(0, {kSmallSegments, "--damaged_log=stop"});
  ASSERT_TRUE(c_.StartAll());
  ASSERT_GT(WriteAcknowledged(300), 0u);
  ASSERT_EQ(c_.Stop(0), 0);
  FlipByteInTheMiddle(Segments(NodeDir(c_, 0) + "/redo").front());
  EXPECT_FALSE(c_.Start(0));
  EXPECT_NE(c_.Log(0).find("event=start_failed"), std::string::npos) << c_.Log(0);
  EXPECT_NE(c_.Log(0).find("damaged record"), std::string::npos) << c_.Log(0);
  EXPECT_FALSE(std::filesystem::exists(NodeDir(c_, 0) + "/redo.damaged-1"));
}

}  // namespace
}  // namespace strata::logservice
