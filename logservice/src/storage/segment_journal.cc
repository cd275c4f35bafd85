// SegmentJournal implementation. Threads, ordering and failure handling are
// described in segment_journal.h; this comment covers recovery.
//
// Recovery (Open):
//   1. List "<16 hex>.seg" files; their sequence numbers must be consecutive
//      (segments are deleted oldest first, so a hole means a lost file:
//      kCorruption). An empty directory gets segment 1.
//   2. For each segment, oldest first: check the header (CRC, magic,
//      version, kind, sequence == file name), then parse records until the
//      first one that is incomplete or fails its checks, at offset X. What
//      lies from X to the end of the file is then judged:
//        - older segment: it was sealed (fdatasync'ed) before its successor
//          existed, so anything there is damage to acknowledged data;
//        - newest segment: a torn tail (rule below) is cut off with ftruncate
//          and logged as a WARNING; so is a damaged last record the owner
//          vouches for (JournalOptions::rewrite_damaged_tail), which is
//          then appended again, intact, at the cut and synced with it;
//          anything else is damage.
//      Damage is never cut: Open fails with kCorruption naming the file, the
//      offset and the LSNs (also as RecoveryReport::damage), logs that as an
//      ERROR and leaves every file as it was. Healing is the node's: from its
//      peers, or by rebuilding it. If the newest segment's header itself is
//      bad and no record in the file checks out, the crash hit its creation:
//      the file is deleted. If records do check out, that is damage too.
//   3. fdatasync the newest segment and fsync the directory, so that what was
//      replayed (possibly only in the page cache after a process crash) is
//      durable before anyone acknowledges it.
//
// Torn tail or damage. A crash can only spoil what was appended after the
// last completed fdatasync, and what it keeps of that is a prefix (the
// FileSystem model; ext4 and xfs do the same at block granularity), perhaps
// ending in a torn sector or in blocks that read as zeros. The journal keeps
// no record of how far it had synced, so the bytes must speak for
// themselves. X starts a torn tail only if no record at or after X checks
// out (every byte offset is tried, so a damaged length cannot hide one) and
//   (a) fewer than kRecordHeaderSize bytes remain: no record fits there, so
//       the one at X was never completely written; or
//   (b) every byte from X to the end is zero: allocated blocks the crash kept
//       from being written; or
//   (c) the header at X is readable (reserved bytes zero, valid shape), its
//       payload runs past the end of the file, and it does not check out with
//       its length read as what is actually there (if it did, it would be a
//       complete record whose length field rotted).
// Preallocated space (JournalOptions::preallocate_bytes) is filled with the
// segment's FillPattern, which counts as not written: a file that ends in it
// is judged with the written end (the end of the last byte that differs
// from the pattern) as its end. So it is torn, as in (a) and (c), when
// nothing but the pattern follows X, when a header's first bytes are
// followed by the pattern, or when a readable record's payload stops at
// least kMinUnwrittenRun bytes before its claimed end (8 bytes matching the
// pattern by chance: 1 in 2^64). Zeros would not do: a tail register's image
// ends in zeros, so a rotted one would read as a torn write.
// Everything else is damage:
//   - a valid record follows the bad one: a torn write ends the file;
//   - the bad record is complete (readable header, whole payload present)
//     and fails its CRC, even as the very last record. A crash that tore the
//     last sector of an in-flight write looks exactly like bit rot in a
//     record that was synced and acknowledged; with no synced offset on disk
//     we cannot tell them apart, and "no acknowledged record is deleted"
//     decides: damage. Being wrong costs one node's availability until its
//     peers confirm those LSNs (LogStoreOptions::cut_damaged_tail), where
//     the opposite mistake would silently drop an acknowledged record;
//   - an unreadable header with non-zero bytes after it, a header's worth or
//     more: a header that was written whole and then rotted.
// A damaged last record the owner vouches for is neither: whether it was
// torn or synced and rotted, writing it again restores the history it
// wrote. The cut and the append reach the disk with one fdatasync; a file
// system that persists the cut alone in a crash right there loses the
// record as a torn write would. For the page store's truncation that is
// harmless if it had been torn (the node repeats a seal's cuts while its
// log misses the cut too), not if it had been synced: rot followed by a
// crash inside Open, two faults.
// Limits of the rule: a disk that reorders writes across a power loss (later
// blocks landing, earlier ones not) makes a crash look like damage: the node
// fail-stops, nothing is lost. Damage is taken for a torn tail only when the
// last records read back entirely as zeros (b), or when a rotted length field
// meets a torn write right after it (two faults at once).
#include "segment_journal.h"

