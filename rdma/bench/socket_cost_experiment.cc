// rdma_socket_cost_experiment: what the kernel charges a loopback ping-pong
// for each way our TCP path uses a socket differently from a plain blocking
// client, measured on raw sockets with nothing of ours in between.
//
//   plain            send() + blocking recv()
//   sendmsg 2 iov    header and payload as two iovecs (our large frames)
//   SO_RCVTIMEO      a receive timeout set (low_latency_reads' bounded wait)
//   epoll-registered the socket also sits in an epoll set nobody waits on
//                    (our sockets stay registered while a read blocks)
//   epoll events=0   registered with no events (would disarming help?)
//   all three        sendmsg 2 iov + SO_RCVTIMEO + epoll-registered
//
// Interleaved rounds; prints the median p50 and the median per-round ratio
// to plain.
//
//   rdma_socket_cost_experiment [message bytes, default 96 = 64 B + header]
//
// Not a test: numbers depend on the machine and its load.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "socket_io.h"

using Clock = std::chrono::steady_clock;
using strata::rdma::bench::ListenLoopback;

namespace {

enum Variant { kPlain, kSendmsg2, kRcvTimeo, kEpollRegistered, kEpollNoEvents, kAllThree, kVariants };
const char* const kNames[kVariants] = {"plain",           "sendmsg 2 iov",  "SO_RCVTIMEO 1ms",
                                       "epoll-registered", "epoll events=0", "all three"};
size_t g_size = 96;

void Setup(int fd, int v) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (v == kRcvTimeo || v == kAllThree) {
    const timeval tv{0, 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  if (v == kEpollRegistered || v == kEpollNoEvents || v == kAllThree) {
    const int ep = ::epoll_create1(EPOLL_CLOEXEC);  // left open for the process's life
    epoll_event ev{};
    ev.events = v == kEpollNoEvents ? 0 : EPOLLIN;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
}

void Send(int fd, char* buf, int v) {
  if (v == kSendmsg2 || v == kAllThree) {
    iovec iov[2] = {{buf, 32}, {buf + 32, g_size - 32}};
    msghdr h{};
    h.msg_iov = iov;
    h.msg_iovlen = 2;
    if (::sendmsg(fd, &h, MSG_NOSIGNAL) != static_cast<ssize_t>(g_size)) std::exit(1);
  } else if (::send(fd, buf, g_size, MSG_NOSIGNAL) != static_cast<ssize_t>(g_size)) {
    std::exit(1);
  }
}

void Receive(int fd, char* buf) {
  size_t got = 0;
  while (got < g_size) {
    const ssize_t r = ::recv(fd, buf + got, g_size - got, 0);
    if (r > 0) got += static_cast<size_t>(r);
    else if (r == 0) std::exit(0);  // a timeout (EAGAIN) just retries
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) g_size = std::max<size_t>(64, std::strtoull(argv[1], nullptr, 10));
  constexpr int kRounds = 15, kPerRound = 500;
  sockaddr_in a;
  const int listen_fd = ListenLoopback(&a);
  if (listen_fd < 0) return 1;
  std::vector<char> buf(g_size, 'x');
  if (::fork() == 0) {  // echo server, same variant on its side
    std::vector<int> fds;
    for (int v = 0; v < kVariants; ++v) {
      fds.push_back(::accept(listen_fd, nullptr, nullptr));
      Setup(fds.back(), v);
    }
    for (int r = 0; r < kRounds; ++r) {
      for (int k = 0; k < kVariants; ++k) {
        const int v = (r + k) % kVariants;
        for (int i = 0; i < kPerRound; ++i) {
          Receive(fds[v], buf.data());
          Send(fds[v], buf.data(), v);
        }
      }
    }
    _exit(0);
  }
  std::vector<int> fds;
  for (int v = 0; v < kVariants; ++v) {
    fds.push_back(::socket(AF_INET, SOCK_STREAM, 0));
    if (::connect(fds.back(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      std::perror("connect");
      return 1;
    }
    Setup(fds.back(), v);
  }
  std::vector<std::vector<double>> p50(kVariants);
  for (int r = 0; r < kRounds; ++r) {
    for (int k = 0; k < kVariants; ++k) {
      const int v = (r + k) % kVariants;
      std::vector<double> us;
      for (int i = 0; i < kPerRound; ++i) {
        const auto t0 = Clock::now();
        Send(fds[v], buf.data(), v);
        Receive(fds[v], buf.data());
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
      p50[v].push_back(Median(us));
    }
  }
  std::printf("%zu-byte ping-pong, %d rounds x %d round trips per variant\n", g_size, kRounds, kPerRound);
  for (int v = 0; v < kVariants; ++v) {
    std::vector<double> ratio;
    for (int r = 0; r < kRounds; ++r) ratio.push_back(p50[v][r] / p50[kPlain][r]);
    std::printf("%-17s p50 %6.2f us   x plain %.3f\n", kNames[v], Median(p50[v]), Median(ratio));
  }
  ::wait(nullptr);
  return 0;
}
