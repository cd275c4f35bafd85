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
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strata/rdma/status.h"

namespace strata::rdma {

class IoHandler {
 public:
  virtual ~IoHandler() = default;
  virtual void OnIoEvent(uint32_t events) = 0;
};

class EventLoop {
 public:
  using Ticker = std::function<void(std::chrono::steady_clock::time_point)>;

  EventLoop(std::chrono::milliseconds tick, std::chrono::microseconds busy_poll);
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

 private:
  void Run();
  bool RunTasks();  // returns true if any ran

  const std::chrono::milliseconds tick_;
  const std::chrono::microseconds busy_poll_;
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