#include <algorithm>

namespace strata::logservice::storage {

namespace {

std::string LsnRange(Lsn start, Lsn end) { return "[" + std::to_string(start) + ", " + std::to_string(end) + ")"; }

}  // namespace

// 4 KiB of pseudo-random bytes (splitmix64) from the header's kind,
// sequence and base: Open derives the same pattern from the file itself.
std::string FillPattern(const SegmentHeader& header) {
  std::uint64_t x = (std::uint64_t{static_cast<std::uint8_t>(header.kind)} << 56) ^ (header.sequence * 0x9E3779B97F4A7C15ull) ^
                    header.base_lsn;
  std::string out(4096, '\0');
  for (std::size_t i = 0; i < out.size(); i += 8) {
    x += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = x;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (int b = 0; b < 8; ++b) out[i + b] = static_cast<char>(z >> (8 * b));
  }
  return out;
}

namespace {

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Recovery's verdict on a segment's bytes from the first record that does
// not check out (at `at`) to the end of the file: the rule of the design
// comment.
struct TailVerdict {
  bool torn = false;    // a torn tail: may be cut if the segment is the newest
  bool unwritten = false;  // torn, and nothing was written there: zeros or the fill pattern only
  std::string why;      // what is wrong there, and why it is (not) torn
  Lsn start_lsn = 0;    // LSNs a cut at `at` would drop (see DamagedRecord)
  Lsn end_lsn = 0;
};

// Where the bytes written into a segment end, if it ends in its fill
// pattern (Preallocate): the offset after the last byte, at or after `at`,
// that differs from the pattern there; bytes.size() if the last one does.
std::size_t WrittenEnd(std::string_view bytes, std::size_t at, std::string_view pattern) {
  std::size_t end = bytes.size();
  while (end > at && bytes[end - 1] == pattern[(end - 1) % pattern.size()]) --end;
  return end;
}

// A torn write into filled space stops at least this many bytes before its
// record's end for the tear to be certain: a rotted complete record whose
// last bytes match the pattern by chance (1 in 2^64 here) must not pass.
constexpr std::size_t kMinUnwrittenRun = 8;

TailVerdict JudgeTail(std::string_view bytes, std::size_t at, Lsn segment_base, const std::string& parse_why,
                      std::string_view pattern) {
  TailVerdict v;
  const std::string_view rest = bytes.substr(at);
  RecordHeader claimed;
  const bool readable = PeekRecordHeader(rest, &claimed);
  // An unreadable record may have been a truncation anywhere at or above the
  // LSN released when the segment was created: only that bound is safe.
  v.start_lsn = readable ? claimed.start_lsn : segment_base;
  v.end_lsn = readable ? claimed.end_lsn : segment_base;
  std::uint64_t valid_after = 0;
  for (std::size_t p = FindValidRecord(bytes, at + 1); p != std::string_view::npos;) {
    RecordHeader h;
    std::string_view body;
    std::string why;
    if (ParseRecord(bytes.substr(p), &h, &body, &why) != ParseResult::kOk) {
      p = FindValidRecord(bytes, p + 1);
      continue;
    }
    ++valid_after;
    v.start_lsn = std::min(v.start_lsn, h.start_lsn);
    v.end_lsn = std::max(v.end_lsn, h.end_lsn);
    p += kRecordHeaderSize + body.size();
  }
  const std::string claims = readable ? "its header claims LSNs " + LsnRange(claimed.start_lsn, claimed.end_lsn)
                                      : "its header is unreadable";
  // Filled space (JournalOptions::preallocate_bytes) is what the end of a
  // file is without it: the rules (a) and (c) of the design comment, with
  // the written end in place of the file's end.
  const std::size_t written = WrittenEnd(bytes, at, pattern);
  const std::uint64_t claimed_end = at + kRecordHeaderSize + std::uint64_t{claimed.payload_len};
  if (valid_after > 0) {
    v.why = parse_why + "; " + claims + "; " +
            (valid_after == 1 ? "1 valid record follows" : std::to_string(valid_after) + " valid records follow") +
            " it";
  } else if (written == at) {
    v.torn = v.unwritten = true;
    v.why = "preallocated space to the end of the file";
  } else if (written < bytes.size() && written - at < kRecordHeaderSize && !readable) {
    v.torn = true;
    v.why = parse_why + "; a header's first " + std::to_string(written - at) + " bytes, then preallocated space";
  } else if (written < bytes.size() && readable && written - at >= kRecordHeaderSize &&
             claimed_end >= written + kMinUnwrittenRun) {
    const std::size_t present = written - at - kRecordHeaderSize;
    if (present <= kMaxRecordPayloadOnDisk && ChecksOutWithPayloadLength(rest, static_cast<std::uint32_t>(present))) {
      v.why = "payload length field damaged (" + std::to_string(claimed.payload_len) +
              "): the record is complete and checks out with the " + std::to_string(present) + " bytes written";
    } else {
      v.torn = true;
      v.why = parse_why + "; the write stopped " + std::to_string(claimed_end - written) +
              " bytes before the record's end, preallocated space follows";
    }
  } else if (rest.size() < kRecordHeaderSize) {
    v.torn = true;
    v.why = parse_why;
  } else if (AllZero(rest)) {
    v.torn = v.unwritten = true;
    v.why = "zeros to the end of the file";
  } else if (readable && rest.size() - kRecordHeaderSize < claimed.payload_len) {
    const std::size_t present = rest.size() - kRecordHeaderSize;
    if (present <= kMaxRecordPayloadOnDisk && ChecksOutWithPayloadLength(rest, static_cast<std::uint32_t>(present))) {
      v.why = "payload length field damaged (" + std::to_string(claimed.payload_len) +
              "): the record is complete and checks out with the " + std::to_string(present) + " bytes present";
    } else {
      v.torn = true;
      v.why = parse_why;
    }
  } else if (readable) {
    v.why = parse_why + " in a complete record (" + claims +
            "); no synced offset is recorded, so it may have been acknowledged";
  } else {
    v.why = parse_why + "; " + claims + " and " + std::to_string(rest.size()) +
            " bytes, not all zero, run to the end of the file";
  }
  return v;
}

// True if `rest` (from the first record that does not check out to the end
// of the file) is one header-only record's worth of bytes whose header,
// read without the CRC, names `want`'s type and LSNs: the record the owner
// vouches for. Its other bytes (CRC, epoch) are what a torn last sector or
// rot spoiled; `want` replaces them.
bool IsRecordToRewrite(std::string_view rest, const std::optional<RecordHeader>& want) {
  RecordHeader claimed;
  return want && want->payload_len == 0 && rest.size() == kRecordHeaderSize && PeekRecordHeader(rest, &claimed) &&
         claimed.type == want->type && claimed.payload_len == 0 && claimed.start_lsn == want->start_lsn &&
         claimed.end_lsn == want->end_lsn;
}

}  // namespace

SegmentJournal::SegmentJournal(std::shared_ptr<FileSystem> fs, std::string dir, JournalOptions options)
    : fs_(std::move(fs)), dir_(std::move(dir)), options_(std::move(options)) {}

SegmentJournal::~SegmentJournal() = default;

Result<std::unique_ptr<SegmentJournal>> SegmentJournal::Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                             JournalOptions options, ReplayHandler* replay,
                                                             RecoveryReport* report) {
  RecoveryReport local_report;
  if (report == nullptr) report = &local_report;
  if (!options.log) options.log = [](LogLevel, std::string_view) {};
  std::unique_ptr<SegmentJournal> j(new SegmentJournal(fs, dir, options));
  STRATA_RETURN_IF_ERROR(fs->CreateDirs(dir));
  auto names = fs->ListDir(dir);
  if (!names.ok()) return names.status();
  std::vector<std::uint64_t> sequences;
  for (const auto& name : *names) {
    std::uint64_t seq;
    if (ParseSegmentFileName(name, &seq)) sequences.push_back(seq);
  }
  std::sort(sequences.begin(), sequences.end());
  for (std::size_t i = 1; i < sequences.size(); ++i) {
    if (sequences[i] != sequences[i - 1] + 1)
      return Status::Corruption(dir + ": segment " + SegmentFileName(sequences[i - 1] + 1) +
                                " is missing between two existing segments");
  }

  std::lock_guard<std::mutex> lock(j->mu_);
  std::uint64_t newest_valid_end = 0;
  bool newest_removed = false;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    bool newest = i + 1 == sequences.size();
    std::uint64_t valid_end = 0;
    bool removed = false;
    STRATA_RETURN_IF_ERROR(j->RecoverSegment(sequences[i], newest, replay, report, &valid_end, &removed));
    if (newest) {
      newest_valid_end = valid_end;
      newest_removed = removed;
    }
  }
  if (newest_removed) sequences.pop_back();

  if (sequences.empty()) {
    SegmentHeader header{options.kind, 1, options.initial_base_lsn};
    STRATA_RETURN_IF_ERROR(replay->OnSegment(header));
    STRATA_RETURN_IF_ERROR(j->CreateSegment(1, options.initial_base_lsn));
  } else {
    std::uint64_t newest = sequences.back();
    auto writer = fs->OpenWritable(j->segments_[newest].path, OpenMode::kOpenExisting);
    if (!writer.ok()) return writer.status();
    j->active_ = std::move(writer).value();
    j->active_sequence_ = newest;
    // RecoverSegment logged the cut and counted it in the report.
    if (!newest_removed && j->active_->Size() != newest_valid_end)
      STRATA_RETURN_IF_ERROR(j->active_->Truncate(newest_valid_end));
    // Synced below with the cut: a crash before that fdatasync leaves the
    // damaged bytes, which the next Open judges the same way.
    if (!j->rewrite_at_open_.empty()) STRATA_RETURN_IF_ERROR(j->active_->Append(j->rewrite_at_open_));
  }
  // Make what we replayed durable before it can be acknowledged.
  STRATA_RETURN_IF_ERROR(j->active_->Sync());
  STRATA_RETURN_IF_ERROR(fs->SyncDir(dir));
  j->fdatasyncs_.fetch_add(1, std::memory_order_relaxed);
  j->dir_dirty_ = false;
  return j;
}

