// replication_bench: append + WaitDurable latency and throughput through the
// client library against 3 local logserviced processes (W = 2), side by side
// in the same run with a local fdatasync loop writing the same bytes, with
// 1, 4, 16... concurrent appenders. Not a test; numbers go to
// logservice/README.md.
//
//   replication_bench --seconds 5 --size 4096 --threads 1,4,16 [--rounds 2] [--tails] [--one-call]
//                     [--written-acks off] [--requests-in-flight N]
//
// Replicated: each appender loops: take the stream end under a shared lock
// and Append `size` bytes there (the LSN order is the lock order), then
// WaitDurable(end). Latency = Append call to WaitDurable return.
// With --tails, commits are shaped as InnoDB's: the stream is counted in
// bytes, not blocks; each commit appends the 512-byte blocks it completed
// and puts the partial last block as the tail register (PutTail), then
// waits for its data end. That is the per-commit register write the nodes
// do for every InnoDB commit (docs/design/logservice-tail-in-journal.md).
// With --one-call as well, blocks and tail go in one AppendWithTail, as
// InnoDB's log writer hands them over now. --written-acks off: the nodes
// send only the durable reply, as under innodb_flush_log_at_trx_commit=1
// (LogClient::set_written_acks). --requests-in-flight N: the client's
// ClusterConfig::node_requests_in_flight (its default if not given; 0: no
// write is held, every one leaves at once). The last column is the client's write
// requests (AppendReq, TailReq) per commit and node: 1.00 when every commit
// travels alone, less when the client coalesces (WriteStats::posts / 3).
// Local: each appender loops: under a shared lock pwrite `size` bytes at the
// end of one file, then fdatasync(fd) outside the lock (concurrent
// fdatasyncs of one file share the journal commit, the kernel's own group
// commit). Latency = pwrite call to fdatasync return.
// Both write into the same fresh temp dir under $TMPDIR (default /tmp), so
// the same disk. For each appender count the two alternate (local first,
// then replicated, `rounds` times) so machine load hits both alike.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "local_cluster.h"
#include "strata/logservice/client.h"

using namespace strata::logservice;
using Clock = std::chrono::steady_clock;

