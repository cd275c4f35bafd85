// EventLoop implementation (epoll + eventfd wake-ups + a periodic tick).
#include "tcp/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <future>

namespace strata::rdma {

EventLoop::EventLoop(std::chrono::milliseconds tick, std::chrono::microseconds busy_poll, bool blocking_reads)
    : tick_(tick), busy_poll_(busy_poll), blocking_reads_(blocking_reads && busy_poll.count() == 0) {}

EventLoop::~EventLoop() {
  Stop();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
}

Status EventLoop::Start(Ticker ticker, std::function<void()> on_stop, std::function<bool()> spin) {
  spin_ = std::move(spin);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return ErrnoStatus("epoll_create1", errno);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return ErrnoStatus("eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.ptr = nullptr;  // nullptr marks the wake-up fd
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev) != 0) return ErrnoStatus("epoll_ctl(ADD eventfd)", errno);
  ticker_ = std::move(ticker);
  on_stop_ = std::move(on_stop);
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void EventLoop::Stop() {
  if (stopped_) return;
  stopped_ = true;
  if (!thread_.joinable()) return;
  stopping_.store(true);
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
  thread_.join();
}

void EventLoop::Post(std::function<void()> task) {
  {
    std::lock_guard lock(tasks_mu_);
    tasks_.push_back(std::move(task));
  }
  const uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void EventLoop::RunSync(const std::function<void()>& task) {
  if (InLoopThread() || !thread_.joinable()) {
    task();
    return;
  }
  std::promise<void> done;
  Post([&] {
    task();
    done.set_value();
  });
  done.get_future().wait();
}

Status EventLoop::Watch(int fd, uint32_t events, IoHandler* handler) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return ErrnoStatus("epoll_ctl(ADD)", errno);
  if (handler != nullptr && handler->SupportsBlockingRead()) {
    std::lock_guard lock(watch_mu_);
    blocking_[fd] = Watched{handler, events};
    single_ = blocking_.size() == 1 ? handler : nullptr;
  }
  return Status::Ok();
}

Status EventLoop::Rewatch(int fd, uint32_t events, IoHandler* handler) {
  std::lock_guard lock(watch_mu_);
  if (auto it = blocking_.find(fd); it != blocking_.end()) {
    it->second.events = events;
    if (fd == parked_fd_) return Status::Ok();  // applied when it is put back
  }
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev) != 0) return ErrnoStatus("epoll_ctl(MOD)", errno);
  return Status::Ok();
}

void EventLoop::Unwatch(int fd) {
  std::lock_guard lock(watch_mu_);
  if (fd == parked_fd_) {
    parked_fd_ = -1;  // not in the epoll set
  } else {
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  }
  if (blocking_.erase(fd) == 0) return;
  single_ = blocking_.size() == 1 ? blocking_.begin()->second.handler : nullptr;
}

void EventLoop::ParkForBlockingRead(int fd) {
  IoHandler* lost = nullptr;
  Status why;
  {
    std::lock_guard lock(watch_mu_);
    if (fd == parked_fd_ || blocking_.find(fd) == blocking_.end()) return;
    lost = UnparkLocked(&why);  // at most one fd is parked
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr) == 0) parked_fd_ = fd;
  }
  if (lost != nullptr) lost->OnWatchLost(why);
}

IoHandler* EventLoop::UnparkLocked(Status* why) {
  if (parked_fd_ < 0) return nullptr;
  const auto it = blocking_.find(parked_fd_);
  parked_fd_ = -1;
  if (it == blocking_.end()) return nullptr;
  epoll_event ev{};
  ev.events = it->second.events;
  ev.data.ptr = it->second.handler;
  if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, it->first, &ev) == 0) return nullptr;
  *why = ErrnoStatus("epoll_ctl(ADD) after a blocking read", errno);
  return it->second.handler;
}

void EventLoop::Unpark() {
  IoHandler* lost = nullptr;
  Status why;
  {
    std::lock_guard lock(watch_mu_);
    lost = UnparkLocked(&why);
  }
  if (lost != nullptr) lost->OnWatchLost(why);
}

IoHandler* EventLoop::SingleHandler() {
  std::lock_guard lock(watch_mu_);
  return single_;
}

bool EventLoop::RunTasks() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard lock(tasks_mu_);
    batch.swap(tasks_);
  }
  for (auto& task : batch) task();
  return !batch.empty();
}

void EventLoop::Run() {
  thread_id_.store(std::this_thread::get_id());
  using Clock = std::chrono::steady_clock;
  auto next_tick = Clock::now() + tick_;
  auto spin_until = Clock::now();
  epoll_event events[64];
  bool had_input = false;  // the last round handled I/O: try a blocking read first
  // Blocking reads: while one socket keeps them busy, the other fds (a
  // listener, the wake-up eventfd) are still polled at least this often.
  constexpr auto kPollOthersEvery = std::chrono::milliseconds(1);
  auto last_epoll = Clock::now();
  while (!stopping_.load(std::memory_order_relaxed)) {
    bool poll_only = false;  // a zero-timeout epoll_wait, then back to blocking reads
    if (had_input && blocking_reads_) {
      had_input = false;
      IoHandler* single = SingleHandler();
      bool idle;
      {
        std::lock_guard lock(tasks_mu_);
        idle = tasks_.empty();
      }
      if (single != nullptr && idle && Clock::now() - last_epoll >= kPollOthersEvery) {
        poll_only = true;
      } else if (single != nullptr && idle && single->BlockingRead()) {
        had_input = true;
        RunTasks();
        const auto t = Clock::now();
        if (t >= next_tick) {
          if (ticker_) ticker_(t);
          next_tick = t + tick_;
        }
        continue;
      }
    }
    auto now = Clock::now();
    int timeout_ms = 0;
    if (poll_only) {
      had_input = true;  // whatever the poll finds, try the socket again next
    } else if (now >= spin_until) {
      timeout_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(next_tick - now).count());
      if (timeout_ms < 0) timeout_ms = 0;
    }
    if (timeout_ms != 0) Unpark();  // about to sleep: every fd must be watched again
    bool spun_work = false;
    if (timeout_ms == 0 && spin_) spun_work = spin_();
    const int n = ::epoll_wait(epoll_fd_, events, 64, timeout_ms);
    if (n < 0 && errno != EINTR) break;  // only EBADF/EINVAL: a bug, not recoverable
    if (blocking_reads_) last_epoll = Clock::now();
    for (int i = 0; i < n; ++i) {
      auto* handler = static_cast<IoHandler*>(events[i].data.ptr);
      if (handler == nullptr) {
        uint64_t value;
        [[maybe_unused]] ssize_t r = ::read(wake_fd_, &value, sizeof value);
        continue;
      }
      handler->OnIoEvent(events[i].events);
      had_input = true;
    }
    RunTasks();
    now = Clock::now();
    if ((n > 0 || spun_work) && busy_poll_.count() > 0) spin_until = now + busy_poll_;
    if (now >= next_tick) {
      if (ticker_) ticker_(now);
      next_tick = now + tick_;
    }
  }
  if (on_stop_) on_stop_();
  while (RunTasks()) {
  }
}

}  // namespace strata::rdma