Status SegmentJournal::RecoverSegment(std::uint64_t sequence, bool newest, ReplayHandler* replay,
                                      RecoveryReport* report, std::uint64_t* valid_end, bool* removed) {
  std::string path = JoinPath(dir_, SegmentFileName(sequence));
  auto reader = fs_->OpenReadable(path);
  if (!reader.ok()) return reader.status();
  std::shared_ptr<ReadableFile> file = std::move(reader).value();
  auto size = file->Size();
  if (!size.ok()) return size.status();
  std::string bytes;
  STRATA_RETURN_IF_ERROR(file->ReadAt(0, *size, &bytes));
  ++report->segments_scanned;

  SegmentHeader header;
  Status header_status = DecodeSegmentHeader(bytes, &header);
  if (header_status.ok() && (header.sequence != sequence || header.kind != options_.kind))
    header_status = Status::Corruption("segment header names sequence " + std::to_string(header.sequence) +
                                       " / kind " + std::to_string(static_cast<int>(header.kind)));
  if (!header_status.ok()) {
    if (!newest)
      return RefuseDamaged(path + " (sealed): " + header_status.message() +
                               ": acknowledged data may be lost; nothing was changed; rebuild this node from its peers",
                           std::nullopt, report);
    // A torn creation leaves no valid record behind the header (its header
    // is synced with, never after, its first records); any valid record
    // means the header was damaged after records were synced.
    std::size_t valid = FindValidRecord(bytes, kSegmentHeaderSize);
    if (valid != std::string_view::npos)
      return RefuseDamaged(path + ": " + header_status.message() + ", but a valid record follows it at offset " +
                               std::to_string(valid) + ": the segment holds synced records; nothing was removed; "
                               "rebuild this node from its peers",
                           std::nullopt, report);
    // A crash while the newest segment was being created: nothing in it was
    // ever acknowledged.
    options_.log(LogLevel::kWarning, "recovery: removing " + path + " with a torn header (" +
                                         header_status.message() + ", " + std::to_string(bytes.size()) + " bytes)");
    STRATA_RETURN_IF_ERROR(fs_->Remove(path));
    ++report->torn_segments_removed;
    *removed = true;
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(replay->OnSegment(header));
  if (newest) fill_pattern_ = FillPattern(header);

  std::size_t at = kSegmentHeaderSize;
  std::string why;
  while (at < bytes.size()) {
    RecordHeader rh;
    std::string_view payload;
    ParseResult parsed = ParseRecord(std::string_view(bytes).substr(at), &rh, &payload, &why);
    if (parsed != ParseResult::kOk) break;
    RecordLocation where{sequence, at, rh.payload_len};
    Status applied = replay->OnRecord(rh, payload, where);
    if (!applied.ok())
      return Status::Corruption(path + " offset " + std::to_string(at) + ": replay failed: " + applied.ToString());
    ++report->records_replayed;
    at += kRecordHeaderSize + payload.size();
  }
  if (at < bytes.size()) {
    const std::uint64_t dropped = bytes.size() - at;
    TailVerdict v = JudgeTail(bytes, at, header.base_lsn, why, FillPattern(header));
    const auto& permitted = options_.cut_damaged_tail;
    if (newest && v.unwritten) {
      // Preallocated space (or blocks a crash kept from being written):
      // nothing was written there, nothing is lost.
      options_.log(LogLevel::kInfo, "recovery: " + path + " ends in " + std::to_string(dropped) +
                                        " unwritten bytes after its last record at offset " + std::to_string(at) +
                                        " (" + v.why + "); cutting them");
      report->torn_tail_bytes_truncated += dropped;
    } else if (newest && v.torn) {
      options_.log(LogLevel::kWarning, "recovery: cutting torn tail of " + path + " at offset " + std::to_string(at) +
                                           " (" + v.why + "), dropping " + std::to_string(dropped) + " unsynced bytes");
      report->torn_tail_bytes_truncated += dropped;
    } else if (newest && IsRecordToRewrite(std::string_view(bytes).substr(at), options_.rewrite_damaged_tail)) {
      const RecordHeader& h = *options_.rewrite_damaged_tail;
      options_.log(LogLevel::kWarning, "recovery: rewriting the damaged last record of " + path + " at offset " +
                                           std::to_string(at) + " (" + v.why + "): its owner vouches for it");
      Status applied = replay->OnRecord(h, {}, RecordLocation{sequence, at, 0});
      if (!applied.ok())
        return Status::Corruption(path + " offset " + std::to_string(at) + ": replay failed: " + applied.ToString());
      EncodeRecord(h, {}, &rewrite_at_open_);
      ++report->damaged_records_rewritten;
    } else if (newest && permitted && permitted->file == path && permitted->offset == at) {
      options_.log(LogLevel::kWarning, "recovery: cutting damaged tail of " + path + " at offset " +
                                           std::to_string(at) + " as the node asked (" + v.why + "), dropping " +
                                           std::to_string(dropped) + " bytes; LSNs " +
                                           LsnRange(v.start_lsn, v.end_lsn) + " must come from its peers");
      report->damaged_tail_bytes_cut += dropped;
    } else {
      DamagedRecord damage{path, at, !newest, v.start_lsn, v.end_lsn, v.why};
      return RefuseDamaged(path + (newest ? "" : " (sealed)") + " offset " + std::to_string(at) +
                               ": damaged record: " + v.why + ". Nothing was cut; this node's copy of LSNs " +
                               LsnRange(v.start_lsn, v.end_lsn) + " is lost: " +
                               (newest ? "heal it from peers (then cut_damaged_tail) or rebuild this node"
                                       : "rebuild this node from its peers"),
                           std::move(damage), report);
    }
  }
  segments_[sequence] = Segment{path, file};
  *valid_end = at;
  return Status::Ok();
}

Status SegmentJournal::RefuseDamaged(std::string message, std::optional<DamagedRecord> damage,
                                     RecoveryReport* report) const {
  // Logged as well as returned: leaving these bytes in place is recovery's
  // own decision, and the operator must see it even if the caller does not.
  options_.log(LogLevel::kError, "recovery: refusing to open: " + message);
  report->damage = std::move(damage);
  return Status::Corruption(std::move(message));
}

Status SegmentJournal::CreateSegment(std::uint64_t sequence, Lsn base) {
  std::string path = JoinPath(dir_, SegmentFileName(sequence));
  auto writer = fs_->OpenWritable(path, OpenMode::kCreateNew);
  if (!writer.ok()) return writer.status();
  std::shared_ptr<WritableFile> file = std::move(writer).value();
  Status s = file->Append(EncodeSegmentHeader(SegmentHeader{options_.kind, sequence, base}));
  std::shared_ptr<ReadableFile> reader;
  if (s.ok()) {
    auto r = fs_->OpenReadable(path);
    if (r.ok()) reader = std::move(r).value();
    else s = r.status();
  }
  if (!s.ok()) {
    file.reset();
    Status removed = fs_->Remove(path);
    if (!removed.ok())
      return Status::IoError(s.ToString() + "; and could not remove the new segment: " + removed.ToString());
    return s;
  }
  segments_[sequence] = Segment{path, std::move(reader)};
  active_ = std::move(file);
  filled_end_ = 0;
  fill_pattern_ = FillPattern(SegmentHeader{options_.kind, sequence, base});
  active_sequence_ = sequence;
  dir_dirty_ = true;
  return Status::Ok();
}

void SegmentJournal::PreallocateLocked() {
  const std::uint64_t step = options_.preallocate_bytes;
  const std::uint64_t end = active_->Size();
  if (step == 0 || filled_end_ >= std::min(options_.segment_bytes, end + step / 4)) return;
  const std::uint64_t upto = std::min(options_.segment_bytes, end + step);
  if (upto <= end) return;
  Status s = active_->Preallocate(upto, fill_pattern_);
  if (s.ok()) {
    filled_end_ = upto;
    return;
  }
  // Only a cost: appends still extend the file. Try again at the next
  // segment (a full disk stays full for a while).
  filled_end_ = options_.segment_bytes;
  options_.log(LogLevel::kInfo, dir_ + ": preallocating the segment failed, appending without: " + s.ToString());
}

Status SegmentJournal::FailLocked(const Status& cause) {
  if (!failed_) {
    failed_ = true;
    failed_flag_.store(true, std::memory_order_release);
    options_.log(LogLevel::kError, dir_ + ": journal stopped, reopen to recover: " + cause.ToString());
  }
  return Status::NeedsRecovery(dir_ + ": " + cause.ToString());
}

Status SegmentJournal::RolloverLocked() {
  // A sealed segment ends at its last record: Open judges bytes after it as
  // damage (only the newest segment may end in an unwritten tail).
  if (filled_end_ > active_->Size()) {
    Status cut = active_->Truncate(active_->Size());
    if (!cut.ok()) return FailLocked(cut);
  }
  filled_end_ = 0;
  // Seal: the full segment must be on disk before its successor exists.
  Status sealed = active_->Sync();
  if (!sealed.ok()) return FailLocked(sealed);
  fdatasyncs_.fetch_add(1, std::memory_order_relaxed);
  if (dir_dirty_) {
    // Its directory entry too, so no newer segment can outlive it in a crash.
    Status dir_synced = fs_->SyncDir(dir_);
    if (!dir_synced.ok()) return FailLocked(dir_synced);
    dir_dirty_ = false;
  }
  Status created = CreateSegment(active_sequence_ + 1, base_lsn_);
  if (created.ok()) return created;
  if (created.code() == StatusCode::kNoSpace) return created;  // still appending to the sealed one is fine
  return FailLocked(created);
}

Result<SegmentJournal::Appended> SegmentJournal::Append(const std::vector<PendingRecord>& records) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_) return Status::NeedsRecovery(dir_ + ": journal stopped after an earlier I/O failure; reopen");
  scratch_.clear();
  for (const auto& r : records) EncodeRecord(r.header, r.payload, &scratch_);
  if (active_->Size() > kSegmentHeaderSize && active_->Size() + scratch_.size() > options_.segment_bytes)
    STRATA_RETURN_IF_ERROR(RolloverLocked());

  const std::uint64_t start = active_->Size();
  Status written = active_->Append(scratch_);
  if (!written.ok()) {
    // Undo the partial write so nothing half-written stays in the file and
    // the next append starts at a record boundary.
    Status undone = active_->Truncate(start);
    if (!undone.ok()) return FailLocked(Status::IoError(written.ToString() + "; undo: " + undone.ToString()));
    if (written.code() != StatusCode::kNoSpace) return FailLocked(written);
    return written;
  }
  PreallocateLocked();
  Appended out;
  out.sequence = ++appended_sequence_;
  std::uint64_t at = start;
  for (const auto& r : records) {
    out.where.push_back(RecordLocation{active_sequence_, at, static_cast<std::uint32_t>(r.payload.size())});
    at += kRecordHeaderSize + r.payload.size();
  }
  return out;
}

