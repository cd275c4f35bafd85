// Verbs backend stand-in for builds without libibverbs/librdmacm dev files.
#include "verbs/verbs_backend.h"

namespace strata::rdma {

Result<std::unique_ptr<detail::Backend>> CreateVerbsBackend(std::shared_ptr<TransportContext>) {
  return Unavailable("built without libibverbs/librdmacm; only tcp:// is available");
}

}  // namespace strata::rdma
