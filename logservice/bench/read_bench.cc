// read_bench: how fast recovery can pull redo out of the log service, with
// LogClient::Read (one round trip per call) and with LogReadAhead (several
// reads in flight), against 3 local logserviced processes (W = 2). Not a
// test; numbers go to the recovery benchmark page (docs/benchmarks/).
//
//   read_bench [--mib 1024] [--step 65536] [--depths 1,2,4,8] [--rounds 3] [--parse-mbps 0]
//
// Setup: appends --mib MiB of redo in 128 KiB appends and waits until it is
// durable; then closes the writer and opens a new one, as a restarted
// server does (recovery reads through the writer that just sealed).
// Each round reads the whole log front to back once per method, in calls
// of --step bytes (InnoDB asks 64 KiB at a time), the methods in turn so
// that machine load hits them alike:
//   read/step    LogClient::Read per call: what recovery does before read-ahead
//   read/1MiB    LogClient::Read of 1 MiB per call (the wire's largest read)
//   ahead/dN     LogReadAhead with N requests of 1 MiB in flight, --step calls
// Every read is checked against what was written (RedoBytes). The nodes'
// files are in the page cache after the writes: this measures the path
// (round trips, copies, transport), not the disk.
// --parse-mbps P: after each call the reader keeps its thread busy for as
// long as parsing the bytes at P MB/s would take (InnoDB's scan parses at
// 200-300 MB/s here), as recovery does between reads; that is where a
// read-ahead gains more than its raw MB/s, the node working meanwhile.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "local_cluster.h"
#include "strata/logservice/client.h"
#include "strata/logservice/read_ahead.h"

using namespace strata::logservice;
using Clock = std::chrono::steady_clock;

