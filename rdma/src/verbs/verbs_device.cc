// RDMA device discovery.
#include "verbs/verbs_device.h"

#ifdef STRATA_RDMA_HAVE_VERBS
#include <infiniband/verbs.h>
#endif

namespace strata::rdma {

int RdmaDeviceCount() {
#ifdef STRATA_RDMA_HAVE_VERBS
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (list == nullptr) return 0;  // no verbs kernel support: same as no device
  ibv_free_device_list(list);
  return count;
#else
  return 0;
#endif
}

}  // namespace strata::rdma
