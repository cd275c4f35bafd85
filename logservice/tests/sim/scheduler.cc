// Scheduler: fibers, virtual time and events; see scheduler.h.
#include "scheduler.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace strata::logservice::sim {
namespace {

constexpr std::size_t kStackSize = 512u << 10;
constexpr std::size_t kGuard = 4096;

thread_local Scheduler* tls_scheduler = nullptr;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "simulator: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

std::string FormatTime(TimePoint t) {
  const auto us = std::chrono::duration_cast<microseconds>(t.time_since_epoch()).count();
  char b[32];
  std::snprintf(b, sizeof b, "%lld.%06lld", static_cast<long long>(us / 1000000), static_cast<long long>(us % 1000000));
  return b;
}

}  // namespace

struct Scheduler::Fiber {
  enum class State { kRunnable, kBlocked, kDone };
  std::uint64_t id = 0;
  std::string name;
  int process = -1;
  std::function<void()> fn;
  State state = State::kRunnable;
  ucontext_t ctx{};
  void* stack = nullptr;
  CondVar* waiting_on = nullptr;
  std::uint64_t token = 0;  // bumped at every park; a timer for an older park is stale
  bool timed_out = false;
  bool queued = false;      // in runnable_
  std::vector<Fiber*> joiners;
};

// A process's view of the scheduler: the Runtime its node or client runs on.
class SimRuntime final : public Runtime {
 public:
  SimRuntime(Scheduler& s, int process) : s_(s), process_(process) {}
  TimePoint Now() override { return s_.now(); }
  void SleepUntil(TimePoint t) override { s_.SleepUntil(t); }
  std::uint64_t Random() override { return s_.rng().Next(); }
  std::unique_ptr<ThreadHandle> StartThread(std::string name, std::function<void()> fn) override {
    class Handle final : public ThreadHandle {
     public:
      Handle(Scheduler& s, Scheduler::FiberPtr f) : s_(s), f_(std::move(f)) {}
      void Join() override { s_.Join(*f_); }

     private:
      Scheduler& s_;
      Scheduler::FiberPtr f_;
    };
    return std::make_unique<Handle>(s_, s_.Spawn(process_, s_.ProcessName(process_) + "/" + name, std::move(fn)));
  }
  bool simulated() const override { return true; }
  bool Wait(CondVar& cv, std::unique_lock<std::mutex>& lock, const TimePoint* deadline) override {
    return s_.Wait(cv, lock, deadline);
  }
  void Notify(CondVar& cv, bool all) override { s_.Notify(cv, all); }
  void YieldPoint(std::unique_lock<std::mutex>& lock) override { s_.YieldPoint(lock); }

 private:
  Scheduler& s_;
  int process_;
};

Scheduler::Scheduler(std::uint64_t seed, SchedulerOptions options)
    : opt_(options), rng_(seed), now_(TimePoint(std::chrono::hours(1))) {}

Scheduler::~Scheduler() {
  for (Event* e : heap_) delete e;
  for (auto& [id, f] : fibers_)
    if (f->stack) FreeStack(f->stack);
  for (void* s : free_stacks_) munmap(s, kStackSize + kGuard);
}

int Scheduler::AddProcess(std::string name) {
  processes_.push_back(Process{std::move(name), {}});
  runtimes_.push_back(std::make_shared<SimRuntime>(*this, static_cast<int>(processes_.size() - 1)));
  return static_cast<int>(processes_.size() - 1);
}

std::shared_ptr<Runtime> Scheduler::RuntimeFor(int p) { return runtimes_[p]; }

void Scheduler::Pause(int p, Duration d) {
  Process& pr = processes_[p];
  pr.paused_until = std::max(pr.paused_until, now_ + d);
  Trace("pause " + pr.name + " until " + FormatTime(pr.paused_until));
}

int Scheduler::CurrentProcess() const { return current_ ? current_->process : -1; }
std::string Scheduler::CurrentName() const { return current_ ? current_->name : "scheduler"; }

void* Scheduler::AllocStack() {
  if (!free_stacks_.empty()) {
    void* s = free_stacks_.back();
    free_stacks_.pop_back();
    return s;
  }
  void* m = mmap(nullptr, kStackSize + kGuard, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) Die("mmap of a fiber stack failed");
  if (mprotect(m, kGuard, PROT_NONE) != 0) Die("mprotect of a stack guard failed");
  return m;
}

