// Vocabulary shared by the logservice storage classes.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

namespace strata::logservice {

// InnoDB LSNs address redo bytes: the range [start, end) holds end - start bytes.
using Lsn = std::uint64_t;
// The writer's term. Each stored record carries the epoch it was written under.
using Epoch = std::uint64_t;

// Largest redo range one Append may carry, and largest page image (the
// replication layer chunks bigger writes). Bounds every allocation a reader
// makes from an on-disk length field.
inline constexpr std::size_t kMaxRecordPayload = 4u << 20;
inline constexpr std::size_t kMaxPageImage = 1u << 20;
inline constexpr std::size_t kMaxCheckpointMetadata = 1u << 20;

struct PageId {
  std::uint32_t space_id = 0;
  std::uint32_t page_no = 0;
  auto operator<=>(const PageId&) const = default;
};

// Returned by appends; pass it to SyncUpTo() to wait until that append is durable.
struct AppendTicket {
  std::uint64_t sequence = 0;  // 0 means "nothing to wait for"
};

enum class LogLevel { kInfo, kWarning, kError };
// Where the storage layer reports what it did on its own (recovery truncations,
// deleted segments, sticky failures). Called from the thread doing the work;
// must be thread-safe. Errors returned as Status are not also logged.
using LogSink = std::function<void(LogLevel, std::string_view)>;
LogSink StderrLogSink();
std::string_view LogLevelName(LogLevel level);

// What Open() found and repaired. Every repair is also logged as a WARNING.
struct RecoveryReport {
  std::uint64_t segments_scanned = 0;
  std::uint64_t records_replayed = 0;
  std::uint64_t torn_tail_bytes_truncated = 0;  // cut from the newest segment
  std::uint64_t torn_segments_removed = 0;      // newest segment with a torn header
  std::uint64_t released_segments_deleted = 0;  // left over from a crash during ReleaseBelow
};

}  // namespace strata::logservice
