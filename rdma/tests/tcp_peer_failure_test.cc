// Peer death: a peer process killed mid-stream, and a peer that stops
// responding (SIGSTOP) are reported within bounded time, never hang.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "test_support.h"

namespace strata::rdma::test {
namespace {

constexpr char kPeerEnv[] = "STRATA_RDMA_TEST_STREAM_TO_PORT";

// The peer is this test binary re-executed with kPeerEnv set (fork+exec, so
// the child never inherits a half-held lock from the parent's I/O threads).
[[noreturn]] void RunStreamingPeer(uint16_t port);

const bool kPeerMode = [] {
  if (const char* port = std::getenv(kPeerEnv)) RunStreamingPeer(static_cast<uint16_t>(std::atoi(port)));
  return false;
}();

pid_t SpawnStreamingPeer(uint16_t port) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::setenv(kPeerEnv, std::to_string(port).c_str(), 1);
  char* argv[] = {const_cast<char*>("rdma_tests"), nullptr};
  ::execv("/proc/self/exe", argv);
  ::_exit(127);
}

void RunStreamingPeer(uint16_t port) {
  auto opts = TestOptions(nullptr, 77);
  opts.log = [](LogLevel, std::string_view) {};
  auto t = Transport::Create(opts);
  if (!t.ok()) ::_exit(2);
  auto c = t.value()->Connect("tcp://127.0.0.1:" + std::to_string(port), {});
  if (!c.ok()) ::_exit(3);
  const auto payload = Pattern(4096, 1);
  for (;;) {
    const Status s = c.value()->Send(payload, {}, std::chrono::milliseconds(100));
    if (s.code() == StatusCode::kClosed) ::_exit(4);
  }
}

class PeerFailure : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = MakeTransport(TestOptions(&log_));
    auto l = server_->Listen("tcp://127.0.0.1:0", [this](const std::shared_ptr<Connection>&) {
      ConnectionHandlers h;
      h.on_message = [this](Connection&, const Message&) { signal_.Notify([&] { ++messages_; }); };
      h.on_close = [this](Connection&, const Status& s) { signal_.Notify([&] { closes_.push_back(s); }); };
      return h;
    });
    ASSERT_TRUE(l.ok());
    listener_ = std::move(l).value();
  }
  void TearDown() override {
    listener_.reset();
    server_.reset();
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
  }

  LogCapture log_;
  std::unique_ptr<Transport> server_;
  std::unique_ptr<Listener> listener_;
  Signal signal_;
  size_t messages_ = 0;
  std::vector<Status> closes_;
  pid_t child_ = -1;
};

TEST_F(PeerFailure, KilledPeerMidStreamIsReported) {
  child_ = SpawnStreamingPeer(listener_->endpoint().port);
  ASSERT_TRUE(signal_.WaitUntil([&] { return messages_ > 100; })) << "child never streamed";
  const auto killed_at = std::chrono::steady_clock::now();
  ::kill(child_, SIGKILL);
  ::waitpid(child_, nullptr, 0);
  child_ = -1;
  ASSERT_TRUE(signal_.WaitUntil([&] { return closes_.size() == 1; }, 5s));
  EXPECT_LT(std::chrono::steady_clock::now() - killed_at, 2s);
  const Status& s = closes_[0];
  EXPECT_FALSE(s.ok());
  // The kernel closes the dead process's socket: EOF (maybe mid-frame) or reset.
  EXPECT_TRUE(s.code() == StatusCode::kClosed || s.code() == StatusCode::kProtocolError || s.code() == StatusCode::kIoError)
      << s.ToString();
}

TEST_F(PeerFailure, FrozenPeerFailsKeepaliveWithinTimeout) {
  child_ = SpawnStreamingPeer(listener_->endpoint().port);
  ASSERT_TRUE(signal_.WaitUntil([&] { return messages_ > 10; }));
  const auto frozen_at = std::chrono::steady_clock::now();
  ::kill(child_, SIGSTOP);  // alive socket, silent process
  ASSERT_TRUE(signal_.WaitUntil([&] { return closes_.size() == 1; }, 5s));
  const auto took = std::chrono::steady_clock::now() - frozen_at;
  EXPECT_GE(took, 900ms);  // keepalive_timeout is 1000 ms
  EXPECT_LT(took, 3s);
  EXPECT_EQ(closes_[0].code(), StatusCode::kTimeout) << closes_[0].ToString();
  EXPECT_NE(closes_[0].message().find("keepalive timeout"), std::string::npos);
  EXPECT_TRUE(log_.Contains("keepalive timeout"));
}

}  // namespace
}  // namespace strata::rdma::test