void Scheduler::FreeStack(void* s) {
  if (free_stacks_.size() < 64) free_stacks_.push_back(s);
  else munmap(s, kStackSize + kGuard);
}

Scheduler::FiberPtr Scheduler::Spawn(int process, std::string name, std::function<void()> fn) {
  auto f = std::make_shared<Fiber>();
  f->id = ++next_fiber_;
  f->name = std::move(name);
  f->process = process;
  f->fn = std::move(fn);
  f->stack = AllocStack();
  if (getcontext(&f->ctx) != 0) Die("getcontext failed");
  f->ctx.uc_stack.ss_sp = static_cast<char*>(f->stack) + kGuard;
  f->ctx.uc_stack.ss_size = kStackSize;
  f->ctx.uc_link = nullptr;
  makecontext(&f->ctx, &Scheduler::Entry, 0);
  fibers_[f->id] = f;
  Trace("spawn " + f->name + " #" + std::to_string(f->id));
  MakeRunnable(f.get(), false);
  return f;
}

void Scheduler::Entry() {
  Scheduler* s = tls_scheduler;
  Fiber* f = s->current_;
  f->fn();
  f->fn = nullptr;  // drops captures while the fiber still exists
  f->state = Fiber::State::kDone;
  for (Fiber* j : f->joiners) s->MakeRunnable(j, true);
  f->joiners.clear();
  swapcontext(&f->ctx, &s->main_ctx_);
  Die("a finished fiber was resumed");
}

void Scheduler::MakeRunnable(Fiber* f, bool may_stall) {
  if (f->state == Fiber::State::kDone || f->queued) return;
  f->state = Fiber::State::kRunnable;
  const TimePoint paused = processes_[f->process].paused_until;
  Duration delay{};
  if (paused > now_) delay = paused - now_;
  else if (may_stall && rng_.Chance(opt_.stall_chance)) delay = rng_.Micros(1, opt_.stall_max_us);
  if (may_stall && wake_delay_ && paused <= now_) delay += wake_delay_(f->name);
  if (delay > Duration::zero()) {
    // Runnable later: a descheduled thread, or a paused process.
    const std::uint64_t token = ++f->token;
    f->state = Fiber::State::kBlocked;
    std::uint64_t id = f->id;
    At(now_ + delay, [this, id, token] {
      auto it = fibers_.find(id);
      if (it == fibers_.end() || it->second->token != token || it->second->state != Fiber::State::kBlocked) return;
      MakeRunnable(it->second.get(), false);
    });
    return;
  }
  f->queued = true;
  runnable_.push_back(f);
}

void Scheduler::Park() {
  Fiber* f = current_;
  if (!f) Die("a blocking call outside a fiber (in a handler or the scheduler)");
  if (swapcontext(&f->ctx, &main_ctx_) != 0) Die("swapcontext failed");
}

void Scheduler::Join(Fiber& f) {
  if (f.state == Fiber::State::kDone) return;
  if (&f == current_) Die("a fiber joined itself");
  current_->state = Fiber::State::kBlocked;
  ++current_->token;
  f.joiners.push_back(current_);
  Park();
}

void Scheduler::SleepUntil(TimePoint t) {
  Fiber* f = current_;
  if (!f) Die("sleep outside a fiber");
  f->state = Fiber::State::kBlocked;
  const std::uint64_t token = ++f->token;
  const std::uint64_t id = f->id;
  At(std::max(t, now_), [this, id, token] {
    auto it = fibers_.find(id);
    if (it == fibers_.end() || it->second->token != token) return;
    MakeRunnable(it->second.get(), false);
  });
  Park();
}

bool Scheduler::Wait(CondVar& cv, std::unique_lock<std::mutex>& lock, const TimePoint* deadline) {
  Fiber* f = current_;
  if (!f) Die("a CondVar wait outside a fiber (in a handler or the scheduler)");
  f->state = Fiber::State::kBlocked;
  f->waiting_on = &cv;
  f->timed_out = false;
  const std::uint64_t token = ++f->token;
  waiters_[&cv].push_back(f);
  if (deadline) {
    const std::uint64_t id = f->id;
    At(std::max(*deadline, now_), [this, id, token] {
      auto it = fibers_.find(id);
      if (it == fibers_.end()) return;
      Fiber* w = it->second.get();
      if (w->token != token || w->state != Fiber::State::kBlocked || !w->waiting_on) return;
      auto& q = waiters_[w->waiting_on];
      q.erase(std::find(q.begin(), q.end(), w));
      if (q.empty()) waiters_.erase(w->waiting_on);
      w->waiting_on = nullptr;
      w->timed_out = true;
      MakeRunnable(w, false);
    });
  }
  lock.unlock();
  Park();
  lock.lock();
  return !f->timed_out;
}