namespace {

using ReadFn = std::function<client::ClientResult<std::string>(client::Lsn, std::size_t)>;

// Busy for as long as parsing `bytes` at `mbps` MB/s would take (0: not at all).
void Parse(std::size_t bytes, double mbps) {
  if (mbps <= 0) return;
  const auto until = Clock::now() + std::chrono::duration<double>(bytes / (mbps * 1e6));
  while (Clock::now() < until) {
  }
}

// MB/s for reading [0, end) through `read`, asking at most `call_cap` bytes
// per call and parsing each answer at `parse_mbps`; -1 on a failure or on
// bytes that differ from what was written.
double Measure(const ReadFn& read, std::uint64_t end, std::size_t call_cap, double parse_mbps) {
  const auto t0 = Clock::now();
  std::uint64_t at = 0;
  bool same = true;
  while (at < end) {
    auto r = read(at, std::min<std::uint64_t>(call_cap, end - at));
    if (!r.ok()) {
      std::fprintf(stderr, "read at %llu: %s\n", static_cast<unsigned long long>(at), r.status().ToString().c_str());
      return -1;
    }
    if (r->empty()) break;
    // Spot-check a few bytes per call (a full compare would cost as much as the read).
    for (std::size_t k = 0; k < r->size(); k += 4093) same = same && (*r)[k] == testing::RedoByteAt(at + k);
    at += r->size();
    Parse(r->size(), parse_mbps);
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (at != end || !same) {
    std::fprintf(stderr, "read back %llu of %llu bytes%s\n", static_cast<unsigned long long>(at),
                 static_cast<unsigned long long>(end), same ? "" : ", with wrong bytes");
    return -1;
  }
  return end / 1e6 / s;
}

std::vector<int> ParseList(const std::string& v) {
  std::vector<int> out;
  for (std::size_t p = 0; p < v.size();) {
    auto q = v.find(',', p);
    out.push_back(std::atoi(v.substr(p, q - p).c_str()));
    p = q == std::string::npos ? v.size() : q + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t mib = 1024;
  std::size_t step = 65536;
  std::vector<int> depths = {1, 2, 4, 8};
  int rounds = 3;
  double parse_mbps = 0;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", k.c_str());
      return 2;
    }
    const std::string v = argv[i + 1];
    if (k == "--mib") mib = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--step") step = std::strtoull(v.c_str(), nullptr, 10);
    else if (k == "--depths") depths = ParseList(v);
    else if (k == "--rounds") rounds = std::max(1, std::atoi(v.c_str()));
    else if (k == "--parse-mbps") parse_mbps = std::atof(v.c_str());
    else {
      std::fprintf(stderr,
                   "usage: read_bench [--mib 1024] [--step 65536] [--depths 1,2,4,8] [--rounds 3] [--parse-mbps 0]\n");
      return 2;
    }
  }
  if (mib == 0 || step == 0) {
    std::fprintf(stderr, "--mib and --step must be positive\n");
    return 2;
  }
  testing::LocalCluster cluster(3);
  if (!cluster.StartAll()) {
    std::fprintf(stderr, "could not start 3 logserviced processes\n");
    return 1;
  }
  client::ClusterConfig cfg = cluster.ClientConfig();
  const std::uint64_t end = mib << 20;
  {
    auto w = client::LogClient::Open(cfg);
    if (!w.ok()) {
      std::fprintf(stderr, "open: %s\n", w.status().ToString().c_str());
      return 1;
    }
    const auto t0 = Clock::now();
    for (std::uint64_t at = 0; at < end; at += 131072) {
      const std::size_t n = std::min<std::uint64_t>(131072, end - at);
      auto s = (*w)->Append(at, testing::RedoBytes(at, n));
      if (!s.ok()) {
        std::fprintf(stderr, "append at %llu: %s\n", static_cast<unsigned long long>(at), s.ToString().c_str());
        return 1;
      }
    }
    auto s = (*w)->WaitDurable(end, std::chrono::minutes(5));
    if (!s.ok()) {
      std::fprintf(stderr, "wait durable: %s\n", s.ToString().c_str());
      return 1;
    }
    std::printf("wrote %llu MiB in %.1f s\n", static_cast<unsigned long long>(mib),
                std::chrono::duration<double>(Clock::now() - t0).count());
  }
  auto r = client::LogClient::Open(cfg);  // a restarted server's writer
  if (!r.ok()) {
    std::fprintf(stderr, "reopen: %s\n", r.status().ToString().c_str());
    return 1;
  }
  client::LogClient& c = **r;
  if (c.sealed_end() != end) {
    std::fprintf(stderr, "reopened at %llu, not %llu\n", static_cast<unsigned long long>(c.sealed_end()),
                 static_cast<unsigned long long>(end));
    return 1;
  }
  struct Method {
    std::string name;
    std::function<double()> run;
  };
  std::vector<Method> methods;
  const auto plain = [&c](client::Lsn at, std::size_t n) { return c.Read(at, n); };
  methods.push_back({"read/" + std::to_string(step), [&] { return Measure(plain, end, step, parse_mbps); }});
  methods.push_back({"read/1MiB", [&] { return Measure(plain, end, 1u << 20, parse_mbps); }});
  for (int d : depths) {
    methods.push_back({"ahead/d" + std::to_string(d), [&c, d, end, step, parse_mbps] {
                         client::LogReadAhead ra(c, client::ReadAheadOptions{static_cast<std::size_t>(d), 1u << 20});
                         return Measure([&ra](client::Lsn at, std::size_t n) { return ra.Read(at, n); }, end, step,
                                        parse_mbps);
                       }});
  }
  std::vector<std::vector<double>> mbs(methods.size());
  for (int round = 0; round < rounds; ++round) {
    for (std::size_t m = 0; m < methods.size(); ++m) {
      const double v = methods[m].run();
      if (v < 0) return 1;
      mbs[m].push_back(v);
      std::printf("round %d %-12s %8.1f MB/s\n", round + 1, methods[m].name.c_str(), v);
      std::fflush(stdout);
    }
  }
  std::printf("\n%llu MiB, calls of %zu bytes, %d rounds, parsing at %g MB/s (0: none) "
              "(3 logserviced, W = 2, TCP loopback)\n\n",
              static_cast<unsigned long long>(mib), step, rounds, parse_mbps);
  std::printf("| method | MB/s mean | min | max |\n|---|---|---|---|\n");
  for (std::size_t m = 0; m < methods.size(); ++m) {
    double sum = 0;
    for (double v : mbs[m]) sum += v;
    std::printf("| %s | %.1f | %.1f | %.1f |\n", methods[m].name.c_str(), sum / mbs[m].size(),
                *std::min_element(mbs[m].begin(), mbs[m].end()), *std::max_element(mbs[m].begin(), mbs[m].end()));
  }
  return 0;
}
