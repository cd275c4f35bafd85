// LogIndex: the in-memory map from LSN to stored redo, and the rules that
// keep it consistent. Pure data structure (no I/O, no locking: LogStore holds
// its mutex around every call), so every rule is unit-tested directly.
//
// Contents: non-overlapping extents [start, end), each pointing at the record
// holding its bytes (an extent may be a trimmed part of a record), plus
// fences from TruncateAfter. Invariants (checked by CheckInvariants in tests):
//   - extents do not overlap and all lie at or above base (released LSN);
//   - epochs never decrease with LSN, and every extent at or above a fence
//     has an epoch >= the fence's;
//   - base <= durable <= complete <= highest; complete is the end of the
//     gap-free run of extents starting at base; durable is the same run cut at
//     the first extent whose record is not yet synced.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "segment_journal.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice::storage {

struct Extent {
  Lsn start = 0;
  Lsn end = 0;
  Epoch epoch = 0;
  RecordLocation where;   // the record holding these bytes
  Lsn record_start = 0;   // LSN of that record's first payload byte
  std::uint64_t sequence = 0;  // journal sequence; durable once synced >= it
};

class LogIndex {
 public:
  LogIndex() = default;

  // Checks an incoming range [start, end) written under `epoch` against the
  // epoch rules. On OK, *missing lists the sub-ranges (in order) not already
  // stored and not below base; bytes already stored with the same epoch are
  // duplicates and skipped.
  Status PlanAppend(Lsn start, Lsn end, Epoch epoch, std::vector<std::pair<Lsn, Lsn>>* missing) const;
  // Adds an extent that PlanAppend returned as missing.
  void Insert(const Extent& extent);

  Status CheckTruncate(Lsn lsn, Epoch epoch) const;
  // Forgets bytes at LSN >= lsn; fences LSN >= lsn to epochs >= epoch. The
  // fence lives in journal segment `segment` (which must then be kept).
  void TruncateAfter(Lsn lsn, Epoch epoch, std::uint64_t segment);

  Status CheckRelease(Lsn lsn) const;
  // Forgets bytes below lsn (no-op if lsn <= base).
  void Release(Lsn lsn);

  // Records that the journal has synced up to `sequence`; advances durable.
  void OnSynced(std::uint64_t sequence);

  // Extents holding [from, ...) without a gap, cut at `limit` and after
  // about max_bytes; the first may start before `from`.
  std::vector<Extent> Covering(Lsn from, Lsn limit, std::size_t max_bytes) const;

  // True while an extent or a fence lives in that journal segment.
  bool SegmentInUse(std::uint64_t segment) const;

  Lsn base() const { return base_; }
  Lsn durable() const { return durable_; }
  Lsn complete() const { return complete_; }
  Lsn highest() const { return highest_; }
  Epoch max_epoch() const { return max_epoch_; }
  std::size_t extent_count() const { return extents_.size(); }

  // For tests: empty string if all invariants hold, else what is wrong.
  std::string CheckInvariants() const;

 private:
  struct Fence {
    Epoch epoch = 0;
    std::uint64_t segment = 0;
  };
  void Advance();
  void AddRef(std::uint64_t segment);
  void DropRef(std::uint64_t segment);

  std::map<Lsn, Extent> extents_;  // by start
  std::map<Lsn, Fence> fences_;    // by fenced LSN
  std::map<std::uint64_t, std::uint64_t> refs_;  // segment -> extents + fences in it
  Lsn base_ = 0;
  Lsn complete_ = 0;
  Lsn durable_ = 0;
  Lsn highest_ = 0;
  Epoch max_epoch_ = 0;
  std::uint64_t synced_ = 0;
};

}  // namespace strata::logservice::storage
