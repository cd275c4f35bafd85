// Protocol timers on an injected clock (TransportOptions::clock): keepalive
// and handshake deadlines fire when the clock says so, and not before, no
// matter how much real time passes. Nothing here depends on the machine's
// speed: every "not yet" is checked with the clock frozen, every "now" with
// a generous real-time bound.
#include <atomic>

#include "test_support.h"

namespace strata::rdma::test {
namespace {

// A steady clock that only moves when told to. Thread-safe.
class ManualClock {
 public:
  std::chrono::steady_clock::time_point Now() const {
    return base_ + std::chrono::nanoseconds(offset_ns_.load(std::memory_order_acquire));
  }
  void Advance(std::chrono::milliseconds d) {
    offset_ns_.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(), std::memory_order_acq_rel);
  }
  std::function<std::chrono::steady_clock::time_point()> Function() {
    return [this] { return Now(); };
  }

 private:
  const std::chrono::steady_clock::time_point base_ = std::chrono::steady_clock::now();
  std::atomic<int64_t> offset_ns_{0};
};

class ClockTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TransportOptions o = TestOptions(&log_);
    o.clock = clock_.Function();
    o.keepalive_interval = 100ms;
    o.keepalive_timeout = 1000ms;
    o.handshake_timeout = 200ms;
    server_ = MakeTransport(o);
    auto l = server_->Listen("tcp://127.0.0.1:0", [](const std::shared_ptr<Connection>&) { return ConnectionHandlers{}; });
    ASSERT_TRUE(l.ok());
    listener_ = std::move(l).value();
  }
  void TearDown() override {
    listener_.reset();
    server_.reset();
  }
  uint16_t port() const { return listener_->endpoint().port; }

  ManualClock clock_;  // outlives the transport
  LogCapture log_;
  std::unique_ptr<Transport> server_;
  std::unique_ptr<Listener> listener_;
};

TEST_F(ClockTest, KeepaliveFollowsTheInjectedClock) {
  RawClient raw(port());
  ASSERT_TRUE(raw.connected());
  ASSERT_TRUE(raw.Handshake("test-secret", "test-cluster"));  // then silent: never answers a PING
  FrameHeader h;
  std::vector<std::byte> payload;
  // Frozen clock: 6x the keepalive interval and over half the keepalive
  // timeout pass in real time, yet no PING and no timeout.
  EXPECT_FALSE(raw.ReadFrame(&h, &payload, 600ms)) << "frame of type " << static_cast<int>(h.type);
  EXPECT_FALSE(log_.Contains("peer silent"));
  // One interval on the clock: the server pings (the socket is still open).
  clock_.Advance(150ms);
  ASSERT_TRUE(raw.ReadFrame(&h, &payload, 10s));
  EXPECT_EQ(h.type, wire::FrameType::kPing);
  // Past the timeout on the clock: reported with the clock's own numbers.
  clock_.Advance(2000ms);
  EXPECT_TRUE(log_.WaitFor("peer silent for 2150 ms (keepalive timeout 1000 ms)", 10s));
  EXPECT_TRUE(raw.WaitClosed(10s));
}

TEST_F(ClockTest, HandshakeDeadlineFollowsTheInjectedClock) {
  RawClient raw(port());
  ASSERT_TRUE(raw.connected());
  FrameHeader h;
  std::vector<std::byte> payload;
  ASSERT_TRUE(raw.ReadFrame(&h, &payload, 10s));
  ASSERT_EQ(h.type, wire::FrameType::kChallenge);
  // Never answered; 500 ms of real time is 2.5x the 200 ms handshake timeout.
  EXPECT_FALSE(raw.WaitClosed(500ms)) << "closed although the injected clock did not move";
  EXPECT_FALSE(log_.Contains("handshake did not complete"));
  clock_.Advance(250ms);
  EXPECT_TRUE(log_.WaitFor("handshake did not complete within 200 ms", 10s));
  EXPECT_TRUE(raw.WaitClosed(10s));
}

}  // namespace
}  // namespace strata::rdma::test
