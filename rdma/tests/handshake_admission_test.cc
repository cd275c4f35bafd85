// HandshakeAdmission on its own: the cap, giving places back, and the
// refusal log's rate limit on an injected clock.
#include "handshake_admission.h"

#include "test_support.h"

namespace strata::rdma::test {
namespace {

TEST(HandshakeAdmission, CapsPendingAndGivesPlacesBack) {
  LogCapture log;
  HandshakeAdmission admission(2, log.Sink());
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  auto a = admission.TryAdmit("a", t0);
  auto b = admission.TryAdmit("b", t0);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(admission.pending(), 2u);
  EXPECT_FALSE(admission.TryAdmit("c", t0));
  EXPECT_EQ(admission.refused(), 1u);
  a->Release();
  a->Release();  // idempotent
  EXPECT_EQ(admission.pending(), 1u);
  {
    auto moved = std::move(*b);  // the place moves with the slot
    EXPECT_FALSE(b->held());
    EXPECT_EQ(admission.pending(), 1u);
  }  // ... and is given back when it is destroyed
  EXPECT_EQ(admission.pending(), 0u);
  EXPECT_TRUE(admission.TryAdmit("d", t0));
}

TEST(HandshakeAdmission, RefusalsAreLoggedOncePerInterval) {
  LogCapture log;
  HandshakeAdmission admission(1, log.Sink());
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  auto held = admission.TryAdmit("first", t0);
  ASSERT_TRUE(held);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(admission.TryAdmit("flood", t0 + std::chrono::seconds(i)));
  ASSERT_EQ(log.Lines().size(), 1u) << "a flood of refusals must not be a flood of lines";
  EXPECT_TRUE(log.Contains("WARN refusing connection from flood: 1 handshakes pending"));
  // The next refusal after the interval says how many went unlogged.
  EXPECT_FALSE(admission.TryAdmit("late", t0 + HandshakeAdmission::kRefusalLogInterval + 1s));
  ASSERT_EQ(log.Lines().size(), 2u);
  EXPECT_TRUE(log.Contains("refused 5 connections in the last 11000 ms (latest from late)")) << log.Lines()[1];
  EXPECT_EQ(admission.refused(), 6u);
}

}  // namespace
}  // namespace strata::rdma::test
