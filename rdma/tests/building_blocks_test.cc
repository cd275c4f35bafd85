// Small pieces: ring allocation, in-order release, buffer pool, addresses.
#include <thread>

#include "ring_allocator.h"
#include "test_support.h"
#include "verbs/verbs_connection.h"

namespace strata::rdma::test {
namespace {

// The verbs backend picks a shard for each new connection from the CM
// thread (accepted connections) and from Connect callers at once: no pick
// may be lost or doubled.
TEST(ShardPicker, ConcurrentPicksStayRoundRobin) {
  constexpr int kThreads = 4, kPicks = 2000000, kShards = 4;
  ShardPicker picker(kShards);
  std::vector<std::array<int, kShards>> counts(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      counts[t].fill(0);
      for (int i = 0; i < kPicks; ++i) ++counts[t][picker.Next()];
    });
  }
  for (auto& th : threads) th.join();
  for (int s = 0; s < kShards; ++s) {
    int total = 0;
    for (int t = 0; t < kThreads; ++t) total += counts[t][s];
    EXPECT_EQ(total, kThreads * kPicks / kShards) << "shard " << s;
  }
  EXPECT_EQ(picker.Next(), 0u) << "picks were lost";
}

TEST(RingAllocator, AllocatesFifoAndWrapsWithPadding) {
  RingAllocator ring(1024, 64, 16);
  EXPECT_EQ(ring.Allocate(400), 0u);    // [0,448)
  EXPECT_EQ(ring.Allocate(400), 448u);  // [448,896)
  EXPECT_FALSE(ring.Allocate(400).has_value());  // would need the head
  ASSERT_TRUE(ring.FreeOldest(1));
  EXPECT_EQ(ring.Allocate(400), 0u);    // skips [896,1024), charged to it
  EXPECT_EQ(ring.used(), 448u + 448u + 128u);
  ASSERT_TRUE(ring.FreeOldest(2));
  EXPECT_EQ(ring.used(), 0u);
  EXPECT_FALSE(ring.FreeOldest(1));  // freeing what was never allocated
  EXPECT_EQ(ring.Allocate(1024), 0u);
  EXPECT_FALSE(ring.Allocate(1).has_value());
}

TEST(RingAllocator, BoundedRegionCount) {
  RingAllocator ring(1 << 20, 64, 2);
  EXPECT_TRUE(ring.Allocate(1).has_value());
  EXPECT_TRUE(ring.Allocate(1).has_value());
  EXPECT_FALSE(ring.Allocate(1).has_value());
}

TEST(InOrderReleaser, ReportsOnlyTheContiguousPrefix) {
  InOrderReleaser r(4);
  const auto a = *r.Arrive(), b = *r.Arrive(), c = *r.Arrive();
  EXPECT_EQ(r.Release(b), 0u);
  EXPECT_EQ(r.Release(c), 0u);
  EXPECT_EQ(r.Release(a), 3u);
  EXPECT_EQ(r.Release(a), 0u);  // double release is ignored
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(r.Arrive().has_value());
  EXPECT_FALSE(r.Arrive().has_value());
}

TEST(BufferPool, HandsOutEachBufferOnceAndTakesThemBack) {
  size_t registered = 0;
  BufferPool pool(100, 3, [&](std::span<std::byte> slab) { registered = slab.size(); });
  EXPECT_EQ(registered, 3 * pool.buffer_size());
  EXPECT_GE(pool.buffer_size(), 100u);
  std::vector<PooledBuffer> held;
  for (int i = 0; i < 3; ++i) held.push_back(std::move(*pool.TryAcquire()));
  EXPECT_FALSE(pool.TryAcquire().has_value());
  held.pop_back();
  EXPECT_EQ(pool.available(), 1u);
  EXPECT_TRUE(pool.TryAcquire().has_value());
}

TEST(Endpoint, ParsesSchemesHostsAndPorts) {
  auto a = Endpoint::Parse("rdma://10.0.0.5:7000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->scheme, Scheme::kRdma);
  EXPECT_EQ(a->host, "10.0.0.5");
  EXPECT_EQ(a->port, 7000);
  auto b = Endpoint::Parse("tcp://[::1]:0");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->ToString(), "tcp://[::1]:0");
  EXPECT_EQ(Endpoint::Parse("auto://h:1")->scheme, Scheme::kAuto);
  for (const char* bad : {"10.0.0.5:7000", "udp://h:1", "tcp://h", "tcp://:1", "tcp://h:70000", "tcp://h:1x"}) {
    EXPECT_EQ(Endpoint::Parse(bad).status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(Options, TransportRefusesUnusableOptions) {
  TransportOptions o;
  EXPECT_EQ(Transport::Create(o).status().code(), StatusCode::kInvalidArgument);  // no secret
  o.secret = "x";
  o.cluster_id = std::string(65, 'c');
  EXPECT_EQ(Transport::Create(o).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace strata::rdma::test
