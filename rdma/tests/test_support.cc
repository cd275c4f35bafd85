// Shared test helpers (see test_support.h).
#include "test_support.h"

#include <cstdlib>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <random>

namespace strata::rdma::test {

LogSink LogCapture::Sink() {
  return [this](LogLevel level, std::string_view line) {
    std::lock_guard lock(mu_);
    lines_.push_back(std::string(LogLevelName(level)) + " " + std::string(line));
    cv_.notify_all();
  };
}

bool LogCapture::Contains(const std::string& needle) const {
  std::lock_guard lock(mu_);
  for (const auto& l : lines_) if (l.find(needle) != std::string::npos) return true;
  return false;
}

bool LogCapture::WaitFor(const std::string& needle, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] {
    for (const auto& l : lines_) if (l.find(needle) != std::string::npos) return true;
    return false;
  });
}

std::vector<std::string> LogCapture::Lines() const {
  std::lock_guard lock(mu_);
  return lines_;
}

void Signal::Notify(std::function<void()> update) {
  std::lock_guard lock(mu_);
  if (update) update();
  cv_.notify_all();
}

bool Signal::WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, done);
}

TransportOptions TestOptions(LogCapture* log, uint64_t seed) {
  TransportOptions o;
  o.cluster_id = "test-cluster";
  o.secret = "test-secret";
  o.random_seed = seed;
  o.keepalive_interval = 100ms;
  o.keepalive_timeout = 1000ms;
  o.handshake_timeout = 1000ms;
  o.connect_timeout = 3000ms;
  o.close_linger = 1000ms;
  o.max_message_size = 64 * 1024;
  o.bulk_ring_size = 4 * 1024 * 1024;
  if (log != nullptr) o.log = log->Sink();
  // ctest runs the TCP suites a second time with this set to 0, i.e. with
  // plain epoll reads (rdma.EpollReads.TcpSuites); the default is on.
  if (const char* v = std::getenv("STRATA_RDMA_TEST_LOW_LATENCY_READS")) o.low_latency_reads = std::string(v) == "1";
  return o;
}

std::vector<std::byte> Pattern(size_t size, uint32_t seed) {
  std::vector<std::byte> v(size);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<std::byte>(rng());
  return v;
}

std::unique_ptr<Transport> MakeTransport(const TransportOptions& options) {
  auto t = Transport::Create(options);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

RawClient::RawClient(uint16_t port) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) Close();
  int one = 1;
  if (fd_ >= 0) ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

RawClient::~RawClient() { Close(); }

void RawClient::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool RawClient::SendBytes(std::span<const std::byte> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool RawClient::SendFrame(FrameHeader h, std::span<const std::byte> payload, bool seal) {
  std::vector<std::byte> frame(wire::kHeaderSize + payload.size());
  if (h.length == 0 && !payload.empty()) h.length = static_cast<uint32_t>(payload.size());
  EncodeHeader(h, frame.data());
  if (seal) SealHeader(frame.data(), PayloadCrc(payload));
  std::memcpy(frame.data() + wire::kHeaderSize, payload.data(), payload.size());
  return SendBytes(frame);
}

bool RawClient::ReadExact(std::byte* out, size_t n, std::chrono::milliseconds timeout) {
  size_t done = 0;
  while (done < n) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(timeout.count())) <= 0) return false;
    const ssize_t r = ::recv(fd_, out + done, n - done, 0);
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool RawClient::ReadFrame(FrameHeader* h, std::vector<std::byte>* payload, std::chrono::milliseconds timeout) {
  std::byte header[wire::kHeaderSize];
  if (!ReadExact(header, sizeof header, timeout)) return false;
  *h = DecodeHeader(header);
  if (h->length > (1u << 24)) return false;
  payload->resize(h->length);
  return ReadExact(payload->data(), h->length, timeout);
}

bool RawClient::Handshake(const std::string& secret, const std::string& cluster_id, uint32_t credits) {
  FrameHeader h;
  std::vector<std::byte> payload;
  if (!ReadFrame(&h, &payload) || h.type != wire::FrameType::kChallenge || payload.size() != wire::kNonceSize) return false;
  Nonce server_nonce, client_nonce;
  std::memcpy(server_nonce.data(), payload.data(), wire::kNonceSize);
  client_nonce.fill(std::byte{7});
  PeerParams params;
  params.receive_credits = credits;
  params.max_message_size = 64 * 1024;
  const auto auth = BuildAuth(secret, cluster_id, server_nonce, client_nonce, params);
  FrameHeader ah;
  ah.type = wire::FrameType::kAuth;
  ah.length = wire::kAuthSize;
  if (!SendFrame(ah, auth)) return false;
  if (!ReadFrame(&h, &payload)) return false;
  return h.type == wire::FrameType::kAccept;
}

bool RawClient::WaitClosed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::byte buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r <= 0) return true;
  }
  return false;
}

std::vector<std::byte> RawClient::ReadUntilClosed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::byte> all;
  std::byte buf[4096];
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r <= 0) break;
    all.insert(all.end(), buf, buf + r);
  }
  return all;
}

}  // namespace strata::rdma::test
