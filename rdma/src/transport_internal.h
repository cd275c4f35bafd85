// Transport internals for tests: build a Transport with a replaced device
// probe and verbs backend factory (a machine without an RDMA device can
// then exercise what `auto://` does when a device is present but verbs
// setup fails). Not part of the public API.
#pragma once

#include <functional>
#include <memory>

#include "backend.h"
#include "strata/rdma/transport.h"
#include "transport_context.h"

namespace strata::rdma::detail {

struct TransportHooks {
  // RDMA devices present (default: ibv_get_device_list).
  std::function<int()> device_count;
  // The verbs backend (default: CreateVerbsBackend).
  std::function<Result<std::unique_ptr<Backend>>(std::shared_ptr<TransportContext>)> create_verbs;
};

struct TransportFactory {
  static Result<std::unique_ptr<Transport>> Create(TransportOptions options, TransportHooks hooks);
};

}  // namespace strata::rdma::detail
