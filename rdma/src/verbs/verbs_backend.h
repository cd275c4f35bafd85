// The verbs backend factory (librdmacm + libibverbs). Fails with
// kUnavailable when built without the dev files or without a device.
#pragma once

#include <memory>

#include "backend.h"
#include "transport_context.h"

namespace strata::rdma {

Result<std::unique_ptr<detail::Backend>> CreateVerbsBackend(std::shared_ptr<TransportContext> ctx);

}  // namespace strata::rdma