Status SegmentJournal::SyncUpTo(std::uint64_t sequence) {
  auto stopped = [this] {
    return Status::NeedsRecovery(dir_ + ": journal stopped after an earlier I/O failure; reopen");
  };
  if (failed_flag_.load(std::memory_order_acquire)) return stopped();
  if (synced_sequence() >= sequence) return Status::Ok();
  {
    // Wait while another caller's fdatasync is in flight; it may cover us.
    // Waiters sleep on a condition variable, so when that fdatasync ends they
    // all wake at once: the covered ones return and one of the rest leads
    // the next fdatasync for everything appended meanwhile.
    std::unique_lock<std::mutex> lock(sync_mu_);
    for (;;) {
      if (failed_flag_.load(std::memory_order_acquire)) return stopped();
      if (synced_sequence() >= sequence) return Status::Ok();
      if (!sync_in_progress_) break;
      sync_done_.wait(lock);
    }
    sync_in_progress_ = true;
  }

  std::shared_ptr<WritableFile> file;
  std::uint64_t target = 0;
  bool sync_dir = false;
  Status s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_) s = stopped();
    file = active_;
    target = appended_sequence_;
    sync_dir = dir_dirty_;
  }
  // Older segments were sealed at rollover, so syncing the active one (and
  // the directory entry of a new one) covers everything up to `target`.
  if (s.ok()) s = file->Sync();
  if (s.ok() && sync_dir) s = fs_->SyncDir(dir_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      s = FailLocked(s);
    } else {
      fdatasyncs_.fetch_add(1, std::memory_order_relaxed);
      if (sync_dir && file == active_) dir_dirty_ = false;
      synced_sequence_.store(target, std::memory_order_release);
    }
  }
  {
    std::lock_guard<std::mutex> lock(sync_mu_);
    sync_in_progress_ = false;
  }
  sync_done_.notify_all();
  return s;
}

