// Follower mode and retention pins (docs/design/page-server.md 7.1, 7.4),
// with the nodes in this process (InProcessCluster over TCP):
//   - a follower is given exactly the acknowledged redo, byte for byte, and
//     never a byte a write quorum has not acknowledged, also across a writer
//     change whose seal cuts what the follower's node held beyond it;
//   - the acknowledged partial last block comes as a tail image;
//   - a pin holds a release that would otherwise cut what the follower
//     still needs; pins are durable, refused below the released LSN, and
//     copied to a node that rebuilds from a peer.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "cluster_client_support.h"
#include "in_process_cluster.h"
#include "strata/logservice/follower.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using client::LogFollower;
using std::chrono::milliseconds;
using testing::InProcessCluster;
using testing::TestTransport;

constexpr std::size_t kBlock = 512;

std::string Bytes(std::uint64_t from, std::size_t n) { return testing::RedoBytes(from, n); }

std::unique_ptr<LogClient> OpenWriter(InProcessCluster& c) {
  auto lc = LogClient::Open(c.Config());
  EXPECT_TRUE(lc.ok()) << lc.status().ToString();
  return lc.ok() ? std::move(*lc) : nullptr;
}

// A follower of the given nodes (all when empty).
std::unique_ptr<LogFollower> OpenFollower(InProcessCluster& c, std::vector<int> only = {}) {
  client::ClusterConfig cfg = c.Config();
  if (!only.empty()) {
    cfg.nodes.clear();
    for (int i : only) cfg.nodes.push_back(c.addresses()[i]);
    cfg.write_quorum = 1;
  }
  auto f = LogFollower::Open(cfg);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? std::move(*f) : nullptr;
}

// A started three-node cluster (TCP, seeded) with a writer and a follower
// of all its nodes: what most tests here begin with.
struct WriterAndFollower {
  explicit WriterAndFollower(std::uint64_t seed) : c(3, TestTransport::kTcp, seed) {}
  bool Start() {
    if (!c.StartAll()) return false;
    w = OpenWriter(c);
    f = OpenFollower(c);
    return w && f;
  }
  InProcessCluster c;
  std::unique_ptr<LogClient> w;
  std::unique_ptr<LogFollower> f;
};

void AppendDurable(LogClient& w, const std::string& bytes) {
  const auto at = w.stream_end();
  ASSERT_TRUE(w.Append(at, bytes).ok());
  ASSERT_TRUE(w.WaitDurable(at + bytes.size(), milliseconds(10000)).ok()) << w.status().reason;
}

// Follows from `from` until `to` is reached or `timeout` passes; fails the
// test on any byte at or above `limit` (what was acknowledged when called).
std::string FollowTo(LogFollower& f, std::uint64_t from, std::uint64_t to, std::uint64_t limit,
                     milliseconds timeout = milliseconds(10000)) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (from + out.size() < to && std::chrono::steady_clock::now() < deadline) {
    auto b = f.Follow(from + out.size(), 1 << 20, milliseconds(100));
    if (!b.ok()) {
      ADD_FAILURE() << b.status().ToString();
      break;
    }
    EXPECT_LE(b->end(), limit) << "a follower was given bytes nobody acknowledged";
    // (An empty batch may come from a node behind `from`, frontier lower.)
    if (!b->bytes.empty()) {
      EXPECT_LE(b->end(), b->frontier);
    }
    out += b->bytes;
  }
  return out;
}

TEST(Follower, SeesExactlyTheAcknowledgedRedo) {
  WriterAndFollower s(1);
  ASSERT_TRUE(s.Start());
  auto& [c, w, f] = s;
  // Nothing yet: an empty batch after the wait, not an error.
  auto empty = f->Follow(0, 1 << 20, milliseconds(50));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_TRUE(empty->bytes.empty());
  std::string expect;
  for (int round = 0; round < 8; ++round) {
    const std::string b = Bytes(w->stream_end(), 16 * kBlock);
    AppendDurable(*w, b);
    expect += b;
    // The last append's hint reaches the nodes only by HintReq (the writer
    // is idle now): the follower must still see all of it.
    EXPECT_EQ(FollowTo(*f, 0, expect.size(), w->durable_lsn()), expect) << "round " << round;
  }
  // And not a byte more: a follow at the end waits, then answers empty.
  auto b = f->Follow(expect.size(), 1 << 20, milliseconds(150));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->bytes.empty());
  EXPECT_EQ(b->frontier, expect.size());
  EXPECT_EQ(c.UnexpectedLogLines(), "");
}

