// SegmentJournal: an append-only sequence of checksummed records spread over
// numbered segment files, with group commit and crash recovery. LogStore and
// PageStore are thin indexes on top of one journal each.
//
// Threads and ordering:
//   - Append() is serialized by mu_ and only writes to the page cache. Each
//     call gets the next append sequence number; file order == sequence order.
//   - SyncUpTo(n) is group commit (leader/follower). If no fdatasync is in
//     flight, the caller becomes the leader: it snapshots the highest
//     sequence appended so far (under mu_), fdatasyncs the active segment
//     without holding mu_ (and fsyncs the directory if a segment was
//     created), then publishes synced_sequence and wakes all waiters.
//     Callers arriving during an fdatasync wait on a condition variable; on
//     wake-up those covered return without I/O and one of the others leads
//     the next fdatasync. Appends continue during the fdatasync.
//   - Rollover happens inside Append: the full segment is fdatasync'ed
//     (sealed) before the next one is created, so every segment except the
//     newest is complete on disk: any bad record in an older segment is
//     corruption. In the newest segment only a torn tail (the incompletely
//     written end) may be cut; the rule that tells it from corruption is in
//     segment_journal.cc.
//
// Durability frontier: synced_sequence() never passes a record that has not
// been fdatasync'ed in a file whose directory entry was fsync'ed. It lives
// in memory only: no file records how far a segment was synced, which is why
// recovery must judge a damaged tail from the bytes alone.
//
// Failure handling: ENOSPC on a record write is undone with ftruncate and
// returned as kNoSpace (retryable; the next append reuses the same offset).
// Any other write error, any fdatasync error, or a failed undo makes the
// journal "failed": every later Append/Sync returns kNeedsRecovery. After a
// failed fdatasync the kernel may have dropped the dirty pages and a retried
// fdatasync could succeed without writing them, so only a reopen (which
// re-reads the disk and trusts nothing but CRCs) is safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "disk_format.h"
#include "storage/file_system.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice::storage {

struct RecordLocation {
  std::uint64_t segment = 0;  // segment sequence number
  std::uint64_t offset = 0;   // of the record header in the segment file
  std::uint32_t payload_len = 0;
};

// Receives the journal's history during Open(), in file order.
class ReplayHandler {
 public:
  virtual ~ReplayHandler() = default;
  // Once per segment, before its records (also for a segment Open creates).
  virtual Status OnSegment(const SegmentHeader& header) = 0;
  // Once per valid record. An error aborts Open() as kCorruption.
  virtual Status OnRecord(const RecordHeader& header, std::string_view payload, const RecordLocation& where) = 0;
};

struct JournalOptions {
  SegmentKind kind = SegmentKind::kRedo;
  std::uint64_t segment_bytes = 64ull << 20;
  Lsn initial_base_lsn = 0;  // header base of the first segment of a new journal
  LogSink log;
  // The node's permission to cut the newest segment at a damaged record an
  // earlier Open refused (matched by file and offset; see LogStoreOptions).
  std::optional<DamagedRecord> cut_damaged_tail;
  // A header-only record its owner can vouch for from state kept elsewhere
  // (the page store: the seal's truncation, which the node keeps in
  // node_meta). If the newest segment ends in exactly one record's worth of
  // bytes that fail their checks but whose header, read without the CRC,
  // names this record's type and LSNs, Open writes this record in their
  // place (logged, counted in RecoveryReport::damaged_records_rewritten).
  // Torn by a crash or rotted after it was synced, the history is then the
  // one that record wrote, so the journal need not tell which it was.
  std::optional<RecordHeader> rewrite_damaged_tail;
  // The newest segment is filled this far ahead of its end with its
  // FillPattern (in steps of this size, once less than a quarter is left;
  // never past segment_bytes), so that an append's fdatasync commits data
  // only (WritableFile::Preallocate). A sealed segment is cut back to its
  // records; Open cuts the fill quietly and judges a write torn inside it as
  // it judges one torn at the end of the file. 0: off.
  std::uint64_t preallocate_bytes = 0;
};

// The bytes Preallocate fills a segment's unwritten space with: 4 KiB
// repeated, derived from the header, so Open knows them from the file alone
// and a record's bytes match them only by chance.
std::string FillPattern(const SegmentHeader& header);

