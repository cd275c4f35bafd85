// EventLoop: one epoll I/O thread.
//
// Threads: Start() spawns the thread; Post() and Watch/Rewatch/Unwatch may be
// called from any thread (epoll_ctl is thread-safe); everything a handler or
// task does runs on the loop thread. Ordering: tasks run in Post order,
// after the I/O events of the current epoll_wait batch, so an object whose
// removal is Posted is never freed while an event for it is being handled.
//
// Timers: a single periodic tick (the ticker callback) drives keepalives and
// timeouts; its period bounds their accuracy. Busy polling: after an event
// the loop spins with epoll_wait(0) for busy_poll before sleeping again.
//
// Blocking reads (constructed with blocking_reads): while exactly one
// handler that supports them is watched, the loop lets it wait for input
// in a bounded blocking read instead of epoll_wait, polling the other fds
// with epoll_wait(0) at least every millisecond while reads keep coming.
// The handler's fd may be parked out of the epoll set for such a read; the
// loop puts it back (with any events Rewatch set meanwhile) before every
// epoll_wait that can sleep.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "strata/rdma/status.h"

namespace strata::rdma {

class IoHandler {
 public:
  virtual ~IoHandler() = default;
  virtual void OnIoEvent(uint32_t events) = 0;
  // Blocking reads (EventLoop constructed with blocking_reads): called on the
  // loop thread, only while this is the loop's one watched handler, right
  // after input was handled and with no task queued. Waits a bounded time
  // in a blocking read; returns true if it received and handled something,
  // false if nothing came or it cannot wait now (then the loop goes back to
  // epoll_wait). Default: never. Handlers that can say so from construction
  // on, so the loop counts them: only they make a loop "single".
  virtual bool SupportsBlockingRead() const { return false; }
  virtual bool BlockingRead() { return false; }
  // The loop could not put the fd back into its epoll set after a blocking
  // read (epoll_ctl failed: resources); the handler is no longer watched
  // and should fail. Called on the loop thread, no loop lock held.
  virtual void OnWatchLost(const Status& /*why*/) {}
};

class EventLoop {
 public:
  using Ticker = std::function<void(std::chrono::steady_clock::time_point)>;

  EventLoop(std::chrono::milliseconds tick, std::chrono::microseconds busy_poll, bool blocking_reads = false);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // on_stop runs on the loop thread when Stop() is called, before the last
  // drain of tasks (used to abort every connection).
  // spin (optional) is called while busy-polling; it returns true if it
  // found work (verbs: polls completion queues directly).
  Status Start(Ticker ticker, std::function<void()> on_stop, std::function<bool()> spin = {});
  void Stop();  // idempotent; joins
  void Post(std::function<void()> task);
  // Runs the task on the loop thread and waits for it (inline if already there).
  void RunSync(const std::function<void()>& task);
  bool InLoopThread() const { return std::this_thread::get_id() == thread_id_.load(); }

  Status Watch(int fd, uint32_t events, IoHandler* handler);
  Status Rewatch(int fd, uint32_t events, IoHandler* handler);
  void Unwatch(int fd);
  // Loop thread, from BlockingRead, right before it blocks: takes the fd
  // out of the epoll set until the loop next sleeps in epoll_wait (which
  // puts it back first, with its current events). A socket in an epoll set
  // costs every packet a second wake-up entry (~2-4% of a small loopback
  // round trip here, bench/socket_cost_experiment.cc); a blocking read
  // does not need it. Only fds of handlers that support blocking reads.
  void ParkForBlockingRead(int fd);

 private:
  void Run();
  bool RunTasks();  // returns true if any ran

  const std::chrono::milliseconds tick_;
  const std::chrono::microseconds busy_poll_;
  const bool blocking_reads_;
  // Watched handlers that support blocking reads (any thread registers; the
  // loop reads). single_ is the handler when exactly one is watched.
  // Listeners and other fds do not count: an accept may wait up to one
  // blocking read.
  struct Watched {
    IoHandler* handler;
    uint32_t events;  // what the fd is (or, parked, will be) watched for
  };
  std::mutex watch_mu_;
  std::unordered_map<int, Watched> blocking_;
  IoHandler* single_ = nullptr;
  int parked_fd_ = -1;  // out of the epoll set for a blocking read (watch_mu_)
  IoHandler* SingleHandler();
  // Puts a parked fd back (watch_mu_ held). On failure returns its handler
  // and *why, for OnWatchLost once the lock is released.
  IoHandler* UnparkLocked(Status* why);
  void Unpark();
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<std::thread::id> thread_id_{};
  std::atomic<bool> stopping_{false};
  bool stopped_ = false;
  std::mutex tasks_mu_;
  std::vector<std::function<void()>> tasks_;
  Ticker ticker_;
  std::function<void()> on_stop_;
  std::function<bool()> spin_;
};

}  // namespace strata::rdma