// Bytes one node holds durably but no quorum acknowledged are never
// followed; a new writer's seal cuts them and the follower then sees the new
// writer's different bytes at the same LSNs.
TEST(Follower, NeverSeesUnacknowledgedBytesAcrossAWriterChange) {
  InProcessCluster c(3, TestTransport::kTcp, 2);
  ASSERT_TRUE(c.StartAll());
  auto f0 = OpenFollower(c, {0});  // reads node 1 only
  ASSERT_TRUE(f0);
  const std::string a = Bytes(0, 32 * kBlock);
  const std::uint64_t a_end = a.size();
  {
    auto w = OpenWriter(c);
    ASSERT_TRUE(w);
    AppendDurable(*w, a);
    EXPECT_EQ(FollowTo(*f0, 0, a_end, a_end), a);
    // Nodes 2 and 3 go away: B reaches node 1 only (durable there, never acknowledged).
    c.Stop(1);
    c.Stop(2);
    const std::string b(8 * kBlock, 'B');
    ASSERT_TRUE(w->Append(a_end, b).ok());
    // Wait until node 1 holds B durably, then check the follower still stops at A.
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
    while (c.node(0).State().durable < a_end + b.size() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(10));
    ASSERT_EQ(c.node(0).State().durable, a_end + b.size());
    EXPECT_EQ(w->durable_lsn(), a_end);
    auto r = f0->Follow(a_end, 1 << 20, milliseconds(300));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_TRUE(r->bytes.empty()) << "followed " << r->bytes.size() << " unacknowledged bytes";
    EXPECT_EQ(r->frontier, a_end);
  }  // writer 1 dies
  c.Stop(0);
  ASSERT_TRUE(c.Start(1));
  ASSERT_TRUE(c.Start(2));
  const std::string cc(8 * kBlock, 'C');
  auto w2 = OpenWriter(c);
  ASSERT_TRUE(w2);
  ASSERT_EQ(w2->sealed_end(), a_end);  // recovered from nodes 2 and 3, without B
  AppendDurable(*w2, cc);
  ASSERT_TRUE(c.Start(0));  // holds B; writer 2 seals it, which cuts B, and it fills C from its peers
  // Meanwhile and after: node 1's follower sees A, then C, never B.
  const std::string got = FollowTo(*f0, a_end, a_end + cc.size(), w2->durable_lsn(), milliseconds(15000));
  EXPECT_EQ(got, cc);
  // Provoked: nodes stopped and restarted under a writer and a follower
  // (their connections are refused, reset or closed, and time out meanwhile).
  EXPECT_EQ(c.UnexpectedLogLines({"connection refused", "reset", "closed", "timeout"}), "");
}

TEST(Follower, TheAcknowledgedPartialBlockComesAsATail) {
  WriterAndFollower s(3);
  ASSERT_TRUE(s.Start());
  auto& [c, w, f] = s;
  AppendDurable(*w, Bytes(0, 4 * kBlock));
  const std::uint64_t at = w->stream_end();
  std::string image = Bytes(at, 100);
  image.resize(kBlock, '\0');
  ASSERT_TRUE(w->PutTail(at, image, at + 100).ok());
  ASSERT_TRUE(w->WaitDurable(at + 100, milliseconds(10000)).ok());
  ASSERT_EQ(FollowTo(*f, 0, at, at), Bytes(0, at));
  auto b = f->Follow(at, 1 << 20, milliseconds(2000));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_TRUE(b->bytes.empty());
  EXPECT_EQ(b->tail_block, at);
  EXPECT_EQ(b->tail_data_end, at + 100);
  EXPECT_EQ(b->tail_image, image);
  // Asked again with that tail known: nothing newer, an empty batch.
  auto again = f->Follow(at, 1 << 20, milliseconds(100), at + 100);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->bytes.empty());
}

std::uint64_t MaxReleased(InProcessCluster& c) {
  std::uint64_t r = 0;
  for (int i = 0; i < 3; ++i) r = std::max(r, c.node(i).State().released);
  return r;
}

