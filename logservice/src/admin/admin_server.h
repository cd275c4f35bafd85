// AdminServer: logserviced's gRPC admin endpoint (proto/admin.proto).
//
// Threads: gRPC's own. GetStatus reads NodeHost::State(); DropVolume and
// CreateVolume run NodeHost's actions, which stop and restart the node
// under the host's exclusive lock (node_host.h), so RPCs need no lock here.
//
// Security: every RPC is authorized first (admin_credentials.h): the
// read-only token may read, only the admin token may act; a refusal is
// logged (event=admin_refused, never the token) and answered with
// UNAUTHENTICATED or PERMISSION_DENIED. TLS when a certificate and key are
// given; otherwise the endpoint is plaintext, which the daemon logs at start
// (a warning unless it listens on loopback), since the token then crosses
// the network in clear.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "admin_credentials.h"
#include "node_host.h"
#include "strata/logservice/status.h"

namespace strata::logservice::admin {

struct AdminServerOptions {
  std::string address;  // "host:port" (port 0: pick one)
  std::string node_id;  // for the log lines
  std::string readonly_token;
  std::string admin_token;
  std::string tls_cert_file;  // PEM; both empty: plaintext
  std::string tls_key_file;
  std::function<void(std::string_view level, std::string_view line)> log;  // thread-safe
};

class AdminServer {
 public:
  // Stops in the destructor.
  static Result<std::unique_ptr<AdminServer>> Start(server::NodeHost& host, AdminServerOptions options);
  virtual ~AdminServer() = default;
  virtual int port() const = 0;
  virtual bool tls() const = 0;
};

// Counter names in wire::NodeCounter order (shared with logservicectl).
const char* CounterName(std::size_t i);

}  // namespace strata::logservice::admin
