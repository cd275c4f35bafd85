// The fake NIC itself, at the QueuePair level (no connection engine): that
// it is asynchronous, reads sources at transmit time, poisons what the
// consumer may not touch, orders like RC hardware and nothing more, and
// injects faults that replay from the seed.
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "test_support.h"
#include "verbs/fake_nic.h"

namespace strata::rdma::test {
namespace {

constexpr uint32_t kSlot = 256;
constexpr int kSlots = 64;

// One end of a pair: a registered region split into send and receive slots.
struct End {
  std::unique_ptr<QueuePair> qp;
  std::vector<std::byte> mem = std::vector<std::byte>(2 * kSlots * kSlot);
  uint32_t lkey = 0;

  void Register() {
    auto k = qp->Register(mem, /*remote_write=*/true);
    ASSERT_TRUE(k.ok());
    lkey = k->lkey;
  }
  std::span<std::byte> send_slot(int i) { return {mem.data() + i * kSlot, kSlot}; }
  std::span<std::byte> recv_slot(int i) { return {mem.data() + (kSlots + i) * kSlot, kSlot}; }
  Status PostRecv(int i) { return qp->PostRecv(1000 + i, recv_slot(i), lkey); }
  Status Send(int i, uint32_t len, uint8_t fill) {
    std::memset(send_slot(i).data(), fill, len);
    return qp->PostSend(i, send_slot(i).first(len), lkey);
  }
  // Polls until `n` completions arrived (or 5 s passed).
  std::vector<Completion> Wait(size_t n) {
    std::vector<Completion> got;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (got.size() < n && std::chrono::steady_clock::now() < deadline) {
      Completion c[16];
      const int k = qp->Poll(c, 16).value();
      for (int i = 0; i < k; ++i) got.push_back(c[i]);
      if (k <= 0) std::this_thread::sleep_for(50us);
    }
    return got;
  }
  std::vector<Completion> PollNow() {
    Completion c[16];
    const int k = qp->Poll(c, 16).value();
    return std::vector<Completion>(c, c + k);
  }
};

class FakeNicQp : public ::testing::Test {
 protected:
  void Make(FakeNicOptions o = {}, uint32_t send_depth = 256, uint32_t recv_depth = 256) {
    nic_ = std::make_unique<FakeNic>(std::move(o));
    auto [x, y] = nic_->CreatePair(send_depth, recv_depth);
    a_.qp = std::move(x);
    b_.qp = std::move(y);
    a_.Register();
    b_.Register();
  }
  std::unique_ptr<FakeNic> nic_;
  End a_, b_;
};

TEST_F(FakeNicQp, PostReturnsBeforeAnythingIsTransmitted) {
  Make();
  nic_->Hold(0, 0, FakeNic::Stage::kTransmit, true);
  ASSERT_TRUE(b_.PostRecv(0).ok());
  ASSERT_TRUE(a_.Send(0, 100, 0x11).ok());
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(a_.PollNow().empty()) << "send completed while its transmission was held";
  EXPECT_TRUE(b_.PollNow().empty()) << "data arrived while its transmission was held";
  nic_->Hold(0, 0, FakeNic::Stage::kTransmit, false);
  auto sent = a_.Wait(1);
  auto got = b_.Wait(1);
  ASSERT_EQ(sent.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(sent[0].ok());
  EXPECT_EQ(got[0].byte_len, 100u);
}

TEST_F(FakeNicQp, SourceIsReadAtTransmitNotAtPost) {
  Make();
  nic_->Hold(0, 0, FakeNic::Stage::kTransmit, true);
  ASSERT_TRUE(b_.PostRecv(0).ok());
  ASSERT_TRUE(a_.Send(0, 64, 0xAA).ok());
  std::memset(a_.send_slot(0).data(), 0xBB, 64);  // reuse before transmission: a bug
  nic_->Hold(0, 0, FakeNic::Stage::kTransmit, false);
  ASSERT_EQ(b_.Wait(1).size(), 1u);
  EXPECT_EQ(b_.recv_slot(0)[0], std::byte{0xBB}) << "the NIC copied the source when it was posted";
  ASSERT_EQ(nic_->violations().size(), 1u);
  EXPECT_NE(nic_->violations()[0].find("changed between ibv_post_send and transmission"), std::string::npos)
      << nic_->violations()[0];
}

TEST_F(FakeNicQp, ReceiveBufferHoldsPoisonUntilItsCompletion) {
  Make();
  std::memset(b_.recv_slot(0).data(), 0x00, kSlot);
  ASSERT_TRUE(b_.PostRecv(0).ok());
  EXPECT_NE(b_.recv_slot(0)[0], std::byte{0x00}) << "a posted receive buffer still shows its old bytes";
  const std::vector<std::byte> poison(b_.recv_slot(0).begin(), b_.recv_slot(0).end());
  ASSERT_TRUE(a_.Send(0, 10, 0x5A).ok());
  auto got = b_.Wait(1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].byte_len, 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(b_.recv_slot(0)[i], std::byte{0x5A});
  // Past byte_len the buffer stays poisoned.
  EXPECT_TRUE(std::equal(poison.begin() + 10, poison.end(), b_.recv_slot(0).begin() + 10));
}

TEST_F(FakeNicQp, SendBufferWrittenBeforeItsCompletionIsReported) {
  Make();
  nic_->Hold(0, 0, FakeNic::Stage::kAck, true);
  ASSERT_TRUE(b_.PostRecv(0).ok());
  ASSERT_TRUE(a_.Send(0, 32, 0x77).ok());
  ASSERT_EQ(b_.Wait(1).size(), 1u);           // transmitted and delivered ...
  EXPECT_TRUE(a_.PollNow().empty());          // ... but not yet completed at the sender
  EXPECT_NE(a_.send_slot(0)[0], std::byte{0x77}) << "the send buffer is poisoned after transmission";
  std::memset(a_.send_slot(0).data(), 0x01, 32);  // reuse before completion: a bug
  nic_->Hold(0, 0, FakeNic::Stage::kAck, false);
  ASSERT_EQ(a_.Wait(1).size(), 1u);
  ASSERT_EQ(nic_->violations().size(), 1u);
  EXPECT_NE(nic_->violations()[0].find("written after transmission, before its completion"), std::string::npos)
      << nic_->violations()[0];
}

TEST_F(FakeNicQp, SendQueueCompletesInPostingOrder) {
  Make();
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(b_.PostRecv(i).ok());
  for (int i = 0; i < kSlots; ++i) ASSERT_TRUE(a_.Send(i, 1 + i, static_cast<uint8_t>(i)).ok());
  auto sent = a_.Wait(kSlots);
  auto got = b_.Wait(kSlots);
  ASSERT_EQ(sent.size(), size_t{kSlots});
  ASSERT_EQ(got.size(), size_t{kSlots});
  for (int i = 0; i < kSlots; ++i) {
    EXPECT_EQ(sent[i].wr_id, uint64_t(i));
    EXPECT_EQ(got[i].wr_id, uint64_t(1000 + i));  // receives consumed in posting order
    EXPECT_EQ(got[i].byte_len, uint32_t(1 + i));
    EXPECT_EQ(b_.recv_slot(i)[0], std::byte(i));
  }
}

// The peer may handle a message and answer before the sender sees its own
// send completion: nothing orders a QP's send and receive completions.
TEST_F(FakeNicQp, PeerMayAnswerBeforeTheSendCompletes) {
  FakeNicOptions o;
  o.delay_probability = 0.5;
  Make(o);
  int answered_first = 0;
  for (int round = 0; round < 200; ++round) {
    ASSERT_TRUE(a_.PostRecv(0).ok());
    ASSERT_TRUE(b_.PostRecv(0).ok());
    ASSERT_TRUE(a_.Send(0, 8, 1).ok());
    ASSERT_EQ(b_.Wait(1).size(), 1u);
    ASSERT_TRUE(b_.Send(0, 8, 2).ok());
    auto at_a = a_.Wait(2);
    ASSERT_EQ(at_a.size(), 2u);
    if (at_a[0].op == Completion::Op::kRecv) ++answered_first;
    ASSERT_EQ(b_.Wait(1).size(), 1u);
  }
  EXPECT_GT(answered_first, 0) << "the sender always saw its completion before the answer";
}

TEST_F(FakeNicQp, CompletionsAreReorderedAcrossQueuePairs) {
  Make();
  auto [x, y] = nic_->CreatePair();
  End c, d;
  c.qp = std::move(x);
  d.qp = std::move(y);
  c.Register();
  d.Register();
  int second_first = 0;
  for (int round = 0; round < 100; ++round) {
    ASSERT_TRUE(b_.PostRecv(0).ok());
    ASSERT_TRUE(d.PostRecv(0).ok());
    ASSERT_TRUE(a_.Send(0, 8, 1).ok());  // pair 0 posts first
    ASSERT_TRUE(c.Send(0, 8, 1).ok());
    bool b_seen = false, d_seen = false;
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!(b_seen && d_seen) && std::chrono::steady_clock::now() < deadline) {
      if (!b_seen && !b_.PollNow().empty()) b_seen = true;
      if (!d_seen && !d.PollNow().empty()) {
        d_seen = true;
        if (!b_seen) ++second_first;
      }
    }
    ASSERT_TRUE(b_seen && d_seen);
    ASSERT_EQ(a_.Wait(1).size(), 1u);
    ASSERT_EQ(c.Wait(1).size(), 1u);
  }
  EXPECT_GT(second_first, 0) << "the queue pair that posted first always completed first";
}

TEST_F(FakeNicQp, PostingBeyondTheQueueDepthFailsWithEnomem) {
  Make({}, /*send_depth=*/4, /*recv_depth=*/2);
  nic_->Hold(0, 0, FakeNic::Stage::kTransmit, true);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(a_.Send(i, 8, 0).ok());
  Status s = a_.Send(4, 8, 0);
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_EQ(s.message().rfind("ibv_post_send failed: ENOMEM", 0), 0u) << s.ToString();
  ASSERT_TRUE(b_.PostRecv(0).ok());
  ASSERT_TRUE(b_.PostRecv(1).ok());
  s = b_.PostRecv(2);
  EXPECT_EQ(s.message().rfind("ibv_post_recv failed: ENOMEM", 0), 0u) << s.ToString();
}

TEST_F(FakeNicQp, SendWithoutAReceiveWaitsForOneAsWithInfiniteRnrRetry) {
  Make();
  ASSERT_TRUE(a_.Send(0, 8, 3).ok());
  std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(a_.PollNow().empty()) << "completed although the peer had no receive posted";
  EXPECT_GE(nic_->stats().rnr_waits, 1u);
  ASSERT_TRUE(b_.PostRecv(0).ok());
  auto sent = a_.Wait(1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(sent[0].ok());
}

TEST_F(FakeNicQp, ErrorCompletionMovesTheQueuePairToErrorAndFlushesTheRest) {
  FakeNicOptions o;
  o.faults.push_back({FakeFault::Kind::kRetryExceeded, /*side=*/0, /*pair=*/-1, /*nth=*/3});
  Make(o);
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(b_.PostRecv(i).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(a_.PostRecv(i).ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(a_.Send(i, 8, 0).ok());
  auto got = a_.Wait(7);
  ASSERT_EQ(got.size(), 7u);
  std::vector<std::pair<uint64_t, WcStatus>> sends;
  int recv_flushed = 0;
  for (const auto& c : got) {
    if (c.wr_id >= 1000) {
      EXPECT_EQ(c.status, WcStatus::kWrFlushErr);
      ++recv_flushed;
    } else {
      sends.emplace_back(c.wr_id, c.status);
    }
  }
  EXPECT_EQ(recv_flushed, 2);
  const std::vector<std::pair<uint64_t, WcStatus>> want = {{0, WcStatus::kSuccess},
                                                           {1, WcStatus::kSuccess},
                                                           {2, WcStatus::kRetryExcErr},
                                                           {3, WcStatus::kWrFlushErr},
                                                           {4, WcStatus::kWrFlushErr}};
  EXPECT_EQ(sends, want);
  EXPECT_EQ(b_.Wait(2).size(), 2u);  // the peer got the first two only
  EXPECT_TRUE(b_.PollNow().empty());
}

TEST_F(FakeNicQp, WriteOutsideTheTargetsRegionsIsARemoteAccessError) {
  Make();
  ASSERT_TRUE(b_.PostRecv(0).ok());
  std::vector<std::byte> elsewhere(64);
  ASSERT_TRUE(a_.qp->PostWriteImm(7, a_.send_slot(0).first(64), a_.lkey, reinterpret_cast<uint64_t>(elsewhere.data()),
                                  b_.lkey, 0).ok());
  auto sent = a_.Wait(1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(WcStatusName(sent[0].status), "IBV_WC_REM_ACCESS_ERR");
}

TEST_F(FakeNicQp, PollFailureIsInjected) {
  FakeNicOptions o;
  o.faults.push_back({FakeFault::Kind::kPollFails, 0, -1, /*nth=*/1});
  Make(o);
  Completion c[4];
  auto polled = a_.qp->Poll(c, 4);
  ASSERT_FALSE(polled.ok());
  EXPECT_EQ(polled.status().message().rfind("ibv_poll_cq failed", 0), 0u) << polled.status().ToString();
}

// Which posts fail is a function of the seed alone.
std::vector<int> FailedPosts(uint64_t seed) {
  FakeNicOptions o;
  o.seed = seed;
  o.faults.push_back({FakeFault::Kind::kPostSendFails, -1, -1, 0, /*probability=*/0.2, ENOMEM});
  FakeNic nic(o);
  auto [a, b] = nic.CreatePair(4096, 16);
  std::vector<std::byte> mem(64);
  auto keys = a->Register(mem, false);
  std::vector<int> failed;
  for (int i = 0; i < 300; ++i)
    if (!a->PostSend(i, mem, keys->lkey).ok()) failed.push_back(i);
  return failed;
}

TEST_F(FakeNicQp, InjectedFaultsReplayFromTheSeed) {
  const auto first = FailedPosts(7);
  EXPECT_GT(first.size(), 20u);
  EXPECT_LT(first.size(), 100u);
  EXPECT_EQ(FailedPosts(7), first);
  EXPECT_NE(FailedPosts(8), first);
}

}  // namespace
}  // namespace strata::rdma::test
