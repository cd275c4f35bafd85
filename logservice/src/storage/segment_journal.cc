// SegmentJournal implementation. Threads, ordering and failure handling are
// described in segment_journal.h; this comment covers recovery.
//
// Recovery (Open):
//   1. List "<16 hex>.seg" files; their sequence numbers must be consecutive
//      (segments are deleted oldest first, so a hole means a lost file:
//      kCorruption). An empty directory gets segment 1.
//   2. For each segment, oldest first: check the header (CRC, magic,
//      version, kind, sequence == file name), then parse records until the
//      first one that is incomplete or fails its checks.
//        - newest segment: everything from there on was never synced (or a
//          crash tore it); cut it off with ftruncate and log a WARNING. If the
//          newest segment's header itself is torn, the crash hit its creation:
//          delete the file.
//        - older segment: it was sealed (fdatasync'ed) before its successor
//          existed, so a bad record is real damage to acknowledged data:
//          kCorruption, the node must be rebuilt from peers.
//   3. fdatasync the newest segment and fsync the directory, so that what was
//      replayed (possibly only in the page cache after a process crash) is
//      durable before anyone acknowledges it.
#include "segment_journal.h"

#include <algorithm>

namespace strata::logservice::storage {

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
    if (!newest_removed && j->active_->Size() != newest_valid_end) {
      std::uint64_t cut = j->active_->Size() - newest_valid_end;
      STRATA_RETURN_IF_ERROR(j->active_->Truncate(newest_valid_end));
      report->torn_tail_bytes_truncated += cut;
    }
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
    if (!newest) return Status::Corruption(path + ": " + header_status.message());
    // A torn creation leaves no valid record behind the header; a valid one
    // there means the header itself was damaged after records were synced.
    RecordHeader rh;
    std::string_view payload;
    std::string why;
    if (bytes.size() > kSegmentHeaderSize &&
        ParseRecord(std::string_view(bytes).substr(kSegmentHeaderSize), &rh, &payload, &why) == ParseResult::kOk)
      return Status::Corruption(path + ": " + header_status.message() + ", but valid records follow it");
    // A crash while the newest segment was being created: nothing in it was
    // ever acknowledged (its header is synced before any record is).
    options_.log(LogLevel::kWarning, "recovery: removing " + path + " with a torn header (" +
                                         header_status.message() + ", " + std::to_string(bytes.size()) + " bytes)");
    STRATA_RETURN_IF_ERROR(fs_->Remove(path));
    ++report->torn_segments_removed;
    *removed = true;
    return Status::Ok();
  }
  STRATA_RETURN_IF_ERROR(replay->OnSegment(header));

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
    if (!newest)
      return Status::Corruption(path + " (sealed) has a damaged record at offset " + std::to_string(at) + " (" +
                                why + "): acknowledged data may be lost; rebuild this node from its peers");
    options_.log(LogLevel::kWarning, "recovery: cutting torn tail of " + path + " at offset " + std::to_string(at) +
                                         " (" + why + "), dropping " + std::to_string(bytes.size() - at) +
                                         " unsynced bytes");
  }
  segments_[sequence] = Segment{path, file};
  *valid_end = at;
  return Status::Ok();
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
  active_sequence_ = sequence;
  dir_dirty_ = true;
  return Status::Ok();
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

Status SegmentJournal::Read(const RecordLocation& where, RecordHeader* header, std::string* payload) const {
  std::shared_ptr<ReadableFile> file;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = segments_.find(where.segment);
    if (it == segments_.end())
      return Status::NotFound(dir_ + ": segment " + std::to_string(where.segment) + " was deleted");
    file = it->second.reader;
    path = it->second.path;
  }
  std::string bytes;
  STRATA_RETURN_IF_ERROR(file->ReadAt(where.offset, kRecordHeaderSize + where.payload_len, &bytes));
  std::string_view body;
  std::string why;
  if (ParseRecord(bytes, header, &body, &why) != ParseResult::kOk || body.size() != where.payload_len)
    return Status::Corruption(path + " offset " + std::to_string(where.offset) + ": " +
                              (why.empty() ? "record length changed" : why));
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

}  // namespace strata::logservice::storage
