// Names and texts of verbs completion statuses and errno values.
#include "verbs/verbs_status.h"

#include <cstring>

namespace strata::rdma {
namespace {

struct StatusInfo {
  const char* name;
  const char* text;  // as ibv_wc_status_str() (rdma-core libibverbs/enum_strs.c)
};

constexpr StatusInfo kStatuses[] = {
    {"IBV_WC_SUCCESS", "success"},
    {"IBV_WC_LOC_LEN_ERR", "local length error"},
    {"IBV_WC_LOC_QP_OP_ERR", "local QP operation error"},
    {"IBV_WC_LOC_EEC_OP_ERR", "local EE context operation error"},
    {"IBV_WC_LOC_PROT_ERR", "local protection error"},
    {"IBV_WC_WR_FLUSH_ERR", "Work Request Flushed Error"},
    {"IBV_WC_MW_BIND_ERR", "memory management operation error"},
    {"IBV_WC_BAD_RESP_ERR", "bad response error"},
    {"IBV_WC_LOC_ACCESS_ERR", "local access error"},
    {"IBV_WC_REM_INV_REQ_ERR", "remote invalid request error"},
    {"IBV_WC_REM_ACCESS_ERR", "remote access error"},
    {"IBV_WC_REM_OP_ERR", "remote operation error"},
    {"IBV_WC_RETRY_EXC_ERR", "transport retry counter exceeded"},
    {"IBV_WC_RNR_RETRY_EXC_ERR", "RNR retry counter exceeded"},
    {"IBV_WC_LOC_RDD_VIOL_ERR", "local RDD violation error"},
    {"IBV_WC_REM_INV_RD_REQ_ERR", "remote invalid RD request"},
    {"IBV_WC_REM_ABORT_ERR", "aborted error"},
    {"IBV_WC_INV_EECN_ERR", "invalid EE context number"},
    {"IBV_WC_INV_EEC_STATE_ERR", "invalid EE context state"},
    {"IBV_WC_FATAL_ERR", "fatal error"},
    {"IBV_WC_RESP_TIMEOUT_ERR", "response timeout error"},
    {"IBV_WC_GENERAL_ERR", "general error"},
};

}  // namespace

std::string WcStatusName(WcStatus status) {
  const auto i = static_cast<size_t>(status);
  if (i < std::size(kStatuses)) return kStatuses[i].name;
  return "IBV_WC_STATUS_" + std::to_string(i);
}

std::string_view WcStatusText(WcStatus status) {
  const auto i = static_cast<size_t>(status);
  if (i < std::size(kStatuses)) return kStatuses[i].text;
  return "unknown";
}

Status VerbError(std::string_view verb, int err) {
  const char* name = ::strerrorname_np(err);
  char buf[128];
  const char* text = ::strerror_r(err, buf, sizeof buf);  // GNU: may not use buf
  std::string m(verb);
  m += " failed: ";
  m += name != nullptr ? name : ("errno " + std::to_string(err));
  m += " (";
  m += text;
  m += ")";
  return IoError(std::move(m));
}

}  // namespace strata::rdma
