/* Strata strong sync: a latency histogram for status variables.

   Pure logic, no MySQL headers (unit tested in tests/histogram_test.cc).
   Buckets are log-linear: values 0..3 µs have a bucket each, then every
   power of two is split into four, so a bucket's upper bound is at most 25%
   above its lower bound, from 1 µs to about 10^10 µs in kBuckets buckets.
   Counts only grow; a benchmark takes the difference of two snapshots
   (to_string() / parse()) to get the distribution of one run.
   Not thread-safe: the caller holds its lock. */
#ifndef STRATA_SYNC_HISTOGRAM_H
#define STRATA_SYNC_HISTOGRAM_H

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

namespace strata::sync {

class Histogram {
 public:
  static constexpr std::size_t kBuckets = 4 + 4 * 32;

  static std::size_t bucket_of(std::uint64_t us) {
    if (us < 4) return static_cast<std::size_t>(us);
    const int e = 63 - std::countl_zero(us);  // 2^e <= us < 2^(e+1), e >= 2
    const std::size_t sub = (us >> (e - 2)) & 3;
    const std::size_t b = 4 + static_cast<std::size_t>(e - 2) * 4 + sub;
    return b < kBuckets ? b : kBuckets - 1;
  }
  /** The largest value that falls in bucket b. */
  static std::uint64_t upper_of(std::size_t b) {
    if (b < 4) return b;
    const std::size_t e = (b - 4) / 4 + 2, sub = (b - 4) % 4;
    return ((std::uint64_t{4} + sub + 1) << (e - 2)) - 1;
  }

  void add(std::uint64_t us) {
    m_counts[bucket_of(us)]++;
    m_total++;
    m_sum += us;
    if (us > m_max) m_max = us;
  }
  std::uint64_t count() const { return m_total; }
  std::uint64_t sum() const { return m_sum; }
  std::uint64_t max() const { return m_max; }

  /** The upper bound of the bucket holding the q-quantile (0 < q <= 1);
      0 if empty. */
  std::uint64_t quantile(double q) const {
    if (m_total == 0) return 0;
    const double want = q * static_cast<double>(m_total);
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBuckets; b++) {
      seen += m_counts[b];
      if (static_cast<double>(seen) >= want && m_counts[b] > 0)
        return upper_of(b);
    }
    return upper_of(kBuckets - 1);
  }

  /** "upper:count upper:count ..." for the non-empty buckets, ascending. */
  std::string to_string() const {
    std::string s;
    char buf[48];
    for (std::size_t b = 0; b < kBuckets; b++) {
      if (m_counts[b] == 0) continue;
      std::snprintf(buf, sizeof(buf), "%s%llu:%llu", s.empty() ? "" : " ",
                    static_cast<unsigned long long>(upper_of(b)),
                    static_cast<unsigned long long>(m_counts[b]));
      s += buf;
    }
    return s;
  }

 private:
  std::array<std::uint64_t, kBuckets> m_counts{};
  std::uint64_t m_total = 0, m_sum = 0, m_max = 0;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_HISTOGRAM_H
