// logservice_sim: runs seeds of the deterministic log service simulation
// (docs/design/logservice-simulation.md) and stops at the first failure,
// printing the seed, the violated invariant, the last trace records and the
// one command that replays it.
//
//   logservice_sim --seeds N [--start-seed S]    seeds S .. S+N-1 (S = 1)
//   logservice_sim --seed S [--trace]            one seed (replay); STRATA_TEST_SEED=S too
//   logservice_sim --soak-seconds T              from a random start seed until T seconds pass
//   --jobs J                 J processes, seeds split among them
//   --check-determinism K    the first K seeds run twice; their trace hashes must match
//   --unsafe-transport       also drop/duplicate/reorder inside connections
//   --chaos-seconds A:B      virtual duration of the chaos phase (default 3:20)
//   --quiet                  only failures and the summary
//   --keep-going             one line per failing seed, then go on (survey mode)
//   --inject lying-fsync     a broken disk (redo fdatasync persists nothing): the oracle must object
//   --inject follow-unacknowledged  nodes answer followers up to their durable end, ignoring the
//                            writer's acknowledged frontier: the follower check must object
//   --expect-failure         succeed only if some seed fails (with --inject: the checker works)
//   --no-reply-epoch-check   diagnosis: do not check reply headers' epochs (see a stale ack's consequence)
//   --requests-in-flight N   every writer's ClusterConfig::node_requests_in_flight (0: writes are never
//                            held and coalesced); default: drawn per writer, mostly 1
//
// The summary counts the writers' write requests and those that carried
// several writes coalesced (the client's batching); a run of 100 seeds or
// more in which batching was possible but never happened fails: the
// simulation would no longer test that path.
//
// A seed that hangs (no progress for --hang-seconds of real time, 120 by
// default) or crashes the process is reported with its replay command too.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

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

#include "simulation.h"

namespace {

using strata::logservice::sim::RunSeed;
using strata::logservice::sim::SimOptions;
using strata::logservice::sim::SimResult;
using WallClock = std::chrono::steady_clock;

std::atomic<std::uint64_t> g_seed{0};
std::atomic<bool> g_in_seed{false};
char g_replay_prefix[4096];  // "<argv0> <flags> --seed "

void WriteAll(const char* s) {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t k = write(STDOUT_FILENO, s, n);
    if (k <= 0) return;
    s += k;
    n -= static_cast<std::size_t>(k);
  }
}