namespace {

struct Result {
  double appends_per_s = 0, mb_per_s = 0, p50_ms = 0, p99_ms = 0, max_ms = 0;
  std::size_t ops = 0;
  int failures = 0;
  double requests_per_op_node = -1;  // replicated only
};

// Runs `threads` copies of `one` (returns false on failure) for `seconds`.
template <typename Op>
Result Measure(int threads, double seconds, std::size_t size, Op one) {
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::thread> ts;
  const auto start = Clock::now();
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([&, k] {
      while (!stop.load()) {
        const auto t0 = Clock::now();
        if (!one()) {
          ++failures;
          return;
        }
        lat[k].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& th : ts) th.join();
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) { return all.empty() ? 0.0 : all[std::min(all.size() - 1, std::size_t(p * all.size()))]; };
  Result r;
  r.ops = all.size();
  r.appends_per_s = all.size() / secs;
  r.mb_per_s = all.size() * size / secs / 1e6;
  r.p50_ms = pct(0.5) / 1000;
  r.p99_ms = pct(0.99) / 1000;
  r.max_ms = all.empty() ? 0 : all.back() / 1000;
  r.failures = failures.load();
  return r;
}

void Print(const char* what, int threads, const Result& r) {
  char req[32] = "";
  if (r.requests_per_op_node >= 0) std::snprintf(req, sizeof req, "%.2f", r.requests_per_op_node);
  std::printf("| %s | %d | %.0f | %.1f | %.2f ms | %.2f ms | %.2f ms | %s |%s\n", what, threads, r.appends_per_s,
              r.mb_per_s, r.p50_ms, r.p99_ms, r.max_ms, req, r.failures ? " (failures!)" : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::size_t size = 4096;
  std::vector<int> threads = {1, 4, 16};
  int rounds = 1;
  bool tails = false, one_call = false, written_acks = true;
  int requests_in_flight = -1;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--tails" || k == "--one-call") {
      (k == "--tails" ? tails : one_call) = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", k.c_str());
      return 2;
    }
    std::string v = argv[i + 1];
    if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--rounds") rounds = std::max(1, std::atoi(v.c_str()));
    else if (k == "--size") size = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--written-acks" && (v == "on" || v == "off")) written_acks = v == "on";
    else if (k == "--requests-in-flight") requests_in_flight = std::max(0, std::atoi(v.c_str()));
    else if (k == "--threads") {
      threads.clear();
      for (std::size_t p = 0; p < v.size();) {
        auto q = v.find(',', p);
        threads.push_back(std::atoi(v.substr(p, q - p).c_str()));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else {
      std::fprintf(stderr,
                   "usage: replication_bench [--seconds S] [--size BYTES] [--threads 1,4,16] [--rounds N] [--tails] "
                   "[--one-call] [--written-acks on|off] [--requests-in-flight N]\n");
      return 2;
    }
  }
  testing::LocalCluster cluster(3);
  if (!cluster.StartAll()) {
    std::fprintf(stderr, "could not start 3 logserviced processes\n");
    return 1;
  }
  client::ClusterConfig cfg = cluster.ClientConfig();
  if (requests_in_flight >= 0) cfg.node_requests_in_flight = static_cast<std::size_t>(requests_in_flight);
  auto lc = client::LogClient::Open(cfg);
  if (!lc.ok()) {
    std::fprintf(stderr, "open: %s\n", lc.status().ToString().c_str());
    return 1;
  }
  client::LogClient& c = **lc;
  c.set_written_acks(written_acks);
  const std::string payload(size, 'r');
  const std::string local_path = cluster.root() + "/local_fdatasync.dat";
  const int fd = ::open(local_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror("open local file");
    return 1;
  }
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[128] = {};
    if (std::fgets(load, sizeof load, f)) std::printf("load average at start: %s", load);
    std::fclose(f);
  }
  std::printf("3 logserviced on loopback TCP (W = 2) vs a local pwrite+fdatasync loop, %zu-byte %s%s, written acks %s, "
              "requests in flight per node %s, %.1f s per cell, data under %s\n\n",
              size, tails ? "commits (blocks + tail register)" : "appends", tails && one_call ? " in one call" : "",
              written_acks ? "on" : "off", requests_in_flight < 0 ? "default" : std::to_string(requests_in_flight).c_str(),
              seconds, cluster.root().c_str());
  std::printf("| path | appenders | appends/s | MB/s | p50 append->durable | p99 | max | requests/commit/node |\n"
              "|---|---|---|---|---|---|---|---|\n");
  client::Lsn data_end = c.stream_end();  // --tails: the byte end of the stream, tail included
  for (int t : threads) {
    for (int round = 0; round < rounds; ++round) {
      std::mutex file_mu;
      off_t file_end = 0;
      const Result local = Measure(t, seconds, size, [&] {
        {
          std::lock_guard<std::mutex> l(file_mu);
          if (::pwrite(fd, payload.data(), payload.size(), file_end) != static_cast<ssize_t>(payload.size())) return false;
          file_end += static_cast<off_t>(payload.size());
        }
        return ::fdatasync(fd) == 0;
      });
      Print("local fdatasync", t, local);
      std::mutex order;
      const std::uint64_t posts_before = c.write_stats().posts;
      Result repl = Measure(t, seconds, size, [&] {
        client::Lsn end;
        {
          std::lock_guard<std::mutex> l(order);
          if (!tails) {
            const auto at = c.stream_end();
            if (!c.Append(at, payload).ok()) return false;
            end = at + payload.size();
          } else {
            constexpr client::Lsn kBlock = 512;
            end = data_end + payload.size();
            const client::Lsn full_end = end / kBlock * kBlock;
            const client::Lsn at = c.stream_end();
            client::ClientStatus st;
            if (one_call && full_end > at && end > full_end) {
              st = c.AppendWithTail(at, std::string(full_end - at, 'r'), std::string(kBlock, 'r'), end);
            } else {
              if (full_end > at) st = c.Append(at, std::string(full_end - at, 'r'));
              if (st.ok() && end > full_end) st = c.PutTail(full_end, std::string(kBlock, 'r'), end);
            }
            if (!st.ok()) {
              std::fprintf(stderr, "commit to %llu: %s\n", static_cast<unsigned long long>(end), st.ToString().c_str());
              return false;
            }
            data_end = end;
          }
        }
        auto waited = c.WaitDurable(end, std::chrono::milliseconds(10000));
        if (!waited.ok()) {
          static std::once_flag once;
          std::call_once(once, [&] { std::fprintf(stderr, "wait for %llu: %s\n", static_cast<unsigned long long>(end),
                                                  waited.ToString().c_str()); });
        }
        return waited.ok();
      });
      if (repl.ops > 0) repl.requests_per_op_node = double(c.write_stats().posts - posts_before) / 3 / repl.ops;
      Print("3 nodes, W=2", t, repl);
      std::printf("| ratio replicated/local | %d | %.2fx | | %.2fx | %.2fx | | |\n", t,
                  local.appends_per_s > 0 ? repl.appends_per_s / local.appends_per_s : 0.0,
                  local.p50_ms > 0 ? repl.p50_ms / local.p50_ms : 0.0, local.p99_ms > 0 ? repl.p99_ms / local.p99_ms : 0.0);
      std::fflush(stdout);
      if (::ftruncate(fd, 0) != 0) return 1;
    }
  }
  ::close(fd);
  return 0;
}
