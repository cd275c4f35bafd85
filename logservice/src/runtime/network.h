// Network: how a log service process (a node, a client) listens and
// connects. Production wraps an rdma::Transport (TransportNetwork); the
// deterministic simulator (logservice/tests/sim/) supplies an in-memory one.
// Connections and listeners are the rdma interfaces (rdma/include/strata/rdma/
// connection.h, transport.h) with their contracts: reliable and ordered per
// direction, handlers on an I/O context that must not block, on_close once.
//
// Destroying a Network closes every listener and connection made through it
// (on_close gets kAborted) before it returns, as destroying an
// rdma::Transport does: no handler runs after that. Listen and Connect are
// thread-safe; Connect blocks until connected or failed. A Network runs on
// one Runtime (its blocking and its timers are that runtime's).
#pragma once

#include <memory>
#include <string_view>

#include "strata/rdma/options.h"
#include "strata/rdma/transport.h"

namespace strata::logservice {

class Runtime;

class Network {
 public:
  virtual ~Network() = default;
  virtual Runtime& runtime() = 0;
  virtual rdma::Result<std::unique_ptr<rdma::Listener>> Listen(std::string_view address,
                                                               rdma::AcceptHandler on_accept) = 0;
  virtual rdma::Result<std::shared_ptr<rdma::Connection>> Connect(std::string_view address,
                                                                  rdma::ConnectionHandlers handlers) = 0;
};

// An rdma::Transport created with `options`, on SystemRuntime().
rdma::Result<std::unique_ptr<Network>> TransportNetwork(rdma::TransportOptions options);
// A Network over a Transport the caller owns (and keeps alive longer).
std::unique_ptr<Network> BorrowedTransportNetwork(rdma::Transport& transport);

}  // namespace strata::logservice
