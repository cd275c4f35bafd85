// Backend: what Transport asks of TCP and verbs alike. Internal.
#pragma once

#include <memory>

#include "strata/rdma/transport.h"

namespace strata::rdma::detail {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Result<std::unique_ptr<Listener>> Listen(const Endpoint& ep, AcceptHandler on_accept) = 0;
  virtual Result<std::shared_ptr<Connection>> Connect(const Endpoint& ep, ConnectionHandlers handlers) = 0;
};

}  // namespace strata::rdma::detail
