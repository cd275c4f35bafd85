// Default log sink and level names.
#include "strata/rdma/log.h"

#include <cstdio>
#include <string>

namespace strata::rdma {

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug: return "DEBUG";
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARN";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

LogSink StderrLogSink() {
  return [](LogLevel level, std::string_view line) {
    if (level < LogLevel::kWarning) return;
    // One fprintf per line keeps concurrent lines from interleaving.
    std::fprintf(stderr, "[rdma %.*s] %.*s\n", static_cast<int>(LogLevelName(level).size()),
                 LogLevelName(level).data(), static_cast<int>(line.size()), line.data());
  };
}

}  // namespace strata::rdma