void Scheduler::Notify(CondVar& cv, bool all) {
  auto it = waiters_.find(&cv);
  if (it == waiters_.end()) return;
  auto& q = it->second;
  while (!q.empty()) {
    const std::size_t k = all ? 0 : rng_.Pick(q.size());
    Fiber* w = q[k];
    q.erase(q.begin() + static_cast<std::ptrdiff_t>(k));
    w->waiting_on = nullptr;
    ++w->token;  // its deadline timer is stale now
    MakeRunnable(w, true);
    if (!all) break;
  }
  if (q.empty()) waiters_.erase(it);
}

void Scheduler::YieldPoint(std::unique_lock<std::mutex>& lock) {
  if (!current_ || !rng_.Chance(opt_.yield_chance)) return;
  lock.unlock();
  ++current_->token;
  current_->state = Fiber::State::kBlocked;
  MakeRunnable(current_, true);
  Park();
  lock.lock();
}

void Scheduler::At(TimePoint t, std::function<void()> fn) {
  Event* e = new Event{t, next_seq_++, std::move(fn)};
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), EventOrder());
}

void Scheduler::RunFiber(Fiber* f) {
  f->queued = false;
  Hash(f->id);
  if (opt_.print_trace) Trace("run " + f->name);
  current_ = f;
  if (swapcontext(&main_ctx_, &f->ctx) != 0) Die("swapcontext failed");
  current_ = nullptr;
  if (f->state == Fiber::State::kDone) {
    FreeStack(f->stack);
    f->stack = nullptr;
    fibers_.erase(f->id);  // handles may still hold it (joined or not)
  }
}

Scheduler::RunResult Scheduler::Run(const std::function<bool()>& done, TimePoint deadline, std::uint64_t max_steps) {
  Scheduler* outer = tls_scheduler;
  tls_scheduler = this;
  struct Restore {
    Scheduler* s;
    ~Restore() { tls_scheduler = s; }
  } restore{outer};
  for (;;) {
    if (failed()) return RunResult::kFailed;
    if (done()) return RunResult::kDone;
    if (++steps_ > max_steps || now_ > deadline) return RunResult::kBudget;
    const bool event_due = !heap_.empty() && heap_.front()->t <= now_;
    if (!runnable_.empty() && !(event_due && rng_.Chance(opt_.event_first_chance))) {
      const std::size_t k = rng_.Pick(runnable_.size());
      Fiber* f = runnable_[k];
      runnable_[k] = runnable_.back();
      runnable_.pop_back();
      RunFiber(f);
      continue;
    }
    if (heap_.empty()) return RunResult::kStuck;
    std::pop_heap(heap_.begin(), heap_.end(), EventOrder());
    Event* e = heap_.back();
    heap_.pop_back();
    if (e->t > now_) now_ = e->t;
    Hash(static_cast<std::uint64_t>(now_.time_since_epoch().count()));
    auto fn = std::move(e->fn);
    delete e;
    fn();
  }
}

void Scheduler::Fail(std::string what) {
  if (!failure_.empty()) return;
  failure_ = std::move(what);
  Trace("FAILURE " + failure_);
}

void Scheduler::Trace(std::string line) {
  for (unsigned char c : line) Hash(c);
  std::string rec = FormatTime(now_) + " " + line;
  if (opt_.print_trace) std::printf("%s\n", rec.c_str());
  tail_.push_back(std::move(rec));
  while (tail_.size() > opt_.trace_tail) tail_.pop_front();
}

std::vector<std::string> Scheduler::TraceTail() const { return {tail_.begin(), tail_.end()}; }

std::vector<std::string> Scheduler::LiveFibers() const {
  std::vector<std::string> out;
  for (const auto& [id, f] : fibers_) {
    if (f->state == Fiber::State::kDone) continue;
    out.push_back(f->name + (f->state == Fiber::State::kRunnable ? " (runnable)" : " (blocked)"));
  }
  return out;
}

std::size_t Scheduler::live_fibers() const { return fibers_.size(); }

}  // namespace strata::logservice::sim
