// Configuration of the log-service backend (backend_logservice.cc); no MySQL
// headers. Built only when the fork links the logservice client library.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend.h"

namespace strata::redo {

struct LogServiceConfig {
  std::vector<std::string> nodes;  // host:port
  unsigned transport = 0;          // 0 auto, 1 tcp, 2 rdma
  std::size_t write_quorum = 2;
  std::string volume;
  std::string cluster_id;
  std::string secret;              // never logged
  std::uint64_t max_inflight_bytes = 64ull << 20;
  // The most a rewind after a crash may cut from the stored stream's end:
  // the largest write the log writer can have had in flight, which is its
  // log buffer (innodb_log_buffer_size; InnoDB grows the buffer for a larger
  // mini-transaction, so a server that did must start with it as large).
  // A recovery that ends further back is refused, never cut to.
  std::uint64_t max_rewind_bytes = 16ull << 20;
  std::function<unsigned()> stall_timeout_seconds = [] { return 0u; };  // read live
  std::function<void(std::string_view)> log;  // thread-safe
};

std::unique_ptr<Backend> make_logservice_backend(LogServiceConfig cfg);

}  // namespace strata::redo
