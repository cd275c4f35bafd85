// Verbs error vocabulary shared by the real queue pair (libibverbs), the
// fake NIC and the connection engine, so every failing verb and every bad
// completion reads the same whichever backend produced it:
//
//   ibv_post_send failed: ENOMEM (Cannot allocate memory)
//   completion error IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded)
//     on wr_id 0x0400000000000012 (RDMA WRITE with immediate, BULK frame 18)
//
// No verbs headers here: WcStatus mirrors enum ibv_wc_status value for
// value (ibv_queue_pair.cc static_asserts that), so the fake NIC builds and
// runs where libibverbs is absent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/rdma/status.h"

namespace strata::rdma {

enum class WcStatus : uint8_t {
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocEecOpErr = 3,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kMwBindErr = 6,
  kBadRespErr = 7,
  kLocAccessErr = 8,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kLocRddViolErr = 14,
  kRemInvRdReqErr = 15,
  kRemAbortErr = 16,
  kInvEecnErr = 17,
  kInvEecStateErr = 18,
  kFatalErr = 19,
  kRespTimeoutErr = 20,
  kGeneralErr = 21,
};

// "IBV_WC_RETRY_EXC_ERR"; "IBV_WC_STATUS_<n>" for values we do not know.
std::string WcStatusName(WcStatus status);
// What ibv_wc_status_str() says, e.g. "transport retry counter exceeded".
std::string_view WcStatusText(WcStatus status);

// "<verb> failed: ENOMEM (Cannot allocate memory)" for a verb that returned
// (or set errno to) `err`. kIoError, as every failing verb on a connection.
Status VerbError(std::string_view verb, int err);

}  // namespace strata::rdma
