// replication_bench: append + WaitDurable latency and throughput through the
// client library against 3 local logserviced processes (W = 2), with 1, 4,
// 16... concurrent appenders. Not a test; numbers go to logservice/README.md.
//
//   replication_bench --seconds 5 --size 4096 --threads 1,4,16
//
// Each appender loops: take the stream end under a shared lock and Append
// `size` bytes there (the LSN order is the lock order), then WaitDurable(end).
// Latency = Append call to WaitDurable return. Data directories live in a
// fresh temp dir under $TMPDIR (default /tmp): the real disk's fdatasync cost.
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

int main(int argc, char** argv) {
  double seconds = 5;
  std::size_t size = 4096;
  std::vector<int> threads = {1, 4, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--seconds") seconds = std::atof(v.c_str());
    else if (k == "--size") size = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--threads") {
      threads.clear();
      for (std::size_t p = 0; p < v.size();) {
        auto q = v.find(',', p);
        threads.push_back(std::atoi(v.substr(p, q - p).c_str()));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else {
      std::fprintf(stderr, "usage: replication_bench [--seconds S] [--size BYTES] [--threads 1,4,16]\n");
      return 2;
    }
  }
  testing::LocalCluster cluster(3);
  if (!cluster.StartAll()) {
    std::fprintf(stderr, "could not start 3 logserviced processes\n");
    return 1;
  }
  client::ClusterConfig cfg;
  cfg.nodes = cluster.addresses();
  cfg.transport = client::TransportKind::kTcp;
  cfg.write_quorum = 2;
  cfg.cluster_id = cluster.cluster_id();
  cfg.secret = cluster.secret();
  cfg.seed = 1;
  auto lc = client::LogClient::Open(cfg);
  if (!lc.ok()) {
    std::fprintf(stderr, "open: %s\n", lc.status().ToString().c_str());
    return 1;
  }
  client::LogClient& c = **lc;
  const std::string payload(size, 'r');
  std::printf("| appenders | appends/s | MB/s | p50 append->durable | p99 | max |\n|---|---|---|---|---|---|\n");
  for (int t : threads) {
    std::mutex order;
    std::atomic<bool> stop{false};
    std::vector<std::vector<double>> lat(t);
    std::vector<std::thread> ts;
    std::atomic<int> failures{0};
    const auto start = Clock::now();
    for (int k = 0; k < t; ++k) {
      ts.emplace_back([&, k] {
        while (!stop.load()) {
          const auto t0 = Clock::now();
          client::Lsn end;
          {
            std::lock_guard<std::mutex> l(order);
            const auto at = c.stream_end();
            if (!c.Append(at, payload).ok()) { ++failures; return; }
            end = at + payload.size();
          }
          if (!c.WaitDurable(end, std::chrono::milliseconds(10000)).ok()) { ++failures; return; }
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
    std::printf("| %d | %.0f | %.1f | %.2f ms | %.2f ms | %.2f ms |%s\n", t, all.size() / secs,
                all.size() * size / secs / 1e6, pct(0.5) / 1000, pct(0.99) / 1000, all.empty() ? 0 : all.back() / 1000,
                failures ? " (failures!)" : "");
    std::fflush(stdout);
  }
  return 0;
}
