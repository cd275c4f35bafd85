// SystemRuntime: the Runtime of logserviced and of the client library in
// mysqld (runtime.h): std::thread, std::condition_variable (inside CondVar),
// std::chrono::steady_clock, std::random_device.
#include "runtime/runtime.h"

#include <cstdlib>
#include <random>
#include <thread>

namespace strata::logservice {

// Only simulated runtimes receive these (CondVar calls them when
// simulated() is true); reaching one here is a programming error.
bool Runtime::Wait(CondVar&, std::unique_lock<std::mutex>&, const TimePoint*) { std::abort(); }
void Runtime::Notify(CondVar&, bool) { std::abort(); }
void Runtime::YieldPoint(std::unique_lock<std::mutex>&) {}

namespace {

class SystemThread final : public Runtime::ThreadHandle {
 public:
  explicit SystemThread(std::function<void()> fn) : t_(std::move(fn)) {}
  ~SystemThread() override {
    if (t_.joinable()) std::terminate();
  }
  void Join() override { t_.join(); }

 private:
  std::thread t_;
};

class SystemRuntimeImpl final : public Runtime {
 public:
  TimePoint Now() override { return Clock::now(); }
  void SleepUntil(TimePoint t) override { std::this_thread::sleep_until(t); }
  std::uint64_t Random() override {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
  }
  std::unique_ptr<ThreadHandle> StartThread(std::string, std::function<void()> fn) override {
    return std::make_unique<SystemThread>(std::move(fn));
  }
};

}  // namespace

std::shared_ptr<Runtime> SystemRuntime() {
  static const std::shared_ptr<Runtime> rt = std::make_shared<SystemRuntimeImpl>();
  return rt;
}

}  // namespace strata::logservice
