// Vocabulary shared by the logservice storage classes.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
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
// must be thread-safe. Errors returned as Status are not also logged, with one
// exception: recovery logs (ERROR) a damaged record it refuses to cut, since
// leaving acknowledged-looking data in place is its own decision.
using LogSink = std::function<void(LogLevel, std::string_view)>;
LogSink StderrLogSink();
std::string_view LogLevelName(LogLevel level);

// A stored record that failed its checks (CRC, shape, length): this node's
// copy of those LSNs is lost, and only peers can supply them again. Returned
// with kCorruption by recovery (RecoveryReport::damage) and by reads
// (LogStore::damaged()); the file is left exactly as it was found.
struct DamagedRecord {
  std::string file;          // segment file path
  std::uint64_t offset = 0;  // of the damaged record's header in that file
  bool sealed = false;       // in a sealed (older) segment; else in the newest one
  // LSNs to heal from peers. From a read: exactly the damaged record's,
  // [start_lsn, end_lsn). From recovery: start_lsn is the lowest LSN the
  // damage can touch (the record's own start if its header is readable, else
  // the segment's base LSN: it may have been a truncation), and end_lsn the
  // highest LSN held by it or by any valid record after it in that file
  // (cutting the file at `offset` drops those too). A node refetches from
  // start_lsn on; start_lsn == end_lsn is possible (a control record).
  Lsn start_lsn = 0;
  Lsn end_lsn = 0;
  std::string reason;  // what failed, e.g. "record CRC mismatch"
};

// What Open() found and repaired. Every repair is also logged as a WARNING.
struct RecoveryReport {
  std::uint64_t segments_scanned = 0;
  std::uint64_t records_replayed = 0;
  std::uint64_t torn_tail_bytes_truncated = 0;  // cut from the newest segment
  std::uint64_t torn_segments_removed = 0;      // newest segment with a torn header
  std::uint64_t released_segments_deleted = 0;  // left over from a crash during ReleaseBelow
  std::uint64_t damaged_tail_bytes_cut = 0;     // cut at the node's request (cut_damaged_tail)
  std::uint64_t damaged_records_rewritten = 0;  // a damaged last record its owner vouched for
  // Set when Open refused (kCorruption) because of a damaged record; nothing
  // was cut. Unset for other refusals (missing segment, damaged sealed header).
  std::optional<DamagedRecord> damage;
};

}  // namespace strata::logservice
