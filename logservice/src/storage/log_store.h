// LogStore: the durable redo store of one log service node.
//
// What it stores: redo byte ranges [start_lsn, start_lsn + size) tagged with
// the epoch of the writer that produced them, in append-only segment files
// (format: src/storage/disk_format.h, docs/logservice-storage.md). Ranges may
// arrive out of order, with gaps, or twice; the store keeps a set of
// non-overlapping extents and three frontiers:
//
//   released_lsn <= durable_lsn <= complete_lsn <= highest_lsn
//
//   released_lsn  everything below was released (ReleaseBelow) and may be gone;
//   complete_lsn  end of the gap-free prefix starting at released_lsn that has
//                 been written (maybe not yet synced);
//   durable_lsn   end of the gap-free prefix whose every byte has been
//                 fdatasync'ed: what this node may acknowledge, and the limit
//                 of Read(). It never moves past data that is not on disk;
//   highest_lsn   end of the highest range received (beyond gaps).
//
// Epoch rules (enforced on Append, so a stale writer cannot damage the log):
// epochs never decrease with LSN; a range may duplicate stored bytes only with
// the same epoch (duplicates are skipped, not rewritten); TruncateAfter(L, e)
// fences LSNs >= L to epochs >= e, durably.
//
// Threads: every method is thread-safe. The intended daemon shape is one or a
// few threads calling Append (the network thread), one group-commit thread
// calling Sync() in a loop (or appenders calling SyncUpTo(ticket): callers that
// arrive while an fdatasync is running share the next one), and any number of
// threads calling Read() and frontier(). Append holds the store mutex while it
// writes to the page cache; Sync() holds no store lock during fdatasync; Read()
// copies extent locations under the lock and reads files without it.
//
// Failure: an Append that hits ENOSPC returns kNoSpace (retryable) and leaves
// nothing visible; any other write or sync failure makes the instance sticky
// failed (kNeedsRecovery for every later mutation) because after a failed
// fdatasync the page cache can no longer be trusted; reopen to recover.
// Damaged data (a record failing its CRC) is kCorruption with the file,
// offset and LSNs, from Open and from Read alike; the store never cuts or
// skips it on its own (docs/logservice-storage.md, "Healing").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/file_system.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice {

namespace storage { class SegmentJournal; class LogIndex; }

struct LogStoreOptions {
  // A segment is sealed (fdatasync'ed) and a new one started once it would
  // grow past this size. Whole segments are the unit of deletion.
  std::uint64_t segment_bytes = 64ull << 20;
  // Zeros kept this far ahead of the newest segment's end, so an append's
  // fdatasync commits data only, no size change (JournalOptions::
  // preallocate_bytes). 0: off.
  std::uint64_t preallocate_bytes = 1ull << 20;
  // released_lsn of a brand-new (empty directory) store. Ignored on reopen.
  Lsn initial_lsn = 0;
  LogSink log = StderrLogSink();
  // Healing: Open refuses a damaged record (kCorruption, report->damage)
  // and changes nothing. Once the node has the LSNs damage.start_lsn ..
  // damage.end_lsn from its peers (or has learned from all of them that those
  // LSNs were never committed), it reopens with the reported damage here:
  // if it is in the newest segment, recovery cuts that segment at the damaged
  // record (logged), and the node appends what it fetched. Only that exact
  // file and offset is cut; damage anywhere else, or in a sealed segment,
  // still refuses (a sealed segment cannot be cut: rebuild the node).
  std::optional<DamagedRecord> cut_damaged_tail;
};

struct LogFrontier {
  Lsn released_lsn = 0;
  Lsn durable_lsn = 0;
  Lsn complete_lsn = 0;
  Lsn highest_lsn = 0;
  Epoch max_epoch = 0;  // highest epoch of any stored range or fence
};

// The tail register as the log stores it: the writer's partial last block
// (docs/design/logservice-tail-in-journal.md). Which one counts is the
// node's rule (the seal epoch's); the store keeps the last one written.
struct StoredTail {
  Epoch epoch = 0;
  Lsn block_lsn = 0;
  Lsn data_end = 0;  // block_lsn < data_end <= block_lsn + image.size()
  std::string image;
  bool operator==(const StoredTail&) const = default;
};

// A run of redo bytes written under one epoch.
struct RedoRange {
  Lsn start_lsn = 0;
  Epoch epoch = 0;
  std::string bytes;
  Lsn end_lsn() const { return start_lsn + bytes.size(); }
};

struct LogStoreStats {
  std::uint64_t appends = 0;       // Append calls that wrote something
  std::uint64_t records_written = 0;
  std::uint64_t bytes_written = 0;  // payload bytes
  std::uint64_t fdatasyncs = 0;     // group commits + segment seals
  std::uint64_t tail_writes = 0;    // PutTail calls since Open
  std::uint64_t segments = 0;       // live segment files
};

