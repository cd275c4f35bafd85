// replication_transport_bench: append throughput of the log service over
// TCP vs over verbs on the fake NIC, same in-process cluster
// (tests/replication/in_process_cluster.h: 3 server::Node's, W = 2, each
// on its own rdma::Transport; the client on one more). Not a test; numbers
// go to logservice/README.md.
//
//   replication_transport_bench --seconds 5 --size 131072 --threads 4 [--transport both|tcp|fake-verbs]
//
// Each appender loops: take the stream end under a shared lock and Append
// `size` bytes there, then WaitDurable(end); appends/s and MB/s count
// acknowledged appends. With `both`, TCP runs first, then the fake NIC, each
// on a fresh cluster under $TMPDIR (the same disk, so fdatasync costs alike).
//
// What the fake NIC number means: the verbs engine (receive slots, SEND,
// RDMA WRITE with immediate into the bulk ring, credits) with a software
// NIC thread that copies every byte and delays some steps on purpose; it
// is no estimate of a real NIC, only a check that the bulk path carries the
// log service at a rate of the same order as TCP.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "in_process_cluster.h"
#include "strata/logservice/client.h"

using namespace strata::logservice;
using Clock = std::chrono::steady_clock;

namespace {

struct BenchResult {
  double appends_per_s = 0, mb_per_s = 0, p50_ms = 0, p99_ms = 0;
  int failures = 0;
};

BenchResult Run(testing::TestTransport transport, int threads, double seconds, std::size_t size) {
  testing::InProcessCluster cluster(3, transport, /*seed=*/1);
  BenchResult r;
  if (!cluster.StartAll()) {
    std::fprintf(stderr, "could not start the nodes: %s\n", cluster.UnexpectedLogLines().c_str());
    r.failures = 1;
    return r;
  }
  auto lc = client::LogClient::Open(cluster.Config());
  if (!lc.ok()) {
    std::fprintf(stderr, "open: %s\n", lc.status().ToString().c_str());
    r.failures = 1;
    return r;
  }
  client::LogClient& c = **lc;
  const std::string payload(size, 'r');
  std::mutex order;
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::vector<std::vector<double>> lat(threads);
  std::vector<std::thread> ts;
  const auto start = Clock::now();
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([&, k] {
      while (!stop.load()) {
        const auto t0 = Clock::now();
        client::Lsn end;
        {
          std::lock_guard<std::mutex> l(order);
          const auto at = c.stream_end();
          if (!c.Append(at, payload).ok()) {
            ++failures;
            return;
          }
          end = at + payload.size();
        }
        if (!c.WaitDurable(end, std::chrono::milliseconds(10000)).ok()) {
          ++failures;
          return;
        }
        lat[k].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
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
  r.appends_per_s = all.size() / secs;
  r.mb_per_s = all.size() * size / secs / 1e6;
  r.p50_ms = pct(0.5);
  r.p99_ms = pct(0.99);
  r.failures = failures.load();
  lc->reset();
  for (const auto& v : cluster.violations()) {
    std::fprintf(stderr, "fake NIC violation: %s\n", v.c_str());
    ++r.failures;
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 5;
  std::size_t size = 128 << 10;
  int threads = 4;
  std::string which = "both";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--size") size = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--threads") threads = std::max(1, std::atoi(v.c_str()));
    else if (k == "--transport") which = v;
    else {
      std::fprintf(stderr, "usage: replication_transport_bench [--seconds S] [--size BYTES] [--threads N] "
                           "[--transport both|tcp|fake-verbs]\n");
      return 2;
    }
  }
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[128] = {};
    if (std::fgets(load, sizeof load, f)) std::printf("load average at start: %s", load);
    std::fclose(f);
  }
  std::printf("3 in-process nodes (W = 2) + client, %zu-byte appends, %d appenders, %.1f s per transport\n\n", size,
              threads, seconds);
  std::printf("| transport | appends/s | MB/s | p50 append->durable | p99 |\n|---|---|---|---|---|\n");
  int failed = 0;
  for (auto t : {testing::TestTransport::kTcp, testing::TestTransport::kFakeVerbs}) {
    const bool tcp = t == testing::TestTransport::kTcp;
    if (which != "both" && which != (tcp ? "tcp" : "fake-verbs")) continue;
    const BenchResult r = Run(t, threads, seconds, size);
    std::printf("| %s | %.0f | %.1f | %.2f ms | %.2f ms |%s\n", tcp ? "TCP (loopback)" : "verbs on the fake NIC",
                r.appends_per_s, r.mb_per_s, r.p50_ms, r.p99_ms, r.failures ? " (failures!)" : "");
    std::fflush(stdout);
    failed += r.failures;
  }
  return failed == 0 ? 0 : 1;
}
