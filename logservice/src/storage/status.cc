// Status helpers and the default log sink.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kNoSpace: return "NoSpace";
    case StatusCode::kStaleEpoch: return "StaleEpoch";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kCorruption: return "Corruption";
    case StatusCode::kNeedsRecovery: return "NeedsRecovery";
  }
  return "Unknown";
}

Status Status::FromErrno(std::string_view call, std::string_view path, int err) {
  std::string m = std::string(call) + "(" + std::string(path) + ") failed: " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return NoSpace(std::move(m));
  if (err == ENOENT) return NotFound(std::move(m));
  return IoError(std::move(m));
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

LogSink StderrLogSink() {
  return [](LogLevel level, std::string_view message) {
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "[logstore %s] %.*s\n", std::string(LogLevelName(level)).c_str(),
                 static_cast<int>(message.size()), message.data());
  };
}

}  // namespace strata::logservice
