// FixedQueue: a FIFO with capacity fixed at construction, so the per-message
// send path never allocates. Not thread-safe; the owner locks.
#pragma once

#include <cassert>
#include <cstddef>
#include <utility>
#include <vector>

namespace strata::rdma {

template <typename T>
class FixedQueue {
 public:
  explicit FixedQueue(size_t capacity = 0) : slots_(capacity) {}

  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == slots_.size(); }
  size_t size() const { return count_; }
  size_t capacity() const { return slots_.size(); }

  T& operator[](size_t i) { assert(i < count_); return slots_[(first_ + i) % slots_.size()]; }
  T& front() { return (*this)[0]; }
  T& back() { return (*this)[count_ - 1]; }

  // Raises the capacity to `capacity` (never lowers it), keeping the
  // elements in order. Allocates: for setup code, not the hot path.
  void Grow(size_t capacity) {
    if (capacity <= slots_.size()) return;
    std::vector<T> bigger(capacity);
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    first_ = 0;
  }

  // Caller checks !full().
  T& push_back(T value) {
    assert(!full());
    T& slot = slots_[(first_ + count_) % slots_.size()];
    slot = std::move(value);
    ++count_;
    return slot;
  }
  T pop_front() {
    assert(!empty());
    T value = std::move(slots_[first_]);
    slots_[first_] = T();
    first_ = (first_ + 1) % slots_.size();
    --count_;
    return value;
  }

 private:
  std::vector<T> slots_;
  size_t first_ = 0, count_ = 0;
};

}  // namespace strata::rdma
