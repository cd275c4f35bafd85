// rdma_bench: ping-pong latency and streaming throughput of the transport's
// TCP path, side by side with raw blocking TCP sockets, in one run.
//
// Two processes: the parent forks the server before it creates any thread;
// the server child runs the raw servers (raw_peer.h) and Transport echo/sink
// servers on loopback; the parent is the client. Sizes are payload bytes
// (our frames add a 32-byte header on the wire).
//
// Built for a busy machine: every variant keeps one connection open for the
// whole run, and the run is a series of short rounds in which the variants
// take turns (in a rotating order). A load burst then hits one or two rounds
// of every variant instead of all of one variant. Reported per variant: the
// median over rounds of the round's p50, the p99 of all samples, and the
// median over rounds of (variant p50 / raw p50 of the same round), which is
// the figure to compare with the 1.15x target, and the same against the
// better of raw and raw+crc in each round (a stalled raw round cannot
// flatter us there). Streaming likewise alternates raw, raw+crc (one
// CRC32C pass per message at each end: the floor of any checksummed stream)
// and ours per round and reports the median per-round ratio to raw.
//
// Ping-pong variants:
//   raw        blocking sockets, no framing (the target's baseline)
//   raw+epoll  the same, but each side waits in epoll_wait before every recv:
//              the floor of any readiness-based event loop
//   raw+crc    raw plus one CRC32C pass over each message on each side of
//              each hop (4 per round trip, as our checksum costs): the floor
//              of any design that checksums every payload end to end
//   raw+crcinc raw+crc, but the receiver checksums each chunk as recv returns
//              it, so only the last chunk's pass follows the last byte
//   raw+trail  raw+crcinc, and the sender checksums after writing the
//              payload and sends the CRC as a 4-byte trailer (wire v2's
//              large frames): the floor of an overlapped checksum
//   strata     our TCP path, low_latency_reads off
//   strata+llr our TCP path, low_latency_reads on (a blocking recv before
//              epoll_wait; TransportOptions::low_latency_reads)
// Every strata connection has its own I/O thread on both sides, so
// low_latency_reads applies (it only works for single-socket I/O threads).
//
//   rdma_bench [--rounds R] [--pingpong N] [--stream-mb MB] [--sizes 64,4096,65536]
//              [--only latency|stream] [--busy-poll-us US] [--low-latency-reads 0|1]
// --low-latency-reads sets the streaming transports' option (default: the
// TransportOptions default); latency always measures both settings.
//
// Not a test: numbers depend on the machine and its load.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "raw_peer.h"
#include "strata/rdma/rdma.h"

using namespace strata::rdma;
using namespace strata::rdma::bench;
using Clock = std::chrono::steady_clock;

namespace {

struct Args {
  int rounds = 15;
  int pingpong = 300;  // per variant per round
  int warmup = 300;    // per connection, once
  size_t stream_mb = 8;
  uint64_t stream_min_msgs = 2000;
  int busy_poll_us = 0;
  std::optional<bool> stream_low_latency_reads;
  std::vector<uint32_t> sizes = {64u, 4096u, 65536u};
  bool latency = true, stream = true;
};

TransportOptions BenchOptions(const Args& a, bool low_latency_reads, uint32_t io_threads) {
  TransportOptions o;
  o.cluster_id = "bench";
  o.secret = "bench-secret";
  o.random_seed = 1;
  o.max_message_size = 64 * 1024;
  o.receive_credits = 128;
  o.send_buffer_size = 4 * 1024 * 1024;
  o.busy_poll = std::chrono::microseconds(a.busy_poll_us);
  o.low_latency_reads = low_latency_reads;
  o.io_threads = io_threads;
  o.log = [](LogLevel level, std::string_view line) {
    if (level >= LogLevel::kError) std::fprintf(stderr, "bench: %.*s\n", static_cast<int>(line.size()), line.data());
  };
  return o;
}

bool StreamLowLatencyReads(const Args& a) { return a.stream_low_latency_reads.value_or(TransportOptions{}.low_latency_reads); }

// CPU time of every thread of a process, in ns resolution (schedstat): a
// cost that CPU contention from other processes distorts far less than the
// elapsed time. pid 0: this process.
double CpuSeconds(pid_t pid = 0) {
  const std::string dir = "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/task";
  double total = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (FILE* f = std::fopen((dir + "/" + e->d_name + "/schedstat").c_str(), "r")) {
        unsigned long long ns = 0;
        if (std::fscanf(f, "%llu", &ns) == 1) total += ns / 1e9;
        std::fclose(f);
      }
    }
    ::closedir(d);
  }
  return total;
}
pid_t g_server_pid = 0;

