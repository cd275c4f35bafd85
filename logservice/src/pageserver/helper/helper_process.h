// HelperProcess: one redo-apply helper child and the page server's end of
// its pipes (docs/design/page-server.md, sections 5.1, 5.2 and 5.6).
//
// The child is started with an empty environment, stdin and stdout as the
// request and reply pipes, stderr to a pipe whose lines are logged with the
// child's pid, its own process group, and SIGKILL when the parent dies. One
// request is in flight at a time; Call() owns the whole exchange.
//
// Any failure of the exchange (the child died, a reply later than the
// timeout, a broken frame, a reply to another request) kills the child and
// reports kIoError; the next Call starts a fresh child and runs the on_start
// exchange first (HELLO, the tablespace list), so a restart is invisible to
// the caller except for the failed call, which the caller may retry once. A
// kError reply is the helper refusing a request it understood: kCorruption
// with the helper's words, and the child is kept.
//
// Thread-safety: none; a HelperProcess is used by one thread at a time.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::pageserver::helper {

using logservice::Result;
using logservice::Status;

struct Reply {
  std::uint16_t type = 0;
  std::string payload;
};

class HelperProcess {
 public:
  struct Options {
    std::vector<std::string> argv;  // argv[0] is the program's path
    std::chrono::milliseconds timeout{10000};
    logservice::LogSink log;  // default: stderr
    // Run after every start, before the first request: HELLO and the
    // tablespace list. A failure kills the fresh child.
    std::function<Status(HelperProcess&)> on_start;
  };

  explicit HelperProcess(Options options);
  ~HelperProcess();
  HelperProcess(const HelperProcess&) = delete;
  HelperProcess& operator=(const HelperProcess&) = delete;

  // One request and its reply; `type` + 1 is the expected reply type.
  Result<std::string> Call(std::uint16_t type, std::string_view payload);

  pid_t pid() const { return pid_; }
  std::uint64_t starts() const { return starts_; }
  // Kills the child now (tests; shutdown). The next Call starts another.
  void Kill();

 private:
  Status Start();
  Result<Reply> Exchange(std::uint16_t type, std::string_view payload);
  Status WriteAll(std::string_view bytes, std::chrono::steady_clock::time_point deadline);
  Status ReadAll(char* out, std::size_t n, std::chrono::steady_clock::time_point deadline);
  void Log(logservice::LogLevel level, const std::string& line);

  Options options_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::thread stderr_reader_;
  std::uint64_t next_id_ = 1;
  std::uint64_t starts_ = 0;
  bool in_on_start_ = false;
};

}  // namespace strata::pageserver::helper
