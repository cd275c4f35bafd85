// Backend: what Transport asks of TCP and verbs alike. Internal.
#pragma once

#include <memory>

#include "strata/rdma/transport.h"

namespace strata::rdma::detail {

// What a failed Connect got as far as (Transport's auto:// decides on it).
struct ConnectReport {
  // The backend's link came up (verbs: rdma_connect established; TCP:
  // connected) before the failure: the peer is reachable this way, and a
  // failure after it (handshake, auth, timeout) is not a setup failure.
  bool link_established = false;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Result<std::unique_ptr<Listener>> Listen(const Endpoint& ep, AcceptHandler on_accept) = 0;
  // `report`, when given, is filled in on failure.
  virtual Result<std::shared_ptr<Connection>> Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                                      ConnectReport* report = nullptr) = 0;
};

}  // namespace strata::rdma::detail