// Async-signal-safe: formats the seed by hand.
void WriteSeedLine(const char* what) {
  char num[32];
  std::uint64_t v = g_seed.load();
  int i = 31;
  num[i] = '\0';
  do {
    num[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v > 0);
  WriteAll("\nSIMULATION FAILURE seed=");
  WriteAll(num + i);
  WriteAll(": ");
  WriteAll(what);
  WriteAll("\nreplay: ");
  WriteAll(g_replay_prefix);
  WriteAll(num + i);
  WriteAll("\n");
}

void OnFatalSignal(int sig) {
  if (g_in_seed.load()) WriteSeedLine(sig == SIGSEGV ? "the process crashed (SIGSEGV)" : sig == SIGABRT ? "the process aborted (SIGABRT)" : "the process died on a signal");
  signal(sig, SIG_DFL);
  raise(sig);
}

struct Flags {
  std::uint64_t start = 1, count = 100;
  bool start_given = false;
  double soak_seconds = 0;
  int jobs = 1;
  std::uint64_t check_determinism = 0;
  double hang_seconds = 120;
  bool quiet = false;
  bool keep_going = false;
  bool expect_failure = false;
  SimOptions sim;
};

[[noreturn]] void Usage(const char* why) {
  std::fprintf(stderr, "logservice_sim: %s\n", why);
  std::fprintf(stderr,
               "usage: logservice_sim [--seeds N] [--start-seed S] [--seed S] [--soak-seconds T] [--jobs J]\n"
               "                      [--check-determinism K] [--unsafe-transport] [--chaos-seconds A:B] [--trace] [--quiet]\n"
               "                      [--requests-in-flight N]\n");
  std::exit(2);
}

void PrintFailure(std::uint64_t seed, const SimResult& r) {
  std::printf("\nlast trace records of seed %llu:\n", static_cast<unsigned long long>(seed));
  for (const auto& l : r.trace) std::printf("  %s\n", l.c_str());
  std::printf("\nSIMULATION FAILURE seed=%llu: %s\n(%llu steps, %.3f virtual s, trace hash %016llx)\nreplay: %s%llu\n",
              static_cast<unsigned long long>(seed), r.failure.c_str(), static_cast<unsigned long long>(r.steps),
              r.virtual_seconds, static_cast<unsigned long long>(r.trace_hash), g_replay_prefix,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
}

// Runs seeds start, start+stride, ... (count of them, or until `until`).
// Returns 0 if all passed.
int RunSeeds(const Flags& f, std::uint64_t start, std::uint64_t stride, std::uint64_t count,
             WallClock::time_point until, const char* tag) {
  // Watchdog: a seed that makes no progress in real time is reported.
  std::atomic<bool> finished{false};
  std::thread watchdog([&] {
    std::uint64_t seen = ~0ull;
    auto since = WallClock::now();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const std::uint64_t now_seed = g_in_seed.load() ? g_seed.load() : ~0ull;
      if (now_seed != seen) {
        seen = now_seed;
        since = WallClock::now();
      } else if (now_seed != ~0ull &&
                 std::chrono::duration<double>(WallClock::now() - since).count() > f.hang_seconds) {
        WriteSeedLine("hung: no progress in real time (a thread blocked outside the simulated runtime?)");
        _exit(3);
      }
    }
  });
  struct Stop {
    std::atomic<bool>& finished;
    std::thread& t;
    ~Stop() {
      finished = true;
      t.join();
    }
  } stop{finished, watchdog};
  const auto t0 = WallClock::now();
  std::uint64_t done = 0, failed = 0, claims = 0, bytes = 0, crashes = 0, writers = 0;
  std::uint64_t write_posts = 0, coalesced_posts = 0, coalesced_writes = 0;
  double vsec = 0;
  auto last_report = t0;
  for (std::uint64_t k = 0; f.soak_seconds > 0 ? WallClock::now() < until : k < count; ++k) {
    const std::uint64_t seed = start + k * stride;
    SimOptions o = f.sim;
    o.seed = seed;
    g_seed = seed;
    g_in_seed = true;
    SimResult r = RunSeed(o);
    if (r.ok && k < f.check_determinism) {
      SimResult again = RunSeed(o);
      if (!again.ok || again.trace_hash != r.trace_hash || again.steps != r.steps) {
        r.ok = false;
        r.failure = "determinism: the same seed ran twice differently (trace hash " + std::to_string(r.trace_hash) +
                    " vs " + std::to_string(again.trace_hash) + ", steps " + std::to_string(r.steps) + " vs " +
                    std::to_string(again.steps) + (again.ok ? "" : "; second run failed: " + again.failure) + ")";
      }
    }
    g_in_seed = false;
    if (!r.ok && f.expect_failure) {
      std::printf("%sseed %llu failed as expected after %llu passing seed(s): %s\n", tag,
                  static_cast<unsigned long long>(seed), static_cast<unsigned long long>(done), r.failure.c_str());
      return 0;
    }
    if (!r.ok) {
      if (f.keep_going) {  // one line per failing seed; the failed world is leaked
        std::printf("%sFAILED seed=%llu: %s\n", tag, static_cast<unsigned long long>(seed), r.failure.c_str());
        ++failed;
        continue;
      }
      PrintFailure(seed, r);
      return 1;
    }
    ++done;
    claims += r.claims;
    bytes += r.committed_bytes;
    crashes += r.node_crashes;
    writers += r.writers;
    vsec += r.virtual_seconds;
    write_posts += r.write_posts;
    coalesced_posts += r.coalesced_posts;
    coalesced_writes += r.coalesced_writes;
    const auto now = WallClock::now();
    if (!f.quiet && (o.print_trace || count == 1 || now - last_report > std::chrono::seconds(10))) {
      last_report = now;
      std::printf("%sseed %llu ok (%zu writers, %zu node crashes, %llu bytes acknowledged, %.1f virtual s, %llu steps, "
                  "trace hash %016llx); %llu seeds so far\n",
                  tag, static_cast<unsigned long long>(seed), r.writers, r.node_crashes,
                  static_cast<unsigned long long>(r.committed_bytes), r.virtual_seconds,
                  static_cast<unsigned long long>(r.steps), static_cast<unsigned long long>(r.trace_hash),
                  static_cast<unsigned long long>(done));
      std::fflush(stdout);
    }
  }
  const double secs = std::chrono::duration<double>(WallClock::now() - t0).count();
  std::printf("%s%llu seeds passed in %.1f s (%.1f seeds/s): %llu writers, %llu node crashes, %llu acknowledgements "
              "checked, %.1f MB acknowledged, %.0f virtual seconds\n",
              tag, static_cast<unsigned long long>(done), secs, secs > 0 ? done / secs : 0.0,
              static_cast<unsigned long long>(writers), static_cast<unsigned long long>(crashes),
              static_cast<unsigned long long>(claims), bytes / 1e6, vsec);
  std::printf("%swrite requests: %llu, of which %llu carried %llu writes coalesced\n", tag,
              static_cast<unsigned long long>(write_posts), static_cast<unsigned long long>(coalesced_posts),
              static_cast<unsigned long long>(coalesced_writes));
  if (failed) std::printf("%s%llu seeds FAILED\n", tag, static_cast<unsigned long long>(failed));
  if (!f.expect_failure && done >= 100 && f.sim.node_requests_in_flight != 0 && coalesced_posts == 0) {
    std::printf("%sthe batched write path was never exercised (no write request carried two writes)\n", tag);
    return 1;
  }
  if (f.expect_failure) {
    std::printf("%sexpected a failure, but every seed passed\n", tag);
    return 1;
  }
  std::fflush(stdout);
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  std::string replay_flags;
  auto need = [&](int& i) -> const char* {
    if (i + 1 >= argc) Usage((std::string(argv[i]) + " needs a value").c_str());
    return argv[++i];
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seeds") f.count = std::strtoull(need(i), nullptr, 10);
    else if (a == "--start-seed") f.start = std::strtoull(need(i), nullptr, 10), f.start_given = true;
    else if (a == "--seed") f.start = std::strtoull(need(i), nullptr, 10), f.start_given = true, f.count = 1;
    else if (a == "--soak-seconds") f.soak_seconds = std::strtod(need(i), nullptr);
    else if (a == "--jobs") f.jobs = std::max(1, std::atoi(need(i)));
    else if (a == "--check-determinism") f.check_determinism = std::strtoull(need(i), nullptr, 10);
    else if (a == "--hang-seconds") f.hang_seconds = std::strtod(need(i), nullptr);
    else if (a == "--trace") f.sim.print_trace = true;
    else if (a == "--quiet") f.quiet = true;
    else if (a == "--keep-going") f.keep_going = true;
    else if (a == "--expect-failure") f.expect_failure = true;
    else if (a == "--no-reply-epoch-check") f.sim.check_reply_epochs = false, replay_flags += " --no-reply-epoch-check";
    else if (a == "--requests-in-flight") {
      const std::string v = need(i);
      f.sim.node_requests_in_flight = std::atoi(v.c_str());
      replay_flags += " --requests-in-flight " + v;
    }
    else if (a == "--inject") {
      const std::string v = need(i);
      if (v == "lying-fsync") f.sim.lying_fsync = true;
      else if (v == "follow-unacknowledged") f.sim.follow_unacknowledged = true;
      else Usage("--inject knows lying-fsync and follow-unacknowledged");
      replay_flags += " --inject " + v;
    }
    else if (a == "--unsafe-transport") f.sim.unsafe_transport = true, replay_flags += " --unsafe-transport";
    else if (a == "--chaos-seconds") {
      const std::string v = need(i);
      const auto colon = v.find(':');
      if (colon == std::string::npos) Usage("--chaos-seconds takes A:B");
      f.sim.chaos_seconds_min = std::strtod(v.substr(0, colon).c_str(), nullptr);
      f.sim.chaos_seconds_max = std::strtod(v.substr(colon + 1).c_str(), nullptr);
      replay_flags += " --chaos-seconds " + v;
    } else Usage(("unknown flag " + a).c_str());
  }
  if (const char* env = std::getenv("STRATA_TEST_SEED"); env && *env && !f.start_given) {
    f.start = std::strtoull(env, nullptr, 10);
    f.count = 1;
  }
  if (f.soak_seconds > 0 && !f.start_given) {
    f.start = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) % 1000000000000ull;
  }
  std::snprintf(g_replay_prefix, sizeof g_replay_prefix, "%s%s --seed ", argv[0], replay_flags.c_str());
  setvbuf(stdout, nullptr, _IOLBF, 0);
  signal(SIGSEGV, OnFatalSignal);
  signal(SIGABRT, OnFatalSignal);
  signal(SIGBUS, OnFatalSignal);

  const auto until = WallClock::now() + std::chrono::duration_cast<WallClock::duration>(
                                            std::chrono::duration<double>(f.soak_seconds));
  std::printf("logservice_sim: %s from seed %llu%s\n",
              f.soak_seconds > 0 ? ("soak for " + std::to_string(static_cast<long long>(f.soak_seconds)) + " s").c_str()
                                 : (std::to_string(f.count) + " seed(s)").c_str(),
              static_cast<unsigned long long>(f.start), f.jobs > 1 ? (", " + std::to_string(f.jobs) + " jobs").c_str() : "");
  int rc = 0;
  if (f.jobs <= 1) {
    rc = RunSeeds(f, f.start, 1, f.count, until, "");
  } else {
    std::vector<pid_t> kids;
    for (int j = 0; j < f.jobs; ++j) {
      const std::uint64_t share = f.count / f.jobs + (static_cast<std::uint64_t>(j) < f.count % f.jobs ? 1 : 0);
      const pid_t pid = fork();
      if (pid == 0) {
        const std::string tag = "[job " + std::to_string(j + 1) + "] ";
        _exit(RunSeeds(f, f.start + j, f.jobs, share, until, tag.c_str()));
      }
      kids.push_back(pid);
    }
    for (pid_t k : kids) {
      int st = 0;
      waitpid(k, &st, 0);
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) rc = 1;
    }
  }
  return rc;
}