class SegmentJournal {
 public:
  // Recovers `dir` (see the design comment of segment_journal.cc), feeding
  // every surviving record to `replay`. When it returns OK everything
  // replayed is durable. A damaged record is kCorruption with
  // report->damage set, and nothing on disk is changed.
  static Result<std::unique_ptr<SegmentJournal>> Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                      JournalOptions options, ReplayHandler* replay,
                                                      RecoveryReport* report);

  struct PendingRecord {
    RecordHeader header;
    std::string_view payload;
  };
  struct Appended {
    std::vector<RecordLocation> where;  // one per record
    std::uint64_t sequence = 0;         // shared by the whole batch
  };
  // Writes the records with one write call; all or none become part of the
  // journal. Durable once SyncUpTo(sequence) returns OK.
  Result<Appended> Append(const std::vector<PendingRecord>& records);

  Status SyncUpTo(std::uint64_t sequence);
  Status SyncAll();

  // Reads the record at `where` and checks it (CRC, shape, length). kNotFound
  // if its segment was deleted. If `damage` is given, it gets the record's
  // file, offset and sealed flag, and on kCorruption the reason; the LSNs
  // are the caller's to fill.
  Status Read(const RecordLocation& where, RecordHeader* header, std::string* payload,
              DamagedRecord* damage = nullptr) const;

  // Base LSN written into the headers of segments created from now on.
  void set_base_lsn(Lsn base);
  // Deletes segments from the oldest on, while `deletable(sequence)` holds;
  // never the active (newest) one. Returns how many were deleted.
  Result<std::uint64_t> DeleteOldest(const std::function<bool(std::uint64_t)>& deletable);

  std::uint64_t synced_sequence() const { return synced_sequence_.load(std::memory_order_acquire); }
  std::uint64_t fdatasync_count() const { return fdatasyncs_.load(std::memory_order_relaxed); }
  std::uint64_t segment_count() const;
  // Sequence of the segment appends go to now.
  std::uint64_t active_sequence() const;

  ~SegmentJournal();

 private:
  struct Segment {
    std::string path;
    std::shared_ptr<ReadableFile> reader;
  };
  SegmentJournal(std::shared_ptr<FileSystem> fs, std::string dir, JournalOptions options);

  Status CreateSegment(std::uint64_t sequence, Lsn base);  // mu_ held
  Status RolloverLocked();                                 // mu_ held
  void PreallocateLocked();                                // mu_ held
  Status FailLocked(const Status& cause);                  // mu_ held; returns kNeedsRecovery
  Status RecoverSegment(std::uint64_t sequence, bool newest, ReplayHandler* replay, RecoveryReport* report,
                        std::uint64_t* valid_end, bool* removed);
  // Logs and returns the refusal to open because of damaged bytes.
  Status RefuseDamaged(std::string message, std::optional<DamagedRecord> damage, RecoveryReport* report) const;

  const std::shared_ptr<FileSystem> fs_;
  const std::string dir_;
  const JournalOptions options_;
  std::string rewrite_at_open_;  // Open appends it at the cut (rewrite_damaged_tail)

  mutable std::mutex mu_;  // everything below except the atomics
  std::map<std::uint64_t, Segment> segments_;
  std::uint64_t active_sequence_ = 0;
  std::shared_ptr<WritableFile> active_;  // shared: a syncer holds it without mu_
  std::uint64_t filled_end_ = 0;           // active_ holds its fill pattern from its Size() up to here
  std::string fill_pattern_;               // FillPattern of the active segment's header
  bool dir_dirty_ = false;                // a created segment's entry is not yet fsync'ed
  Lsn base_lsn_ = 0;
  std::uint64_t appended_sequence_ = 0;
  bool failed_ = false;
  std::string scratch_;  // encode buffer, reused

  std::mutex sync_mu_;  // guards sync_in_progress_: one fdatasync at a time
  std::condition_variable sync_done_;
  bool sync_in_progress_ = false;
  std::atomic<std::uint64_t> synced_sequence_{0};
  std::atomic<std::uint64_t> fdatasyncs_{0};
  std::atomic<bool> failed_flag_{false};  // mirror of failed_ for lock-free checks
};

}  // namespace strata::logservice::storage
