// Scheduler: the deterministic core of the log service simulator
// (docs/design/logservice-simulation.md, section 4).
//
// Every thread the node and the client library start through a simulated
// Runtime (RuntimeFor) is a fiber (ucontext, its own stack) on the one OS
// thread that calls Run(). A fiber runs until it blocks in a CondVar wait,
// a sleep, a join or a simulated connect; then Run() picks the next
// runnable fiber with the seeded RNG or, when none is runnable, moves the
// virtual clock to the next event and runs it in the scheduler's own
// context (network deliveries, timers, faults). Nothing runs concurrently,
// so an execution is a function of the seed.
//
// Exploration (all from the seed): the next fiber is chosen at random among
// the runnable ones; an event due now may run before them; a predicate wait
// that would not block may yield; a woken fiber may stall for a while (a
// descheduled thread); a process may be paused (its fibers and the handlers
// of its connections wait until it resumes).
//
// Not thread-safe: one OS thread per Scheduler.
#pragma once

#include <ucontext.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/runtime.h"

namespace strata::logservice::sim {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;
using Duration = Clock::duration;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Seeded randomness with the helpers the simulator uses.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : g_(seed) {}
  std::uint64_t Next() { return g_(); }
  // Uniform in [lo, hi].
  std::uint64_t Uniform(std::uint64_t lo, std::uint64_t hi) { return lo + (hi > lo ? g_() % (hi - lo + 1) : 0); }
  bool Chance(double p) { return p > 0 && (g_() >> 11) * (1.0 / 9007199254740992.0) < p; }
  std::size_t Pick(std::size_t n) { return static_cast<std::size_t>(g_() % n); }
  Duration Micros(std::uint64_t lo, std::uint64_t hi) { return microseconds(Uniform(lo, hi)); }

 private:
  std::mt19937_64 g_;
};

struct SchedulerOptions {
  double yield_chance = 0.05;        // a predicate wait that would not block lets others run first
  double stall_chance = 0.01;        // a woken fiber is descheduled ...
  std::uint64_t stall_max_us = 20000;  // ... for up to this long
  double event_first_chance = 0.3;   // an event due now runs before the runnable fibers
  bool print_trace = false;          // every trace record to stdout as it happens
  std::size_t trace_tail = 200;      // records kept for a failure report
};

class Scheduler {
 public:
  struct Fiber;
  using FiberPtr = std::shared_ptr<Fiber>;

  Scheduler(std::uint64_t seed, SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  TimePoint now() const { return now_; }
  Rng& rng() { return rng_; }
  const SchedulerOptions& options() const { return opt_; }

  // ---- processes (simulated machines / OS processes) ----
  int AddProcess(std::string name);
  const std::string& ProcessName(int p) const { return processes_[p].name; }
  int process_count() const { return static_cast<int>(processes_.size()); }
  // Freezes the process until now + d: its fibers do not run and handlers
  // of its connections are delayed (SIGSTOP). Extends an ongoing pause.
  void Pause(int p, Duration d);
  TimePoint PausedUntil(int p) const { return processes_[p].paused_until; }
  bool Paused(int p) const { return processes_[p].paused_until > now_; }
  // An extra delay before a woken fiber runs, by its name (the simulation
  // uses it for disk latency: a node's group commit thread wakes only after
  // its "fdatasync" took its time).
  void SetWakeDelay(std::function<Duration(const std::string& fiber_name)> f) { wake_delay_ = std::move(f); }
  // The Runtime a node or client of process p runs on.
  std::shared_ptr<Runtime> RuntimeFor(int p);

  // ---- fibers ----
  FiberPtr Spawn(int process, std::string name, std::function<void()> fn);
  // The running fiber's process; -1 in the scheduler's own context.
  int CurrentProcess() const;
  bool InFiber() const { return current_ != nullptr; }
  std::string CurrentName() const;

  // Blocking calls: only from a fiber.
  void Join(Fiber& f);
  void SleepUntil(TimePoint t);
  bool Wait(CondVar& cv, std::unique_lock<std::mutex>& lock, const TimePoint* deadline);
  void Notify(CondVar& cv, bool all);
  void YieldPoint(std::unique_lock<std::mutex>& lock);

  // ---- events (run in the scheduler's context, never block) ----
  void At(TimePoint t, std::function<void()> fn);
  void After(Duration d, std::function<void()> fn) { At(now_ + d, std::move(fn)); }

  // Runs fibers and events until done() is true (checked between steps),
  // a failure is recorded, nothing can ever run again, or a budget runs out.
  enum class RunResult { kDone, kFailed, kStuck, kBudget };
  RunResult Run(const std::function<bool()>& done, TimePoint deadline, std::uint64_t max_steps);

  // ---- failures and the trace ----
  // Records the first failure; Run() returns kFailed at its next step.
  void Fail(std::string what);
  bool failed() const { return !failure_.empty(); }
  const std::string& failure() const { return failure_; }
  void Trace(std::string line);
  std::uint64_t trace_hash() const { return hash_; }
  std::uint64_t steps() const { return steps_; }
  std::vector<std::string> TraceTail() const;
  std::vector<std::string> LiveFibers() const;  // "name (state)" of fibers not finished
  std::size_t live_fibers() const;

 private:
  struct Process {
    std::string name;
    TimePoint paused_until{};
  };
  struct Event {
    TimePoint t;
    std::uint64_t seq;
    std::function<void()> fn;
  };
  struct EventOrder {
    bool operator()(const Event* a, const Event* b) const { return a->t != b->t ? a->t > b->t : a->seq > b->seq; }
  };

  void MakeRunnable(Fiber* f, bool may_stall);
  void Park();  // from the current fiber back to Run()
  void RunFiber(Fiber* f);
  void Hash(std::uint64_t v) { hash_ = (hash_ ^ v) * 0x100000001b3ull; }
  static void Entry();
  void* AllocStack();
  void FreeStack(void* s);

  SchedulerOptions opt_;
  Rng rng_;
  TimePoint now_;
  std::vector<Process> processes_;
  std::vector<std::shared_ptr<Runtime>> runtimes_;
  std::map<std::uint64_t, FiberPtr> fibers_;  // live fibers by id (id order: deterministic)
  std::vector<Fiber*> runnable_;
  std::unordered_map<CondVar*, std::deque<Fiber*>> waiters_;
  std::vector<Event*> heap_;  // min-heap by (t, seq)
  std::uint64_t next_seq_ = 0, next_fiber_ = 0, steps_ = 0;
  Fiber* current_ = nullptr;
  ucontext_t main_ctx_;
  std::vector<void*> free_stacks_;
  std::function<Duration(const std::string&)> wake_delay_;
  std::string failure_;
  std::uint64_t hash_ = 0xcbf29ce484222325ull;
  std::deque<std::string> tail_;
};

}  // namespace strata::logservice::sim
