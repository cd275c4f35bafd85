// Status and Result: errors as values at the rdma/ module boundary.
//
// No exception crosses this API. Every fallible call returns a Status (or a
// Result<T> carrying either a value or a Status) marked [[nodiscard]], so a
// caller cannot silently drop an error. The message says what failed and,
// for system calls and verbs, names the failing call. The type itself is
// BasicStatus (basic_status.h, shared with logservice/); this header holds
// the transport's codes and what a caller may do with them.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "strata/rdma/basic_status.h"

namespace strata::rdma {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // caller error: bad address, oversize payload, bad option
  kUnavailable,      // backend or peer not reachable (no RDMA device, ECONNREFUSED)
  kTimeout,          // a deadline passed (connect, handshake, keepalive)
  kBusy,             // backpressure: no credit / queue full; retry later
  kClosed,           // the connection is closed (locally or by the peer)
  kProtocolError,    // the peer sent a malformed or out-of-order frame
  kAuthFailed,       // handshake refused (cluster id, secret, proof)
  kIoError,          // a system call or verb failed (named in the message)
  kAborted,          // shut down locally before the operation could finish
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status : public BasicStatus<StatusCode> {
 public:
  using BasicStatus::BasicStatus;
  static Status Ok() { return Status(); }

  // Retrying the same call later may succeed (backpressure, transient timeouts).
  bool retryable() const { return code() == StatusCode::kBusy || code() == StatusCode::kTimeout; }
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status Timeout(std::string m) { return {StatusCode::kTimeout, std::move(m)}; }
inline Status Busy(std::string m) { return {StatusCode::kBusy, std::move(m)}; }
inline Status Closed(std::string m) { return {StatusCode::kClosed, std::move(m)}; }
inline Status ProtocolError(std::string m) { return {StatusCode::kProtocolError, std::move(m)}; }
inline Status AuthFailed(std::string m) { return {StatusCode::kAuthFailed, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status Aborted(std::string m) { return {StatusCode::kAborted, std::move(m)}; }
// "<call> failed: <strerror(err)>": names the failing system call or verb.
Status ErrnoStatus(std::string_view call, int err);

// Either a value or a non-OK Status.
template <typename T>
using Result = BasicResult<T, Status>;

}  // namespace strata::rdma