class LogStore {
 public:
  // Opens (or creates) the store in `dir`, recovering what is on disk: scans
  // every segment, cuts a torn tail (the incompletely written end, never
  // damage; rule in segment_journal.cc) off the newest one (logged),
  // replays appends, truncations and releases, deletes segments a crash left
  // behind below released_lsn, and fdatasyncs what it kept, so that after
  // Open everything recovered is durable (durable_lsn == complete_lsn).
  // kCorruption if any segment holds a damaged record: acknowledged data may
  // be lost, nothing is cut or changed, report->damage names the file,
  // offset and LSNs (unset for a damaged segment header or a missing
  // segment). Heal from peers (options.cut_damaged_tail) or rebuild the node.
  static Result<std::unique_ptr<LogStore>> Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                LogStoreOptions options, RecoveryReport* report = nullptr);
  ~LogStore();
  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // Stores redo [start_lsn, start_lsn + redo.size()) written under `epoch`.
  // Written to the page cache, not yet durable: wait with SyncUpTo(ticket).
  // Bytes below released_lsn and bytes already stored with the same epoch are
  // skipped (the ticket then covers only what was new; sequence 0 if nothing).
  // Errors: kInvalidArgument (empty, larger than kMaxRecordPayload, LSN
  // overflow), kStaleEpoch (epoch below an adjacent/overlapping range or a
  // fence: drop the message), kConflict (stored data at or after this range
  // has an older epoch: quorum recovery must TruncateAfter first), kNoSpace
  // (retryable, nothing stored), kNeedsRecovery.
  Result<AppendTicket> Append(Lsn start_lsn, Epoch epoch, std::string_view redo);

  // Writes the tail register as the journal's next record, after every
  // append issued before it (a crash keeps a prefix of the journal, so a
  // surviving register comes with the blocks written before it). Durable
  // with the next Sync / SyncUpTo(ticket), in the same fdatasync as the
  // appends around it. No epoch rules: the caller's. kInvalidArgument for a
  // malformed register, kNoSpace, kNeedsRecovery as Append.
  Result<AppendTicket> PutTail(const StoredTail& tail);
  // The last register PutTail wrote or replay found, whatever its epoch;
  // nullopt if none ever was. Releasing the log keeps it (its record is
  // written again before the segment holding it is deleted).
  std::optional<StoredTail> last_tail() const;

  // Group commit: makes every append issued before the call durable and
  // advances durable_lsn. Does no fdatasync if nothing is pending.
  Status Sync();
  // Returns once the append with this ticket is durable; one fdatasync
  // serves all callers waiting at that moment.
  Status SyncUpTo(AppendTicket ticket);

  // Durable redo from `from` on, at most max_bytes, as epoch-homogeneous
  // contiguous ranges (ranges[0].start_lsn == from). Empty if from >=
  // durable_lsn. kNotFound if from < released_lsn. Every byte returned was
  // checked against its record's CRC32C. A record that fails is kCorruption
  // ("LSNs [a, b) on this node are corrupt: <file> offset <n>: <reason>"),
  // never skipped and never served, and is added to damaged(). Reading the
  // whole range [released_lsn, durable_lsn) is a scrub.
  Result<std::vector<RedoRange>> Read(Lsn from, std::size_t max_bytes) const;

  // Records found damaged by Read since Open, each once, oldest first.
  // The store keeps serving everything else; these LSNs must be healed from
  // peers (the file is left as it is: Open will refuse it next time).
  std::vector<DamagedRecord> damaged() const;

  // Quorum recovery: forget every byte at LSN >= lsn and fence LSNs >= lsn
  // to epochs >= new_epoch. Durable and crash-safe when it returns OK (it
  // appends a truncation record and fdatasyncs; recovery replays it); after a
  // crash before OK, either the old or the new state is recovered.
  // kInvalidArgument if lsn < released_lsn or new_epoch is below the epoch of
  // data kept below lsn; kStaleEpoch if new_epoch is below an earlier fence.
  Status TruncateAfter(Lsn lsn, Epoch new_epoch);

  // Bytes below `lsn` are no longer needed (checkpointed and replicated).
  // Durably records the new released_lsn, then deletes the oldest segments
  // that hold nothing at or above it. lsn <= released_lsn is a no-op;
  // kInvalidArgument if lsn > complete_lsn.
  Status ReleaseBelow(Lsn lsn);

  // Rebuilding from a peer (docs/design/logservice-node-rebuild.md): the
  // log now starts at `lsn`, even beyond complete_lsn. Bytes below it that
  // this store never had are declared not needed, as ReleaseBelow does for
  // bytes it has: the peer released them, so the cluster's checkpoint is at
  // or above `lsn`, and the caller stores that checkpoint first. Same record
  // and crash behaviour as ReleaseBelow; no-op if lsn <= released_lsn.
  Status StartAt(Lsn lsn);

  LogFrontier frontier() const;
  LogStoreStats stats() const;

 private:
  struct State;
  explicit LogStore(std::unique_ptr<State> state);
  Status Release(Lsn lsn, bool beyond_complete);
  std::unique_ptr<State> s_;
};

}  // namespace strata::logservice
