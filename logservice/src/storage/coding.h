// The on-disk formats' little-endian helpers are rdma's (one for the whole
// project: strata/rdma/little_endian.h). This header only names them in
// logservice::storage for pageserver/format.cc, which takes them from here;
// when that file next changes it can use rdma's names and this header goes.
#pragma once

#include "strata/rdma/little_endian.h"

namespace strata::logservice::storage {

using rdma::GetFixed32;
using rdma::GetFixed64;
using rdma::PutFixed32;
using rdma::PutFixed64;

}  // namespace strata::logservice::storage
