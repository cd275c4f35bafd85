// Raw-socket baselines of the benchmark: see raw_peer.h.
#include "raw_peer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "strata/rdma/crc32c.h"
#include "socket_io.h"

namespace strata::rdma::bench {
namespace {

// Keeps the checksum from being optimised away.
volatile uint32_t g_crc_sink;

// ReadAll with a running CRC32C over each chunk as it arrives.
bool ReadAllCrc(int fd, void* buf, size_t n, uint32_t* crc) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    *crc = Crc32c(*crc, p, static_cast<size_t>(r));
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

// The floor of any readiness-based design: a non-blocking read, and
// epoll_wait whenever nothing is there yet, as our I/O threads do.
bool EpollReadAll(int ep, int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
      continue;
    }
    if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return false;
    epoll_event ev;
    if (::epoll_wait(ep, &ev, 1, 1000) < 0 && errno != EINTR) return false;
  }
  return true;
}

// One message of the incremental-checksum modes: receive (verifying as it
// arrives, plus the trailer in kEchoCrcTrailer).
bool ReadChecked(RawMode mode, int fd, char* buf, size_t n) {
  uint32_t crc = 0;
  if (!ReadAllCrc(fd, buf, n, &crc)) return false;
  if (mode == RawMode::kEchoCrcTrailer) {
    uint32_t trailer;
    if (!ReadAll(fd, &trailer, sizeof trailer)) return false;
    g_crc_sink = trailer ^ crc;
  } else {
    g_crc_sink = crc;
  }
  return true;
}

bool WriteChecked(RawMode mode, int fd, const char* buf, size_t n) {
  if (mode == RawMode::kEchoCrcTrailer) {
    if (!WriteAll(fd, buf, n)) return false;
    const uint32_t crc = Crc32c(0, buf, n);
    return WriteAll(fd, &crc, sizeof crc);
  }
  g_crc_sink = Crc32c(0, buf, n);
  return WriteAll(fd, buf, n);
}

bool IncrementalCrc(RawMode mode) { return mode == RawMode::kEchoCrcInc || mode == RawMode::kEchoCrcTrailer; }

int EpollFor(int fd) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return ep;
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

void ServeOne(int fd) {
  SetNoDelay(fd);
  uint64_t req[2];
  if (!ReadAll(fd, req, sizeof req)) {
    ::close(fd);
    return;
  }
  const auto mode = static_cast<RawMode>(req[0] >> 32);
  const auto size = static_cast<uint32_t>(req[0]);
  const uint64_t batch = req[1];
  std::vector<char> buf(size);
  const int ep = mode == RawMode::kEchoEpoll ? EpollFor(fd) : -1;
  if (IncrementalCrc(mode)) {
    while (ReadChecked(mode, fd, buf.data(), size) && WriteChecked(mode, fd, buf.data(), size)) {
    }
    ::close(fd);
    return;
  }
  for (uint64_t i = 1;; ++i) {
    const bool ok = mode == RawMode::kEchoEpoll ? EpollReadAll(ep, fd, buf.data(), size) : ReadAll(fd, buf.data(), size);
    if (!ok) break;
    if (mode == RawMode::kSinkCrc) g_crc_sink = Crc32c(0, buf.data(), size);  // verify what came in
    if (mode == RawMode::kSink || mode == RawMode::kSinkCrc) {
      if (i % batch == 0 && !WriteAll(fd, "k", 1)) break;
      continue;
    }
    if (mode == RawMode::kEchoCrc) {
      g_crc_sink = Crc32c(0, buf.data(), size);  // verify what came in
      g_crc_sink = Crc32c(0, buf.data(), size);  // checksum what goes out
    }
    if (!WriteAll(fd, buf.data(), size)) break;
  }
  if (ep >= 0) ::close(ep);
  ::close(fd);
}

}  // namespace

int RawListen(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, 64) != 0) {
    std::perror("raw listen");
    std::exit(1);
  }
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

void RawServe(int listen_fd) {
  for (;;) {
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    std::thread(ServeOne, fd).detach();
  }
}

RawClient::RawClient(uint16_t port, RawMode mode, uint32_t size, uint64_t sink_batch)
    : mode_(mode), size_(size), sink_batch_(sink_batch), buf_(size, 'x') {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  SetNoDelay(fd_);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("raw connect");
    std::exit(1);
  }
  const uint64_t req[2] = {(uint64_t{static_cast<uint32_t>(mode)} << 32) | size, sink_batch};
  if (!WriteAll(fd_, req, sizeof req)) std::exit(1);
  if (mode == RawMode::kEchoEpoll) epoll_fd_ = EpollFor(fd_);
}

RawClient::~RawClient() {
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  ::close(fd_);
}

bool RawClient::RoundTrip() {
  if (IncrementalCrc(mode_)) return WriteChecked(mode_, fd_, buf_.data(), size_) && ReadChecked(mode_, fd_, buf_.data(), size_);
  if (mode_ == RawMode::kEchoCrc) g_crc_sink = Crc32c(0, buf_.data(), size_);
  if (!WriteAll(fd_, buf_.data(), size_)) return false;
  const bool ok = mode_ == RawMode::kEchoEpoll ? EpollReadAll(epoll_fd_, fd_, buf_.data(), size_)
                                               : ReadAll(fd_, buf_.data(), size_);
  if (mode_ == RawMode::kEchoCrc) g_crc_sink = Crc32c(0, buf_.data(), size_);
  return ok;
}

bool RawClient::StreamBatch() {
  for (uint64_t i = 0; i < sink_batch_; ++i) {
    if (mode_ == RawMode::kSinkCrc) g_crc_sink = Crc32c(0, buf_.data(), size_);
    if (!WriteAll(fd_, buf_.data(), size_)) return false;
  }
  char ack;
  return ReadAll(fd_, &ack, 1);
}

}  // namespace strata::rdma::bench