// Client and server CPU spent between construction and Add().
struct CpuMeter {
  double client0 = CpuSeconds(), server0 = CpuSeconds(g_server_pid);
  void AddTo(double* client, double* server) const {
    *client += CpuSeconds() - client0;
    *server += CpuSeconds(g_server_pid) - server0;
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}
double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[std::min(v.size() - 1, static_cast<size_t>(v.size() * q))];
}

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

[[noreturn]] void Die(const std::string& what, const Status& s) {
  std::fprintf(stderr, "%s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

// Our ping-pong client: the next ping leaves from the receive handler (the
// I/O thread), like the blocking raw client, with no thread hand-off.
class OurPinger {
 public:
  OurPinger(Transport& t, const std::string& addr, uint32_t size) : buf_(size, std::byte{'x'}) {
    ConnectionHandlers h;
    h.on_message = [this](Connection& c, const Message&) {
      const auto now = Clock::now();
      samples_->push_back(std::chrono::duration<double, std::micro>(now - t0_).count());
      if (++done_ == target_) {
        waiter_.Set();
        return;
      }
      t0_ = Clock::now();
      if (Status s = c.Send(buf_); !s.ok()) Die("send", s);
    };
    auto c = t.Connect(addr, h);
    if (!c.ok()) Die("connect " + addr, c.status());
    conn_ = c.value();
  }
  ~OurPinger() { conn_->Close(); }
  void Round(int n, std::vector<double>* samples) {
    samples_ = samples;
    target_ = n;
    done_ = 0;
    t0_ = Clock::now();
    if (Status s = conn_->Send(buf_); !s.ok()) Die("send", s);
    waiter_.Wait();
  }

 private:
  std::vector<std::byte> buf_;
  std::shared_ptr<Connection> conn_;
  Waiter waiter_;
  std::vector<double>* samples_ = nullptr;
  int target_ = 0, done_ = 0;
  Clock::time_point t0_;
};

// Our streaming client: `count` messages, then a 1-byte end marker that the
// sink acknowledges. batch > 1: all but every batch-th message carry kMore.
class OurStreamer {
 public:
  OurStreamer(Transport& t, const std::string& addr, uint32_t size, uint64_t batch) : buf_(size, std::byte{'x'}), batch_(batch) {
    ConnectionHandlers h;
    h.on_message = [this](Connection&, const Message&) { waiter_.Set(); };
    auto c = t.Connect(addr, h);
    if (!c.ok()) Die("connect " + addr, c.status());
    conn_ = c.value();
  }
  ~OurStreamer() { conn_->Close(); }
  void Round(uint64_t count) {
    for (uint64_t i = 0; i < count; ++i) {
      const SendFlags flags = (batch_ > 1 && (i + 1) % batch_ != 0) ? SendFlags::kMore : SendFlags::kNone;
      if (Status s = conn_->Send(buf_, {}, std::chrono::seconds(10), flags); !s.ok()) Die("send", s);
    }
    const std::byte end_marker[1] = {std::byte{'E'}};
    if (Status s = conn_->Send(end_marker, {}, std::chrono::seconds(10)); !s.ok()) Die("send", s);
    waiter_.Wait();
  }

 private:
  std::vector<std::byte> buf_;
  uint64_t batch_;
  std::shared_ptr<Connection> conn_;
  Waiter waiter_;
};

// ---------------------------------------------------------------- server child

struct ServerPorts {
  uint16_t echo = 0, echo_llr = 0, sink = 0;
};

[[noreturn]] void ServeForever(int raw_fd, int report_fd, const Args& a) {
  std::thread raw([raw_fd] { RawServe(raw_fd); });
  raw.detach();
  const auto n = static_cast<uint32_t>(a.sizes.size());
  // One I/O thread per connection (see the header comment).
  auto echo_plain = Transport::Create(BenchOptions(a, false, n));
  auto echo_llr = Transport::Create(BenchOptions(a, true, n));
  auto sinks = Transport::Create(BenchOptions(a, StreamLowLatencyReads(a), 2 * n));
  if (!echo_plain.ok() || !echo_llr.ok() || !sinks.ok()) std::exit(1);
  auto echo_handlers = [](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) {
      if (Status s = c.Send(m.payload(), {}, std::chrono::seconds(10)); !s.ok()) Die("echo", s);
    };
    return h;
  };
  auto l1 = echo_plain.value()->Listen("tcp://127.0.0.1:0", echo_handlers);
  auto l2 = echo_llr.value()->Listen("tcp://127.0.0.1:0", echo_handlers);
  auto l3 = sinks.value()->Listen("tcp://127.0.0.1:0", [](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) {
      if (m.payload().size() == 1) (void)c.Send(m.payload());  // end marker: ack
    };
    return h;
  });
  if (!l1.ok() || !l2.ok() || !l3.ok()) std::exit(1);
  const ServerPorts ports{l1.value()->endpoint().port, l2.value()->endpoint().port, l3.value()->endpoint().port};
  if (::write(report_fd, &ports, sizeof ports) != sizeof ports) std::exit(1);
  for (;;) ::pause();
}

