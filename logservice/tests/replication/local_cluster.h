// LocalCluster: N real logserviced processes on loopback, for the
// multi-process tests and the benchmark. Ports are chosen by the kernel on
// first start (listen on port 0, read back through --port_file) and reused
// on restart. Each node logs to <root>/nI.log. Bounded waits everywhere.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "strata/logservice/client.h"

namespace strata::logservice::testing {

class LocalCluster {
 public:
  // Creates a fresh temporary root directory (removed by the destructor).
  explicit LocalCluster(int n, std::string secret = "test-secret", std::string cluster_id = "test-cluster");
  ~LocalCluster();  // SIGKILLs whatever still runs; keeps the dir if STRATA_KEEP_TEST_DIRS is set
  LocalCluster(const LocalCluster&) = delete;
  LocalCluster& operator=(const LocalCluster&) = delete;

  // Extra logserviced flags for node i from its next Start on ("" entries ignored).
  void SetExtraArgs(int i, std::vector<std::string> args) { extra_args_[i] = std::move(args); }
  bool StartAll();
  bool Start(int i);  // (re)start node i; false if it did not come up within 10 s
  void Kill(int i);   // kill -9, reaped
  int Stop(int i);    // SIGTERM; returns the exit status (-1 on timeout)
  bool running(int i) const { return pids_[i] > 0; }
  void Pause(int i);   // SIGSTOP: alive but silent
  void Resume(int i);  // SIGCONT

  std::vector<std::string> addresses() const;  // "tcp://127.0.0.1:port"
  std::string address(int i) const;
  // "127.0.0.1:port" of node i's gRPC admin endpoint ("" if not built with gRPC).
  std::string admin_address(int i) const;
  std::string Log(int i) const;
  // Every level=warn / level=error line of every node's log that contains
  // none of the allowed substrings (each test lists what it provokes, and
  // why), joined by newlines; "" when the logs are clean.
  std::string UnexpectedLogLines(const std::vector<std::string>& allowed) const;
  const std::string& root() const { return root_; }
  const std::string& secret_file() const { return secret_file_; }
  const std::string& secret() const { return secret_; }
  const std::string& cluster_id() const { return cluster_id_; }
  // A client's configuration for these nodes: TCP, write quorum 2.
  client::ClusterConfig ClientConfig(std::uint64_t seed = 1) const;
  // The admin API's tokens (logserviced --admin_token_file /
  // --admin_readonly_token_file), distinct from the cluster secret.
  const std::string& admin_token_file() const { return admin_token_file_; }
  const std::string& readonly_token_file() const { return readonly_token_file_; }

 private:
  int n_;
  std::string secret_, cluster_id_, root_, secret_file_, admin_token_file_, readonly_token_file_;
  std::vector<pid_t> pids_;
  std::vector<int> ports_;
  std::vector<int> admin_ports_;
  std::vector<std::vector<std::string>> extra_args_;
};


// Deterministic redo bytes shared by the replication tests: the byte at LSN x,
// so any range read back can be compared with what was written there.
inline char RedoByteAt(std::uint64_t x) { return static_cast<char>((x * 2654435761u) >> 13); }
inline std::string RedoBytes(std::uint64_t from, std::size_t n) {
  std::string s(n, 0);
  for (std::size_t i = 0; i < n; ++i) s[i] = RedoByteAt(from + i);
  return s;
}

}  // namespace strata::logservice::testing