// The pin holds the release: without it, the same release cuts what the
// follower still has to read (the second half proves the first can fail).
TEST(Pins, APinHoldsAReleaseThatWouldCutWhatTheFollowerNeeds) {
  WriterAndFollower s(4);
  ASSERT_TRUE(s.Start());
  auto& [c, w, f] = s;
  AppendDurable(*w, Bytes(0, 64 * kBlock));
  const std::uint64_t end = w->stream_end(), pin = 8 * kBlock, ckpt = 48 * kBlock;
  ASSERT_TRUE(f->SetPin("pageserver-1", pin).ok());
  ASSERT_TRUE(w->WriteCheckpoint(ckpt, "m").ok());
  ASSERT_TRUE(w->Release(ckpt).ok());
  EXPECT_EQ(MaxReleased(c), pin) << "a node released past the lowest pin";
  EXPECT_EQ(FollowTo(*f, pin, end, end), Bytes(pin, end - pin));
  // Pins are durable: a restarted node still holds it and still refuses.
  c.Stop(0);
  ASSERT_TRUE(c.Start(0));
  auto pins = f->ListPins(0);
  ASSERT_TRUE(pins.ok()) << pins.status().ToString();
  ASSERT_EQ(pins->size(), 1u);
  EXPECT_EQ((*pins)[0], (client::PinInfo{"pageserver-1", pin}));
  // Moving it forward lets the next release go that far.
  ASSERT_TRUE(f->SetPin("pageserver-1", 16 * kBlock).ok());
  ASSERT_TRUE(w->Release(ckpt).ok());
  EXPECT_EQ(MaxReleased(c), 16 * kBlock);
  // A pin below the released LSN is refused by name.
  auto below = f->SetPin("late", 4 * kBlock);
  EXPECT_EQ(below.code(), Code::kInvalidArgument) << below.ToString();
  EXPECT_NE(below.message().find("below the released LSN"), std::string::npos) << below.message();
  // Without the pin, the release cuts, and the follower is told so.
  ASSERT_TRUE(f->DropPin("pageserver-1").ok());
  ASSERT_TRUE(w->Release(ckpt).ok());
  EXPECT_EQ(MaxReleased(c), ckpt);
  // Every node (Release returns once W did): then no node holds it.
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  auto min_released = [&] {
    std::uint64_t r = ~0ull;
    for (int i = 0; i < 3; ++i) r = std::min(r, c.node(i).State().released);
    return r;
  };
  while (min_released() < ckpt && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(w->Release(ckpt).ok());
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_EQ(min_released(), ckpt);
  auto gone = f->Follow(16 * kBlock, 1 << 20, milliseconds(100));
  EXPECT_EQ(gone.status().code(), Code::kNotFound) << gone.status().ToString();
  EXPECT_NE(gone.status().message().find("released"), std::string::npos);
}

// A node that lost its disk rebuilds from a peer's released start: it takes
// the peer's pins with its checkpoint, and so keeps refusing the release.
TEST(Pins, ANodeRebuiltFromAPeerTakesItsPins) {
  WriterAndFollower s(5);
  ASSERT_TRUE(s.Start());
  auto& [c, w, f] = s;
  AppendDurable(*w, Bytes(0, 64 * kBlock));
  const std::uint64_t pin = 16 * kBlock, ckpt = 48 * kBlock;
  ASSERT_TRUE(f->SetPin("ps", pin).ok());
  ASSERT_TRUE(w->WriteCheckpoint(ckpt, "m").ok());
  ASSERT_TRUE(w->Release(ckpt).ok());
  ASSERT_EQ(MaxReleased(c), pin);
  c.Stop(2);
  std::error_code ec;
  std::filesystem::remove_all(c.data_dir(2), ec);
  ASSERT_TRUE(c.Start(2));
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(15000);
  std::vector<client::PinInfo> pins;
  while (std::chrono::steady_clock::now() < deadline) {
    auto p = f->ListPins(2);
    if (p.ok() && !p->empty() && c.node(2).State().durable >= w->stream_end()) {
      pins = *p;
      break;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_EQ(pins, (std::vector<client::PinInfo>{{"ps", pin}}));
  EXPECT_EQ(c.node(2).State().released, pin);
  ASSERT_TRUE(w->Release(ckpt).ok());
  EXPECT_EQ(c.node(2).State().released, pin);
  auto only3 = OpenFollower(c, {2});
  EXPECT_EQ(FollowTo(*only3, pin, w->stream_end(), w->stream_end()), Bytes(pin, w->stream_end() - pin));
}

}  // namespace
}  // namespace strata::logservice
