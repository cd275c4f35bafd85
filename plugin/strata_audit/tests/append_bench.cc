// Cost of the sink alone, not a test; run
// .build/top/plugin/strata_audit/strata_audit_append_bench.
// 1. Formatting: CPU time per sysbench-like query record (format_record, as
//    the writer runs it over a batch), one thread.
// 2. The whole sink: 2 threads append such records to a file (ASYNCHRONOUS),
//    wall time, the appending threads' CPU time per record (what a session
//    pays) and the process's CPU time per record (writer included).
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "audit_log.h"
#include "format.h"

using namespace strata_audit;

namespace {

double thread_cpu_s() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

double process_cpu_s() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

Record query_record() {
  Record r;
  r.kind = EventKind::kQuery;
  r.command_class = "select";
  r.command = "Execute";
  r.user = "sbtest";
  r.priv_user = "sbtest";
  r.host = "localhost";
  r.ip = "127.0.0.1";
  r.db = "sbtest";
  r.query = "SELECT c FROM sbtest3 WHERE id=4996";
  r.connection_id = 1234;
  r.rows_sent = 1;
  r.rows_examined = 1;
  r.query_time_us = 55;
  return r;
}

void format_only(const Record &r) {
  Stamp s;
  s.server_id = 1;
  s.log_start = "2026-11-23T02:00:00";
  std::string body;
  const int n = 1000000;
  size_t bytes = 0;
  const double t0 = thread_cpu_s();
  for (int i = 0; i < n; ++i) {
    s.record_id = static_cast<uint64_t>(i) + 1;
    s.time_us = 1795400345123456LL + i * 7LL;
    if (body.size() > (1 << 20)) body.clear();  // a batch's worth
    const size_t before = body.size();
    format_record(Format::kJson, r, s, &body);
    bytes += body.size() - before;
  }
  const double cpu = thread_cpu_s() - t0;
  std::printf("format: %.0f ns CPU per record (%zu bytes per JSON record)\n", cpu * 1e9 / n,
              bytes / n);
}

}  // namespace

// Optional argument: the number of appending threads (default 2), e.g. 16
// to see the sink's CPU per record with as many sessions as the bench runs.
int main(int argc, char **argv) {
  const Record r = query_record();
  format_only(r);

  Options o;
  o.path = "/tmp/append_bench.log";
  std::remove(o.path.c_str());
  AuditLog log(o);
  std::string err;
  if (log.start(&err)) return 1;
  const int T = argc > 1 ? std::max(1, std::atoi(argv[1])) : 2;
  const int N = 1000000 / T;
  const double cpu0 = process_cpu_s();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  std::vector<double> session_cpu(T);
  for (int t = 0; t < T; ++t)
    ts.emplace_back([&, t] {
      const double c0 = thread_cpu_s();
      for (int i = 0; i < N; ++i) log.append(r);
      session_cpu[t] = thread_cpu_s() - c0;
    });
  for (auto &t : ts) t.join();
  log.flush_buffer();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = process_cpu_s() - cpu0;
  double sessions = 0;
  for (double c : session_cpu) sessions += c;
  std::printf("sink: %d records in %.3f s: %.2f us/record wall, %.2f us/record CPU in the appending "
              "threads, %.2f us/record CPU (all threads, kernel included), written %lu lost %lu waits "
              "%lu\n",
              N * T, s, s * 1e6 / (N * T), sessions * 1e6 / (N * T), cpu * 1e6 / (N * T),
              (unsigned long)log.stats().events_written.load(),
              (unsigned long)log.stats().events_lost.load(),
              (unsigned long)log.stats().write_waits.load());
  log.stop();
  std::remove(o.path.c_str());
}
