// logstore_bench: append + group commit throughput and commit latency of
// LogStore on the real disk (PosixFileSystem, fdatasync). A program, not a
// test. For each appender count, N threads loop for --seconds: take the next
// LSN, Append a --size byte range, SyncUpTo(ticket) (leader/follower group
// commit: one fdatasync serves every appender waiting at that moment), and
// record the Append-to-durable latency.
//
//   logstore_bench [--dir PATH] [--seconds S] [--size BYTES] [--threads 1,4,16]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "storage/log_store.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace strata::logservice;

struct Args {
  std::string dir = "logstore_bench.data";
  double seconds = 5;
  std::size_t size = 4096;
  std::vector<int> threads = {1, 4, 16};
};

Args Parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") a.dir = v;
    else if (k == "--seconds") a.seconds = std::atof(v.c_str());
    else if (k == "--size") a.size = static_cast<std::size_t>(std::atol(v.c_str()));
    else if (k == "--threads") {
      a.threads.clear();
      std::stringstream ss(v);
      for (std::string t; std::getline(ss, t, ',');) a.threads.push_back(std::atoi(t.c_str()));
    } else {
      std::fprintf(stderr, "usage: %s [--dir PATH] [--seconds S] [--size BYTES] [--threads 1,4,16]\n", argv[0]);
      std::exit(2);
    }
  }
  return a;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::size_t k = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

int Run(const Args& args, int threads) {
  std::filesystem::remove_all(args.dir);
  LogStoreOptions options;
  options.log = [](LogLevel level, std::string_view m) {
    if (level != LogLevel::kInfo) std::fprintf(stderr, "%.*s\n", static_cast<int>(m.size()), m.data());
  };
  auto opened = LogStore::Open(PosixFileSystem(), args.dir, options);
  if (!opened.ok()) {
    std::fprintf(stderr, "open: %s\n", opened.status().ToString().c_str());
    return 1;
  }
  LogStore& store = **opened;
  const std::string payload(args.size, 'r');
  std::atomic<Lsn> next_lsn{0};
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> latencies(static_cast<std::size_t>(threads));
  const std::uint64_t syncs_before = store.stats().fdatasyncs;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(args.seconds);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto& mine = latencies[static_cast<std::size_t>(t)];
      while (Clock::now() < deadline && !failed) {
        const auto t0 = Clock::now();
        auto ticket = store.Append(next_lsn.fetch_add(payload.size()), 1, payload);
        Status s = ticket.ok() ? store.SyncUpTo(*ticket) : ticket.status();
        if (!s.ok()) {
          std::fprintf(stderr, "append/sync: %s\n", s.ToString().c_str());
          failed = true;
          return;
        }
        mine.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
      }
    });
  }
  for (auto& th : pool) th.join();
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<double> all;
  for (auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  const std::uint64_t syncs = store.stats().fdatasyncs - syncs_before;
  const double appends = static_cast<double>(all.size());
  std::printf("%9d %12.0f %10.1f %12llu %11.1f %10.0f %10.0f\n", threads, appends / elapsed,
              appends * static_cast<double>(args.size) / elapsed / 1e6, static_cast<unsigned long long>(syncs),
              syncs ? appends / static_cast<double>(syncs) : 0.0, Percentile(all, 0.50), Percentile(all, 0.99));
  std::fflush(stdout);
  opened->reset();
  std::filesystem::remove_all(args.dir);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = Parse(argc, argv);
  std::printf("logstore_bench: %zu-byte appends, %.1f s per run, dir %s\n", args.size, args.seconds,
              args.dir.c_str());
  std::printf("%9s %12s %10s %12s %11s %10s %10s\n", "appenders", "appends/s", "MB/s", "fdatasyncs", "appends/sync",
              "p50_us", "p99_us");
  int rc = 0;
  for (int t : args.threads) rc |= Run(args, t);
  return rc;
}
