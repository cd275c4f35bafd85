// Status and Result: errors as values at the logservice storage boundary.
//
// No exception crosses this API. Every fallible call returns a Status (or a
// Result<T>), marked [[nodiscard]]. The code tells the caller what it may do:
//   retryable()       the same call may succeed later and nothing changed
//                     (today only kNoSpace: free space, e.g. ReleaseBelow,
//                     then retry);
//   is_data_loss()    stored data is lost or corrupt (a checksum or format
//                     check failed); the node should be rebuilt from peers;
//   kNeedsRecovery    an earlier fsync/write failed, so the instance can no
//                     longer tell what is on disk; close it and Open() again
//                     (recovery re-reads the disk and trusts only checksums).
// Messages name the failing system call and path. The type itself is
// rdma's BasicStatus (strata/rdma/basic_status.h, the one implementation of
// errors as values); this header holds the storage codes and what a caller
// may do with them.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "strata/rdma/basic_status.h"

namespace strata::logservice {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // caller error (bad range, oversize payload, LSN below release)
  kNotFound,         // no such file, checkpoint, page version, or LSN released
  kNoSpace,          // ENOSPC: nothing was made visible; retry after freeing space
  kStaleEpoch,       // incoming data's epoch is older than stored data or a fence
  kConflict,         // stored data at/after the range has an older epoch: TruncateAfter first
  kIoError,          // a system call failed (named in the message)
  kCorruption,       // on-disk data failed a checksum/format check: data lost
  kNeedsRecovery,    // the instance stopped after a failed write/sync: reopen it
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status : public rdma::BasicStatus<StatusCode> {
 public:
  using BasicStatus::BasicStatus;

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status NoSpace(std::string m) { return {StatusCode::kNoSpace, std::move(m)}; }
  static Status StaleEpoch(std::string m) { return {StatusCode::kStaleEpoch, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
  static Status Corruption(std::string m) { return {StatusCode::kCorruption, std::move(m)}; }
  static Status NeedsRecovery(std::string m) { return {StatusCode::kNeedsRecovery, std::move(m)}; }
  // "<call>(<path>) failed: <strerror>"; ENOSPC and EDQUOT map to kNoSpace,
  // ENOENT to kNotFound, everything else to kIoError.
  static Status FromErrno(std::string_view call, std::string_view path, int err);

  bool retryable() const { return code() == StatusCode::kNoSpace; }
  bool is_data_loss() const { return code() == StatusCode::kCorruption; }
  bool is_not_found() const { return code() == StatusCode::kNotFound; }
};

// Either a value or a non-OK Status.
template <typename T>
using Result = rdma::BasicResult<T, Status>;

}  // namespace strata::logservice

// Return early with the status of `expr` if it is not OK.
#define STRATA_RETURN_IF_ERROR(expr)             \
  do {                                           \
    ::strata::logservice::Status _st = (expr);   \
    if (!_st.ok()) return _st;                   \
  } while (0)
