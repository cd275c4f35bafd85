// RingAllocator: contiguous regions carved from a circular buffer, freed in
// allocation (FIFO) order. Used for the per-connection send buffer (frames
// leave the wire in order) and for the bulk ring (the receiver releases
// bulk frames in order, see InOrderReleaser).
//
// A region never wraps: if it does not fit before the end, the tail of the
// buffer is skipped and charged to that region, so Free() of the oldest
// region returns the skipped bytes too. Not thread-safe; the owner locks.
#pragma once

#include <cassert>
#include <cstdint>
#include <optional>
#include <vector>

namespace strata::rdma {

class RingAllocator {
 public:
  RingAllocator() = default;
  RingAllocator(uint32_t capacity, uint32_t align, uint32_t max_regions)
      : capacity_(capacity), align_(align), charges_(max_regions) {}

  // Offset of a region of `size` bytes, or nullopt if it does not fit now.
  std::optional<uint32_t> Allocate(uint32_t size) {
    const uint64_t want = (uint64_t{size} + align_ - 1) / align_ * align_;
    if (want == 0 || want > capacity_ || count_ == charges_.size()) return std::nullopt;
    uint64_t offset = head_, charge = want;
    if (head_ + want > capacity_) {  // skip the tail, start at 0
      offset = 0;
      charge = want + (capacity_ - head_);
    }
    if (used_ + charge > capacity_) return std::nullopt;
    charges_[(first_ + count_) % charges_.size()] = static_cast<uint32_t>(charge);
    ++count_;
    used_ += charge;
    head_ = static_cast<uint32_t>((offset + want) % capacity_);
    return static_cast<uint32_t>(offset);
  }

  // Frees the `n` oldest regions. Returns false (and frees nothing) if fewer
  // than n are allocated: the caller treats that as a protocol violation.
  bool FreeOldest(uint32_t n) {
    if (n > count_) return false;
    for (uint32_t i = 0; i < n; ++i) {
      used_ -= charges_[first_];
      first_ = (first_ + 1) % charges_.size();
      --count_;
    }
    if (count_ == 0) {  // empty: restart at 0 so large regions fit again
      assert(used_ == 0);
      head_ = 0;
    }
    return true;
  }

  uint32_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  uint32_t regions() const { return count_; }

 private:
  uint32_t capacity_ = 0;
  uint32_t align_ = 1;
  std::vector<uint32_t> charges_;  // bytes charged per live region, FIFO
  uint32_t first_ = 0, count_ = 0, head_ = 0;
  uint64_t used_ = 0;
};

// InOrderReleaser: the receiver may release bulk messages in any order, but
// ring space goes back to the sender strictly oldest-first. Tracks which of
// the outstanding messages (by arrival index) are released and reports how
// many leading ones became free. Not thread-safe; the owner locks.
class InOrderReleaser {
 public:
  explicit InOrderReleaser(uint32_t max_outstanding = 0) : released_(max_outstanding, false) {}

  // Registers the next arrival; returns its index, or nullopt if full.
  std::optional<uint64_t> Arrive() {
    if (next_ - oldest_ >= released_.size()) return std::nullopt;
    released_[next_ % released_.size()] = false;
    return next_++;
  }
  // Marks `index` released; returns how many oldest arrivals are now free.
  uint32_t Release(uint64_t index) {
    if (index < oldest_ || index >= next_) return 0;
    released_[index % released_.size()] = true;
    uint32_t freed = 0;
    while (oldest_ < next_ && released_[oldest_ % released_.size()]) {
      ++oldest_;
      ++freed;
    }
    return freed;
  }
  uint64_t outstanding() const { return next_ - oldest_; }

 private:
  std::vector<bool> released_;
  uint64_t oldest_ = 0, next_ = 0;
};

}  // namespace strata::rdma
