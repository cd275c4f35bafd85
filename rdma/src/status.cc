// Status code names and the errno mapping.
#include "strata/rdma/status.h"

#include <cstring>

namespace strata::rdma {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kTimeout: return "Timeout";
    case StatusCode::kBusy: return "Busy";
    case StatusCode::kClosed: return "Closed";
    case StatusCode::kProtocolError: return "ProtocolError";
    case StatusCode::kAuthFailed: return "AuthFailed";
    case StatusCode::kIoError: return "IoError";
    case StatusCode::kAborted: return "Aborted";
  }
  return "Unknown";
}

Status ErrnoStatus(std::string_view call, int err) {
  char buf[128];
  // GNU strerror_r returns the message pointer (may not use buf).
  const char* text = strerror_r(err, buf, sizeof buf);
  std::string m(call);
  m += " failed: ";
  m += text;
  StatusCode code = StatusCode::kIoError;
  if (err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH) code = StatusCode::kUnavailable;
  if (err == ETIMEDOUT) code = StatusCode::kTimeout;
  return Status(code, std::move(m));
}

}  // namespace strata::rdma
