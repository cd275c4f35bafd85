// Unit tests of the strong-sync latency histogram (strata_sync_histogram.h):
// bucket bounds, quantiles and the status string.
#include "strata_sync_histogram.h"

#include <gtest/gtest.h>

#include <cstdint>

using strata::sync::Histogram;

// Every value lands in a bucket whose bounds contain it, and a bucket's
// upper bound is at most 25% above its lower bound (from 4 µs on).
TEST(StrataSyncHistogram, BucketsContainTheirValues) {
  for (std::uint64_t v = 0; v < 200000; v += (v < 1000 ? 1 : 97)) {
    const std::size_t b = Histogram::bucket_of(v);
    ASSERT_LE(v, Histogram::upper_of(b)) << v;
    if (b > 0) {
      ASSERT_GT(v, Histogram::upper_of(b - 1)) << v;
    }
    if (v >= 4) {
      ASSERT_LE(Histogram::upper_of(b), v + v / 4) << v;
    }
  }
}

TEST(StrataSyncHistogram, HugeValuesGoToTheLastBucket) {
  EXPECT_EQ(Histogram::bucket_of(~std::uint64_t{0}), Histogram::kBuckets - 1);
  Histogram h;
  h.add(~std::uint64_t{0} >> 1);
  EXPECT_EQ(h.count(), 1u);
  EXPECT_EQ(h.quantile(1.0), Histogram::upper_of(Histogram::kBuckets - 1));
}

TEST(StrataSyncHistogram, Quantiles) {
  Histogram h;
  EXPECT_EQ(h.quantile(0.99), 0u);  // empty
  for (int i = 0; i < 98; i++) h.add(100);
  h.add(5000);
  h.add(20000);
  EXPECT_EQ(h.count(), 100u);
  EXPECT_EQ(h.sum(), 98u * 100 + 5000 + 20000);
  EXPECT_EQ(h.max(), 20000u);
  const std::uint64_t p50 = h.quantile(0.5);
  EXPECT_GE(p50, 100u);
  EXPECT_LE(p50, 125u);
  const std::uint64_t p99 = h.quantile(0.99);
  EXPECT_GE(p99, 5000u);
  EXPECT_LE(p99, 6250u);
  EXPECT_GE(h.quantile(1.0), 20000u);
}

TEST(StrataSyncHistogram, StringListsNonEmptyBuckets) {
  Histogram h;
  EXPECT_EQ(h.to_string(), "");
  h.add(0);
  h.add(3);
  h.add(3);
  h.add(9);
  EXPECT_EQ(h.to_string(), "0:1 3:2 9:1");
}
