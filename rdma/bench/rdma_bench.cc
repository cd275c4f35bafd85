// rdma_bench: ping-pong latency and streaming throughput of the transport's
// TCP path, side by side with a raw blocking TCP socket, in one run.
//
// Two processes: the parent forks the server before it creates any thread;
// the server child runs a raw blocking echo/sink server and a Transport
// echo/sink server on loopback; the parent is the client. Sizes are payload
// bytes (our frames add a 32-byte header on the wire).
//
//   rdma_bench [--pingpong N] [--stream-mb MB] [--busy-poll-us US] [--low-latency-reads 0|1]
//              [--sizes 64,4096,65536] [--only latency|stream]
//
// "raw+epoll" is the raw socket again, but both ends wait in epoll_wait
// before each recv: the floor of any readiness-based event loop.
//
// Not a test: numbers depend on the machine and its load.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strata/rdma/rdma.h"

using namespace strata::rdma;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int pingpong = 5000;
  int warmup = 500;
  size_t stream_mb = 128;
  int busy_poll_us = 0;
  bool low_latency_reads = false;
  std::vector<uint32_t> sizes = {64u, 4096u, 65536u};
  bool latency = true, stream = true;
};

TransportOptions BenchOptions(const Args& a) {
  TransportOptions o;
  o.cluster_id = "bench";
  o.secret = "bench-secret";
  o.random_seed = 1;
  o.max_message_size = 64 * 1024;
  o.receive_credits = 128;
  o.send_buffer_size = 4 * 1024 * 1024;
  o.busy_poll = std::chrono::microseconds(a.busy_poll_us);
  o.low_latency_reads = a.low_latency_reads;
  o.log = [](LogLevel level, std::string_view line) {
    if (level >= LogLevel::kError) std::fprintf(stderr, "bench: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  return o;
}

// ---------------------------------------------------------------- raw socket

bool ReadAll(int fd, void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    const ssize_t r = ::recv(fd, p, n, 0);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}
bool WriteAll(int fd, const void* buf, size_t n) {
  auto* p = static_cast<const char*>(buf);
  while (n > 0) {
    const ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

int RawListen(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::listen(fd, 16);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

int RawConnect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    std::perror("connect");
    std::exit(1);
  }
  return fd;
}

// The floor of any readiness-based (epoll) design: a non-blocking socket,
// epoll_wait until readable, then recv, as our I/O threads do, without
// anything else of ours. Reads exactly n bytes.
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
int EpollFor(int fd) {
  const int ep = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  return ep;
}

// Raw server: per connection, a 16-byte request {mode, size, count}, then
// mode 1 = echo `count` messages of `size`, mode 2 = sink them and ack 1
// byte, mode 3 = echo like mode 1 but waiting in epoll_wait before each recv.
void RawServe(int listen_fd) {
  for (;;) {
    const int fd = ::accept(listen_fd, nullptr, nullptr);
    if (fd < 0) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    uint64_t req[2];
    if (ReadAll(fd, req, sizeof req)) {
      const uint32_t mode = static_cast<uint32_t>(req[0] >> 32), size = static_cast<uint32_t>(req[0]);
      std::vector<char> buf(size);
      const int ep = mode == 3 ? EpollFor(fd) : -1;
      for (uint64_t i = 0; i < req[1]; ++i) {
        if (!(mode == 3 ? EpollReadAll(ep, fd, buf.data(), size) : ReadAll(fd, buf.data(), size))) break;
        if ((mode == 1 || mode == 3) && !WriteAll(fd, buf.data(), size)) break;
      }
      if (ep >= 0) ::close(ep);
      if (mode == 2) WriteAll(fd, "k", 1);
    }
    ::close(fd);
  }
}

// ---------------------------------------------------------------- results

struct Latency {
  double p50_us = 0, p99_us = 0;
};
Latency Percentiles(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[std::min(us.size() - 1, us.size() * 99 / 100)]};
}

// epoll = true: both ends wait in epoll_wait before each recv (mode 3).
Latency RawPingPong(uint16_t port, uint32_t size, const Args& a, bool epoll = false) {
  const int fd = RawConnect(port);
  const uint64_t req[2] = {(uint64_t{epoll ? 3u : 1u} << 32) | size, static_cast<uint64_t>(a.pingpong + a.warmup)};
  WriteAll(fd, req, sizeof req);
  const int ep = epoll ? EpollFor(fd) : -1;
  std::vector<char> buf(size, 'x');
  std::vector<double> us;
  us.reserve(a.pingpong);
  for (int i = 0; i < a.pingpong + a.warmup; ++i) {
    const auto t0 = Clock::now();
    WriteAll(fd, buf.data(), size);
    if (epoll) EpollReadAll(ep, fd, buf.data(), size);
    else ReadAll(fd, buf.data(), size);
    if (i >= a.warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  if (ep >= 0) ::close(ep);
  ::close(fd);
  return Percentiles(us);
}

double RawStream(uint16_t port, uint32_t size, uint64_t count) {
  const int fd = RawConnect(port);
  const uint64_t req[2] = {(uint64_t{2} << 32) | size, count};
  WriteAll(fd, req, sizeof req);
  std::vector<char> buf(size, 'x');
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < count; ++i) WriteAll(fd, buf.data(), size);
  char ack;
  ReadAll(fd, &ack, 1);
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  ::close(fd);
  return count / secs;
}

// Client-side handlers reused for each measurement.
struct Waiter {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  void Set() {
    std::lock_guard l(mu);
    done = true;
    cv.notify_all();
  }
  void Wait() {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return done; });
    done = false;
  }
};

Latency OurPingPong(Transport& t, const std::string& addr, uint32_t size, const Args& a) {
  std::vector<std::byte> buf(size, std::byte{'x'});
  std::vector<double> us;
  us.reserve(a.pingpong);
  Waiter waiter;
  int round = 0;
  Clock::time_point t0;
  ConnectionHandlers h;
  // The next ping is sent from the handler (I/O thread): no thread hand-off
  // in the loop, like the blocking raw client.
  h.on_message = [&](Connection& c, const Message&) {
    if (round >= a.warmup) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (++round == a.pingpong + a.warmup) {
      waiter.Set();
      return;
    }
    t0 = Clock::now();
    if (!c.Send(buf).ok()) std::abort();
  };
  auto conn = t.Connect(addr, h);
  if (!conn.ok()) {
    std::fprintf(stderr, "connect: %s\n", conn.status().ToString().c_str());
    std::exit(1);
  }
  t0 = Clock::now();
  if (!conn.value()->Send(buf).ok()) std::abort();
  waiter.Wait();
  conn.value()->Close();
  return Percentiles(us);
}

// batch > 1: every message but each batch-th is sent with SendFlags::kMore.
double OurStream(Transport& t, const std::string& addr, uint32_t size, uint64_t count, uint64_t batch) {
  std::vector<std::byte> buf(size, std::byte{'x'});
  Waiter waiter;
  ConnectionHandlers h;
  h.on_message = [&](Connection&, const Message&) { waiter.Set(); };  // the sink's ack
  auto conn = t.Connect(addr, h);
  if (!conn.ok()) std::exit(1);
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < count; ++i) {
    const SendFlags flags = (batch > 1 && (i + 1) % batch != 0) ? SendFlags::kMore : SendFlags::kNone;
    if (Status s = conn.value()->Send(buf, {}, std::chrono::seconds(10), flags); !s.ok()) {
      std::fprintf(stderr, "send: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  const std::byte end_marker[1] = {std::byte{'E'}};
  if (!conn.value()->Send(end_marker, {}, std::chrono::seconds(10)).ok()) std::exit(1);
  waiter.Wait();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  conn.value()->Close();
  return count / secs;
}

// ---------------------------------------------------------------- server child

[[noreturn]] void ServeForever(int raw_fd, int report_fd, const Args& a) {
  std::thread raw([raw_fd] { RawServe(raw_fd); });
  raw.detach();
  auto t = Transport::Create(BenchOptions(a));
  if (!t.ok()) std::exit(1);
  auto echo = t.value()->Listen("tcp://127.0.0.1:0", [](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) {
      if (!c.Send(m.payload(), {}, std::chrono::seconds(10)).ok()) std::abort();
    };
    return h;
  });
  auto sink = t.value()->Listen("tcp://127.0.0.1:0", [](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) {
      if (m.payload().size() == 1) (void)c.Send(m.payload());  // end marker: ack
    };
    return h;
  });
  const uint16_t ports[2] = {echo.value()->endpoint().port, sink.value()->endpoint().port};
  if (::write(report_fd, ports, sizeof ports) != sizeof ports) std::exit(1);
  for (;;) ::pause();
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--pingpong") a.pingpong = std::atoi(argv[i + 1]);
    else if (k == "--stream-mb") a.stream_mb = std::strtoull(argv[i + 1], nullptr, 10);
    else if (k == "--busy-poll-us") a.busy_poll_us = std::atoi(argv[i + 1]);
    else if (k == "--low-latency-reads") a.low_latency_reads = std::atoi(argv[i + 1]) != 0;
    else if (k == "--sizes") {
      a.sizes.clear();
      for (const char* p = argv[i + 1]; *p;) {
        char* end;
        a.sizes.push_back(static_cast<uint32_t>(std::strtoul(p, &end, 10)));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
      }
    } else if (k == "--only") {
      a.latency = std::string(argv[i + 1]) == "latency";
      a.stream = std::string(argv[i + 1]) == "stream";
    }
  }
  uint16_t raw_port = 0;
  const int raw_fd = RawListen(&raw_port);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return 1;
  const pid_t child = ::fork();  // before any thread exists in this process
  if (child == 0) ServeForever(raw_fd, pipe_fds[1], a);
  ::close(raw_fd);
  uint16_t ports[2];
  if (::read(pipe_fds[0], ports, sizeof ports) != sizeof ports) return 1;  // a pipe, not a socket
  const std::string echo_addr = "tcp://127.0.0.1:" + std::to_string(ports[0]);
  const std::string sink_addr = "tcp://127.0.0.1:" + std::to_string(ports[1]);

  auto t = Transport::Create(BenchOptions(a));
  if (!t.ok()) return 1;
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[128] = {};
    if (std::fgets(load, sizeof load, f)) std::printf("load average at start: %s", load);
    std::fclose(f);
  }
  std::printf("two processes, loopback TCP, %d ping-pongs (+%d warm-up), %zu MB streamed per size, busy_poll %d us, "
              "low_latency_reads %s\n",
              a.pingpong, a.warmup, a.stream_mb, a.busy_poll_us, a.low_latency_reads ? "on" : "off");
  std::printf("%8s | %-21s | %-21s | %6s | %-21s | %-38s | %-11s\n", "size", "raw p50/p99 us", "strata p50/p99 us",
              "p50 x", "raw+epoll p50/p99 us", "stream msg/s raw / strata / strata+kMore", "tput x");
  // All latency runs first: a thread that just streamed flat out is, under
  // CPU contention, woken later by the scheduler than one that slept, which
  // would penalise whichever side streamed last.
  const std::vector<uint32_t>& sizes = a.sizes;
  const size_t n = sizes.size();
  std::vector<Latency> raw(n), ours(n), raw_epoll(n);
  for (size_t i = 0; i < n && a.latency; ++i) {
    raw[i] = RawPingPong(raw_port, sizes[i], a);
    ours[i] = OurPingPong(*t.value(), echo_addr, sizes[i], a);
    raw_epoll[i] = RawPingPong(raw_port, sizes[i], a, /*epoll=*/true);
  }
  for (size_t i = 0; i < n; ++i) {
    const uint32_t size = sizes[i];
    const uint64_t count = std::max<uint64_t>(a.stream_mb * 1024 * 1024 / size, 1000);
    const double raw_tput = a.stream ? RawStream(raw_port, size, count) : 1;
    const double our_tput = a.stream ? OurStream(*t.value(), sink_addr, size, count, 1) : 0;
    const double batched = a.stream ? OurStream(*t.value(), sink_addr, size, count, 32) : 0;
    std::printf("%8u | %9.1f / %9.1f | %9.1f / %9.1f | %6.3f | %9.1f / %9.1f | %10.0f / %10.0f / %10.0f | %4.2f / %4.2f\n",
                size, raw[i].p50_us, raw[i].p99_us, ours[i].p50_us, ours[i].p99_us, ours[i].p50_us / raw[i].p50_us,
                raw_epoll[i].p50_us, raw_epoll[i].p99_us, raw_tput, our_tput, batched, our_tput / raw_tput,
                batched / raw_tput);
    std::fflush(stdout);
  }
  t.value().reset();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return 0;
}
