// Published<T>: a value that every session reads on every event and an
// administrator replaces now and then (the audit filter).
//
// std::atomic<std::shared_ptr> would do, but libstdc++ implements its load
// with a spin lock plus a reference count shared by all readers: with many
// sessions on few CPUs, a reader preempted inside that lock makes the others
// spin out their time slices (measured: point selects lost half their
// throughput). Here a reader pays one atomic load of a generation number; it
// copies the shared_ptr, under a mutex, only after a publish.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>

namespace strata_audit {

template <typename T>
class Published {
 public:
  void publish(std::shared_ptr<const T> value) {
    std::lock_guard<std::mutex> lk(mu_);
    value_ = std::move(value);
    generation_.store(next_generation(), std::memory_order_release);
  }

  // The latest published value. The reference stays valid until this
  // thread's next read() (of any Published<T>).
  const std::shared_ptr<const T> &read() const {
    thread_local Cache cache;
    if (cache.owner != this ||
        cache.generation != generation_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lk(mu_);
      cache.value = value_;
      cache.owner = this;
      cache.generation = generation_.load(std::memory_order_relaxed);
    }
    return cache.value;
  }

 private:
  struct Cache {
    const void *owner = nullptr;
    uint64_t generation = 0;
    std::shared_ptr<const T> value;
  };

  // Generations are unique across instances, so a cache filled from an
  // instance that has died never matches a new one at the same address.
  static uint64_t next_generation() {
    static std::atomic<uint64_t> counter{0};
    return counter.fetch_add(1, std::memory_order_relaxed) + 1;
  }

  mutable std::mutex mu_;
  std::shared_ptr<const T> value_;
  std::atomic<uint64_t> generation_{0};
};

}  // namespace strata_audit
