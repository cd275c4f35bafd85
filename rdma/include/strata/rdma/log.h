// Logging: an injectable sink so that tests can assert on logged reasons and
// an embedding process (mysqld, the log daemon) can route lines to its own log.
//
// The library logs an error once, where it is handled (e.g. the connection
// that closes because of a bad frame logs the reason once, at kWarning).
#pragma once

#include <functional>
#include <string_view>

namespace strata::rdma {

enum class LogLevel { kDebug, kInfo, kWarning, kError };

std::string_view LogLevelName(LogLevel level);

// Called from any library thread, possibly concurrently: must be thread-safe
// and must not call back into the transport.
using LogSink = std::function<void(LogLevel level, std::string_view line)>;

// Writes kWarning and above to stderr. Used when TransportOptions::log is empty.
LogSink StderrLogSink();

}  // namespace strata::rdma
