// Runtime: where the log service node, its RPC channels and the client
// library get threads, waits, time and entropy.
//
// Production uses SystemRuntime(): std::thread, std::condition_variable,
// std::chrono::steady_clock and std::random_device, called exactly as the
// code called them before this seam existed. The deterministic simulator
// (logservice/tests/sim/, docs/design/logservice-simulation.md) supplies a
// runtime that runs every Thread as a fiber on one OS thread, on a virtual
// clock, in an order chosen by a seeded RNG: the same node and client code,
// reproducibly interleaved.
//
// Contract for code written against a Runtime (what the simulator relies on):
//   - every thread is a logservice::Thread, every wait a CondVar wait or a
//     Runtime sleep, every reading of the clock Runtime::Now();
//   - a thread blocks only there (or in Network::Connect), and holds no
//     mutex while it does except the one a CondVar wait releases: the
//     simulator runs all threads on one OS thread, and a parked thread
//     holding a mutex would deadlock it.
// Thread-safety: a Runtime is thread-safe. CondVar and Thread behave as
// std::condition_variable and std::thread (a Thread must be joined before
// it is destroyed or assigned to).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace strata::logservice {

class CondVar;

class Runtime {
 public:
  using Clock = std::chrono::steady_clock;
  using TimePoint = Clock::time_point;

  // A started thread; Join() blocks until its function returned.
  class ThreadHandle {
   public:
    virtual ~ThreadHandle() = default;
    virtual void Join() = 0;
  };

  virtual ~Runtime() = default;

  virtual TimePoint Now() = 0;
  virtual void SleepUntil(TimePoint t) = 0;
  void SleepFor(Clock::duration d) { SleepUntil(Now() + d); }
  // Entropy for identifiers (the system's: std::random_device).
  virtual std::uint64_t Random() = 0;
  // `name` is for diagnostics (the simulator's trace); the system runtime ignores it.
  virtual std::unique_ptr<ThreadHandle> StartThread(std::string name, std::function<void()> fn) = 0;

  // Simulated runtimes only: CondVar routes its waits and notifications
  // here when simulated() is true (the system runtime never gets them).
  // Wait releases `lock` while parked and holds it again on return; it
  // returns false if `deadline` (null: none) passed first. Spurious
  // wake-ups are allowed, as for std::condition_variable.
  virtual bool simulated() const { return false; }
  virtual bool Wait(CondVar& cv, std::unique_lock<std::mutex>& lock, const TimePoint* deadline);
  virtual void Notify(CondVar& cv, bool all);
  // Called when a predicate wait finds its predicate already true: a
  // simulated runtime may let other threads run first (it releases and
  // re-acquires `lock`, like a spurious wake-up).
  virtual void YieldPoint(std::unique_lock<std::mutex>& lock);
};

// std::thread, std::condition_variable, steady_clock, random_device.
std::shared_ptr<Runtime> SystemRuntime();

// std::condition_variable through a Runtime (same method names, so call
// sites read as before).
class CondVar {
 public:
  explicit CondVar(Runtime& rt) : sim_(rt.simulated() ? &rt : nullptr) {}
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void notify_one() {
    if (sim_) sim_->Notify(*this, false);
    else cv_.notify_one();
  }
  void notify_all() {
    if (sim_) sim_->Notify(*this, true);
    else cv_.notify_all();
  }
  void wait(std::unique_lock<std::mutex>& lock) {
    if (sim_) sim_->Wait(*this, lock, nullptr);
    else cv_.wait(lock);
  }
  // Returns false if the deadline passed.
  bool wait_until(std::unique_lock<std::mutex>& lock, Runtime::TimePoint deadline) {
    if (sim_) return sim_->Wait(*this, lock, &deadline);
    return cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
  }
  template <typename Pred>
  void wait(std::unique_lock<std::mutex>& lock, Pred pred) {
    if (sim_ && pred()) sim_->YieldPoint(lock);
    while (!pred()) wait(lock);
  }
  template <typename Pred>
  bool wait_until(std::unique_lock<std::mutex>& lock, Runtime::TimePoint deadline, Pred pred) {
    if (sim_ && pred()) sim_->YieldPoint(lock);
    while (!pred())
      if (!wait_until(lock, deadline)) return pred();
    return true;
  }

 private:
  Runtime* sim_;
  std::condition_variable cv_;
};

// std::thread through a Runtime.
class Thread {
 public:
  Thread() = default;
  Thread(Runtime& rt, std::string name, std::function<void()> fn) : h_(rt.StartThread(std::move(name), std::move(fn))) {}
  Thread(Thread&&) noexcept = default;
  Thread& operator=(Thread&& other) noexcept {
    if (h_) std::terminate();  // as std::thread: never drop a running thread
    h_ = std::move(other.h_);
    return *this;
  }
  ~Thread() {
    if (h_) std::terminate();
  }
  bool joinable() const { return h_ != nullptr; }
  void join() {
    h_->Join();
    h_.reset();
  }

 private:
  std::unique_ptr<Runtime::ThreadHandle> h_;
};

}  // namespace strata::logservice
