// AdminServer: logserviced's gRPC admin endpoint (proto/admin.proto).
// Runs gRPC's own threads; every RPC reads Node::State(), which is
// thread-safe. Read-only and unauthenticated: bind it to loopback (the
// default) or a management network.
#pragma once
#include <memory>
#include <string>

#include "node.h"
#include "strata/logservice/status.h"

namespace strata::logservice::admin {

class AdminServer {
 public:
  // address "host:port" (port 0: pick one). Stops in the destructor.
  static Result<std::unique_ptr<AdminServer>> Start(server::Node& node, const std::string& address);
  virtual ~AdminServer() = default;
  virtual int port() const = 0;
};

// Counter names in wire::NodeCounter order (shared with logservicectl).
const char* CounterName(std::size_t i);

}  // namespace strata::logservice::admin
