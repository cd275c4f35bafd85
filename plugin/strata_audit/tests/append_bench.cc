// Throughput of the sink alone: 2 threads append sysbench-like query records
// to a file (ASYNCHRONOUS). Not a test; run .build/top/plugin/strata_audit/strata_audit_append_bench.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include "audit_log.h"
using namespace strata_audit;
int main() {
  Options o; o.path = "/tmp/append_bench.log";
  std::remove(o.path.c_str());
  AuditLog log(o); std::string err; if (log.start(&err)) return 1;
  Record r; r.kind = EventKind::kQuery; r.command_class = "select"; r.command = "Execute";
  r.user = "sbtest"; r.priv_user = "sbtest"; r.host = "localhost"; r.ip = "127.0.0.1"; r.db = "sbtest";
  r.query = "SELECT c FROM sbtest3 WHERE id=4996";
  const int N = 500000, T = 2;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < T; ++t) ts.emplace_back([&] { for (int i = 0; i < N; ++i) log.append(r); });
  for (auto &t : ts) t.join();
  log.flush_buffer();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%d records in %.3f s: %.2f us/record wall, %.0f records/s, written %lu lost %lu waits %lu\n",
              N * T, s, s * 1e6 / (N * T), N * T / s, (unsigned long)log.stats().events_written.load(),
              (unsigned long)log.stats().events_lost.load(), (unsigned long)log.stats().write_waits.load());
  log.stop(); std::remove(o.path.c_str());
}
