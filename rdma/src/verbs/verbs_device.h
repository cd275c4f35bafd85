// RDMA device discovery (what Scheme::kAuto consults).
#pragma once

namespace strata::rdma {

// Number of devices ibv_get_device_list reports; 0 without verbs support.
int RdmaDeviceCount();

}  // namespace strata::rdma