Status SegmentJournal::SyncAll() {
  std::uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mu_);
    target = appended_sequence_;
  }
  return SyncUpTo(target);
}

Status SegmentJournal::Read(const RecordLocation& where, RecordHeader* header, std::string* payload,
                            DamagedRecord* damage) const {
  std::shared_ptr<ReadableFile> file;
  std::string path;
  bool sealed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = segments_.find(where.segment);
    if (it == segments_.end())
      return Status::NotFound(dir_ + ": segment " + std::to_string(where.segment) + " was deleted");
    file = it->second.reader;
    path = it->second.path;
    sealed = where.segment != active_sequence_;
  }
  if (damage != nullptr) *damage = DamagedRecord{path, where.offset, sealed, 0, 0, ""};
  std::string bytes;
  STRATA_RETURN_IF_ERROR(file->ReadAt(where.offset, kRecordHeaderSize + where.payload_len, &bytes));
  std::string_view body;
  std::string why;
  if (ParseRecord(bytes, header, &body, &why) != ParseResult::kOk || body.size() != where.payload_len) {
    if (why.empty()) why = "record length changed";
    if (damage != nullptr) damage->reason = why;
    return Status::Corruption(path + (sealed ? " (sealed)" : "") + " offset " + std::to_string(where.offset) + ": " +
                              why);
  }
  payload->assign(body);
  return Status::Ok();
}

void SegmentJournal::set_base_lsn(Lsn base) {
  std::lock_guard<std::mutex> lock(mu_);
  base_lsn_ = std::max(base_lsn_, base);
}

Result<std::uint64_t> SegmentJournal::DeleteOldest(const std::function<bool(std::uint64_t)>& deletable) {
  std::lock_guard<std::mutex> lock(mu_);
  std::uint64_t deleted = 0;
  // No directory fsync needed: if a deletion is lost in a crash, the segment
  // comes back holding only data below the released LSN, and replay drops it.
  while (!segments_.empty() && segments_.begin()->first != active_sequence_ && deletable(segments_.begin()->first)) {
    auto it = segments_.begin();
    Status removed = fs_->Remove(it->second.path);
    if (!removed.ok()) return removed;
    options_.log(LogLevel::kInfo, "deleted released segment " + it->second.path);
    segments_.erase(it);
    ++deleted;
  }
  return deleted;
}

std::uint64_t SegmentJournal::segment_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.size();
}

std::uint64_t SegmentJournal::active_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_sequence_;
}

}  // namespace strata::logservice::storage