// ---------------------------------------------------------------- latency

enum Variant { kRaw, kRawEpoll, kRawCrc, kRawCrcInc, kRawTrailer, kOurs, kOursLlr, kVariants };
const char* const kVariantNames[kVariants] = {"raw", "raw+epoll", "raw+crc", "raw+crcinc", "raw+trail", "strata",
                                              "strata+llr"};

struct VariantResult {
  std::vector<double> round_p50;  // per round
  std::vector<double> all;        // every sample
  std::vector<double> ratio;      // per round: p50 / raw p50
  std::vector<double> ratio_best; // per round: p50 / min(raw, raw+crc) p50
  double cpu_seconds = 0, server_cpu_seconds = 0;
  uint64_t round_trips = 0;
};

void MeasureLatency(const Args& a, uint16_t raw_port, const std::string& echo, const std::string& echo_llr,
                    Transport& plain, Transport& llr) {
  std::printf("\nping-pong: %d rounds x %d round trips per variant (+%d warm-up per connection), variants rotate per round\n",
              a.rounds, a.pingpong, a.warmup);
  std::printf("%7s | %-10s | %9s | %9s | %7s | %-15s | %-12s | %-15s | %s\n", "size", "variant", "p50 us", "p99 us",
              "p50 x", "x min..max", "rounds<=1.15", "x best raw|crc", "cpu us/rt client / server");
  for (uint32_t size : a.sizes) {
    RawClient raw(raw_port, RawMode::kEcho, size), raw_epoll(raw_port, RawMode::kEchoEpoll, size),
        raw_crc(raw_port, RawMode::kEchoCrc, size), raw_crc_inc(raw_port, RawMode::kEchoCrcInc, size),
        raw_trailer(raw_port, RawMode::kEchoCrcTrailer, size);
    OurPinger ours(plain, echo, size), ours_llr(llr, echo_llr, size);
    auto run = [&](int v, int n, std::vector<double>* samples) {
      if (v == kOurs || v == kOursLlr) {
        (v == kOurs ? ours : ours_llr).Round(n, samples);
        return;
      }
      RawClient& c = v == kRaw ? raw : v == kRawEpoll ? raw_epoll : v == kRawCrc ? raw_crc : v == kRawCrcInc ? raw_crc_inc : raw_trailer;
      for (int i = 0; i < n; ++i) {
        const auto t0 = Clock::now();
        if (!c.RoundTrip()) std::exit(1);
        samples->push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    };
    std::vector<double> scratch;
    for (int v = 0; v < kVariants; ++v) run(v, a.warmup, &scratch);
    VariantResult res[kVariants];
    for (int r = 0; r < a.rounds; ++r) {
      double p50[kVariants];
      for (int k = 0; k < kVariants; ++k) {
        const int v = (r + k) % kVariants;
        std::vector<double> samples;
        samples.reserve(a.pingpong);
        const CpuMeter cpu;
        run(v, a.pingpong, &samples);
        cpu.AddTo(&res[v].cpu_seconds, &res[v].server_cpu_seconds);
        res[v].round_trips += samples.size();
        p50[v] = Median(samples);
        res[v].round_p50.push_back(p50[v]);
        res[v].all.insert(res[v].all.end(), samples.begin(), samples.end());
      }
      // A blocking raw socket sometimes stalls for whole rounds here (its
      // p50 several times raw+crc's, which does strictly more work); the
      // best of the two is a baseline such a stall cannot flatter us with.
      const double best = std::min(p50[kRaw], p50[kRawCrc]);
      for (int v = 0; v < kVariants; ++v) {
        res[v].ratio.push_back(p50[v] / p50[kRaw]);
        res[v].ratio_best.push_back(p50[v] / best);
      }
    }
    for (int v = 0; v < kVariants; ++v) {
      const auto& x = res[v];
      const auto within = std::count_if(x.ratio.begin(), x.ratio.end(), [](double q) { return q <= 1.15; });
      char range[32];
      std::snprintf(range, sizeof range, "%.2f..%.2f", *std::min_element(x.ratio.begin(), x.ratio.end()),
                    *std::max_element(x.ratio.begin(), x.ratio.end()));
      const double rts = static_cast<double>(x.round_trips);
      std::printf("%7u | %-10s | %9.1f | %9.1f | %7.3f | %-15s | %5ld of %-3d | %15.3f | %6.1f / %6.1f\n", size,
                  kVariantNames[v], Median(x.round_p50), Quantile(x.all, 0.99), Median(x.ratio), range,
                  static_cast<long>(within), a.rounds, Median(x.ratio_best), x.cpu_seconds * 1e6 / rts,
                  x.server_cpu_seconds * 1e6 / rts);
    }
    std::fflush(stdout);
  }
}

// ---------------------------------------------------------------- streaming

void MeasureStreaming(const Args& a, uint16_t raw_port, const std::string& sink, Transport& t) {
  std::printf("\nstreaming: %d rounds, per round and size max(%zu MB, %llu messages) per variant, variants rotate; "
              "strata low_latency_reads %s\n",
              a.rounds, a.stream_mb, static_cast<unsigned long long>(a.stream_min_msgs),
              StreamLowLatencyReads(a) ? "on" : "off");
  std::printf("%7s | %8s | %-45s | %-29s | %-25s | %s\n", "size", "msgs",
              "median msg/s raw / raw+crc / strata / +kMore", "x raw+crc / strata / +kMore", "rounds>=1.0 c / s / k",
              "cpu us/msg sender+receiver raw / raw+crc / strata / +kMore");
  // Variants: raw, raw+crc (one CRC32C pass per message at each end: the
  // floor of any checksummed stream), strata, strata with kMore.
  constexpr int kStreamVariants = 4;
  for (uint32_t size : a.sizes) {
    const uint64_t count = std::max<uint64_t>(a.stream_mb * 1024 * 1024 / size, a.stream_min_msgs);
    RawClient raw(raw_port, RawMode::kSink, size, count), raw_crc(raw_port, RawMode::kSinkCrc, size, count);
    OurStreamer ours(t, sink, size, 1), batched(t, sink, size, 32);
    double cpu_client[kStreamVariants] = {}, cpu_server[kStreamVariants] = {};
    auto run = [&](int v) {
      const CpuMeter cpu;
      const auto t0 = Clock::now();
      if (v < 2) {
        if (!(v == 0 ? raw : raw_crc).StreamBatch()) std::exit(1);
      } else {
        (v == 2 ? ours : batched).Round(count);
      }
      const double rate = static_cast<double>(count) / std::chrono::duration<double>(Clock::now() - t0).count();
      cpu.AddTo(&cpu_client[v], &cpu_server[v]);
      return rate;
    };
    for (int v = 0; v < kStreamVariants; ++v) run(v);  // warm-up (socket buffers grow)
    for (int v = 0; v < kStreamVariants; ++v) cpu_client[v] = cpu_server[v] = 0;
    std::vector<double> rate[kStreamVariants], ratio[kStreamVariants];
    for (int r = 0; r < a.rounds; ++r) {
      double x[kStreamVariants];
      for (int k = 0; k < kStreamVariants; ++k) {
        const int v = (r + k) % kStreamVariants;
        x[v] = run(v);
        rate[v].push_back(x[v]);
      }
      for (int v = 1; v < kStreamVariants; ++v) ratio[v].push_back(x[v] / x[0]);
    }
    auto at_least_one = [](const std::vector<double>& q) {
      return static_cast<long>(std::count_if(q.begin(), q.end(), [](double y) { return y >= 1.0; }));
    };
    const double msgs = static_cast<double>(count) * a.rounds / 1e6;
    std::printf("%7u | %8llu | %9.0f / %9.0f / %9.0f / %9.0f | %7.2f / %7.2f / %7.2f     | %3ld / %3ld / %3ld of %-3d  |",
                size, static_cast<unsigned long long>(count), Median(rate[0]), Median(rate[1]), Median(rate[2]),
                Median(rate[3]), Median(ratio[1]), Median(ratio[2]), Median(ratio[3]), at_least_one(ratio[1]),
                at_least_one(ratio[2]), at_least_one(ratio[3]), a.rounds);
    for (int v = 0; v < kStreamVariants; ++v)
      std::printf("%s%.2f+%.2f", v == 0 ? " " : " / ", cpu_client[v] / msgs, cpu_server[v] / msgs);
    std::printf("\n");
    std::fflush(stdout);
  }
}

void PrintLoad(const char* when) {
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[128] = {};
    if (std::fgets(load, sizeof load, f)) std::printf("load average %s: %s", when, load);
    std::fclose(f);
  }
}

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "--help" || k == "-h" || i + 1 >= argc) {
      std::printf(
          "usage: rdma_bench [--rounds R] [--pingpong N] [--warmup N] [--stream-mb MB] [--stream-min-msgs N]\n"
          "                  [--sizes 64,4096,65536] [--only latency|stream] [--busy-poll-us US]\n"
          "                  [--low-latency-reads 0|1]   (streaming transports; latency measures both)\n");
      std::exit(k == "--help" || k == "-h" ? 0 : 2);
    }
    const char* v = argv[++i];
    if (k == "--rounds") a.rounds = std::max(1, std::atoi(v));
    else if (k == "--pingpong") a.pingpong = std::max(1, std::atoi(v));
    else if (k == "--warmup") a.warmup = std::max(0, std::atoi(v));
    else if (k == "--stream-mb") a.stream_mb = std::strtoull(v, nullptr, 10);
    else if (k == "--stream-min-msgs") a.stream_min_msgs = std::strtoull(v, nullptr, 10);
    else if (k == "--busy-poll-us") a.busy_poll_us = std::atoi(v);
    else if (k == "--low-latency-reads") a.stream_low_latency_reads = std::atoi(v) != 0;
    else if (k == "--sizes") {
      a.sizes.clear();
      for (const char* p = v; *p;) {
        char* end;
        const unsigned long s = std::strtoul(p, &end, 10);
        if (end == p) break;
        a.sizes.push_back(static_cast<uint32_t>(s));
        p = *end == ',' ? end + 1 : end;
      }
    } else if (k == "--only") {
      a.latency = std::string(v) == "latency";
      a.stream = std::string(v) == "stream";
    } else {
      std::fprintf(stderr, "unknown option %s (see --help)\n", k.c_str());
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = ParseArgs(argc, argv);
  uint16_t raw_port = 0;
  const int raw_fd = RawListen(&raw_port);
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return 1;
  const pid_t child = ::fork();  // before any thread exists in this process
  if (child == 0) ServeForever(raw_fd, pipe_fds[1], a);
  g_server_pid = child;
  ::close(raw_fd);
  ServerPorts ports;
  if (::read(pipe_fds[0], &ports, sizeof ports) != sizeof ports) return 1;  // a pipe, not a socket
  auto addr = [](uint16_t port) { return "tcp://127.0.0.1:" + std::to_string(port); };

  auto plain = Transport::Create(BenchOptions(a, false, 2));
  auto llr = Transport::Create(BenchOptions(a, true, 2));
  auto streams = Transport::Create(BenchOptions(a, StreamLowLatencyReads(a), 2));
  if (!plain.ok() || !llr.ok() || !streams.ok()) return 1;
  PrintLoad("at start");
  std::printf("two processes, loopback TCP, busy_poll %d us, sizes in payload bytes\n", a.busy_poll_us);
  if (a.latency) MeasureLatency(a, raw_port, addr(ports.echo), addr(ports.echo_llr), *plain.value(), *llr.value());
  if (a.stream) MeasureStreaming(a, raw_port, addr(ports.sink), *streams.value());
  PrintLoad("at end");
  plain.value().reset();
  llr.value().reset();
  streams.value().reset();
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  return 0;
}
