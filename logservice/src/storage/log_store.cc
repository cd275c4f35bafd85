// LogStore: the redo store of a log service node (contract in log_store.h).
//
// Layers: a SegmentJournal (files, group commit, torn-tail recovery) holds
// the history; a LogIndex (memory) says which bytes are live where. Every
// mutation is "journal first, index second", under mu_:
//   Append       PlanAppend (epoch rules, skip duplicates) -> one journal
//                batch with a kRedo record per missing piece -> Insert.
//   TruncateAfter  kTruncate record -> index cut + fence -> SyncUpTo.
//   ReleaseBelow   kRelease record -> index release -> SyncUpTo -> delete
//                whole segments nothing live points into (oldest first).
// Because the index is only ever changed the way replay will change it, Open
// rebuilds exactly the state that was durable: the journal is the truth.
//
// Reads: every record is checked by the journal; one that fails is
// kCorruption naming its LSNs, noted in `damaged`, never skipped.
//
// Locks: mu_ (this file) is taken before the journal's own mutex, never
// after. fdatasync happens in SegmentJournal::SyncUpTo without mu_; the index
// learns the new synced sequence afterwards (OnSynced), which is the only
// way durable_lsn moves forward.
#include "storage/log_store.h"

#include <algorithm>
#include <limits>
#include <mutex>

#include "log_index.h"
#include "segment_journal.h"

namespace strata::logservice {

using storage::LogIndex;
using storage::RecordHeader;
using storage::RecordLocation;
using storage::RecordType;
using storage::SegmentHeader;
using storage::SegmentJournal;

struct LogStore::State {
  std::string dir;
  LogStoreOptions options;
  std::unique_ptr<SegmentJournal> journal;
  mutable std::mutex mu;
  LogIndex index;
  LogStoreStats stats;
  std::vector<DamagedRecord> damaged;  // found by Read, each once
  std::optional<StoredTail> tail;     // the last kTail record (PutTail or replay)
  RecordLocation tail_where;

  // Writes the tail record again in the active segment if the segment that
  // holds it no longer holds live redo (it is about to be deleted), and
  // makes the copy durable. Before any deletion: the register may be the
  // only copy of acknowledged bytes.
  Status KeepTailLive() {
    std::uint64_t sequence = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (!tail || tail_where.segment == journal->active_sequence() || index.SegmentInUse(tail_where.segment))
        return Status::Ok();
      const RecordHeader h = TailHeader(*tail);
      auto appended = journal->Append({{h, tail->image}});
      if (!appended.ok()) return appended.status();
      tail_where = appended->where[0];
      sequence = appended->sequence;
    }
    return journal->SyncUpTo(sequence);
  }

  // mu held (or Open): no live redo and not the tail record's home.
  bool Deletable(std::uint64_t segment) const {
    return !index.SegmentInUse(segment) && !(tail && tail_where.segment == segment);
  }

  static RecordHeader TailHeader(const StoredTail& t) {
    return RecordHeader{RecordType::kTail, static_cast<std::uint32_t>(t.image.size()), t.block_lsn, t.data_end,
                        t.epoch};
  }

  // Notes damage a read found (takes mu) and says which LSNs it costs.
  Status ReportDamage(DamagedRecord d) {
    std::string message = "LSNs [" + std::to_string(d.start_lsn) + ", " + std::to_string(d.end_lsn) +
                          ") on this node are corrupt: " + d.file + (d.sealed ? " (sealed)" : "") + " offset " +
                          std::to_string(d.offset) + ": " + d.reason + "; heal them from peers";
    std::lock_guard<std::mutex> lock(mu);
    auto same = [&](const DamagedRecord& known) { return known.file == d.file && known.offset == d.offset; };
    if (std::none_of(damaged.begin(), damaged.end(), same)) damaged.push_back(std::move(d));
    return Status::Corruption(std::move(message));
  }

  void RefreshDurable() {
    std::lock_guard<std::mutex> lock(mu);
    index.OnSynced(journal->synced_sequence());
  }
};

namespace {

// Rebuilds the index from the journal's history, applying each record with
// the same checks Append/TruncateAfter/ReleaseBelow used when it was written.
class LogReplay final : public storage::ReplayHandler {
 public:
  LogReplay(LogIndex* index, std::optional<StoredTail>* tail, RecordLocation* tail_where)
      : index_(index), tail_(tail), tail_where_(tail_where) {}

  Status OnSegment(const SegmentHeader& header) override {
    if (header.kind != storage::SegmentKind::kRedo) return Status::Corruption("not a redo segment");
    index_->Release(header.base_lsn);
    return Status::Ok();
  }

  Status OnRecord(const RecordHeader& h, std::string_view payload, const RecordLocation& where) override {
    switch (h.type) {
      case RecordType::kRedo: {
        std::vector<std::pair<Lsn, Lsn>> missing;
        STRATA_RETURN_IF_ERROR(index_->PlanAppend(h.start_lsn, h.end_lsn, h.epoch, &missing));
        for (auto [start, end] : missing)
          index_->Insert(storage::Extent{start, end, h.epoch, where, h.start_lsn, /*sequence=*/0});
        return Status::Ok();
      }
      case RecordType::kTruncate:
        STRATA_RETURN_IF_ERROR(index_->CheckTruncate(h.start_lsn, h.epoch));
        index_->TruncateAfter(h.start_lsn, h.epoch, where.segment);
        return Status::Ok();
      case RecordType::kRelease:
        index_->Release(h.start_lsn);
        return Status::Ok();
      case RecordType::kTail:
        *tail_ = StoredTail{h.epoch, h.start_lsn, h.end_lsn, std::string(payload)};
        *tail_where_ = where;
        return Status::Ok();
      case RecordType::kPageImage:
        break;
    }
    return Status::Corruption("unexpected record type in a redo segment");
  }

 private:
  LogIndex* index_;
  std::optional<StoredTail>* tail_;
  RecordLocation* tail_where_;
};

}  // namespace

LogStore::LogStore(std::unique_ptr<State> state) : s_(std::move(state)) {}
LogStore::~LogStore() = default;

Result<std::unique_ptr<LogStore>> LogStore::Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                 LogStoreOptions options, RecoveryReport* report) {
  RecoveryReport local;
  if (report == nullptr) report = &local;
  if (!options.log) options.log = [](LogLevel, std::string_view) {};
  auto state = std::make_unique<State>();
  state->dir = dir;
  state->options = options;
  LogReplay replay(&state->index, &state->tail, &state->tail_where);
  storage::JournalOptions jo{storage::SegmentKind::kRedo, options.segment_bytes, options.initial_lsn, options.log,
                            options.cut_damaged_tail, /*rewrite_damaged_tail=*/std::nullopt};
  jo.preallocate_bytes = options.preallocate_bytes;
  auto journal = SegmentJournal::Open(fs, dir, jo, &replay, report);
  if (!journal.ok()) return journal.status();
  state->journal = std::move(journal).value();
  state->journal->set_base_lsn(state->index.base());
  // A crash between a release record and its deletions leaves dead segments,
  // perhaps with the tail record in one of them.
  STRATA_RETURN_IF_ERROR(state->KeepTailLive());
  auto deleted = state->journal->DeleteOldest([&](std::uint64_t seg) { return state->Deletable(seg); });
  if (!deleted.ok()) return deleted.status();
  report->released_segments_deleted += *deleted;
  const LogIndex& ix = state->index;
  options.log(LogLevel::kInfo, "opened " + dir + ": released " + std::to_string(ix.base()) + ", durable " +
                                   std::to_string(ix.durable()) + ", highest " + std::to_string(ix.highest()) +
                                   ", " + std::to_string(state->journal->segment_count()) + " segments");
  return std::unique_ptr<LogStore>(new LogStore(std::move(state)));
}

Result<AppendTicket> LogStore::Append(Lsn start_lsn, Epoch epoch, std::string_view redo) {
  if (redo.empty() || redo.size() > kMaxRecordPayload)
    return Status::InvalidArgument("append of " + std::to_string(redo.size()) + " bytes (allowed 1.." +
                                   std::to_string(kMaxRecordPayload) + ")");
  if (start_lsn > std::numeric_limits<Lsn>::max() - redo.size())
    return Status::InvalidArgument("append at LSN " + std::to_string(start_lsn) + " overflows");
  const Lsn end_lsn = start_lsn + redo.size();

  std::lock_guard<std::mutex> lock(s_->mu);
  std::vector<std::pair<Lsn, Lsn>> missing;
  STRATA_RETURN_IF_ERROR(s_->index.PlanAppend(start_lsn, end_lsn, epoch, &missing));
  if (missing.empty()) return AppendTicket{};  // duplicate or released: nothing to do
  std::vector<SegmentJournal::PendingRecord> records;
  for (auto [start, end] : missing) {
    RecordHeader h{RecordType::kRedo, static_cast<std::uint32_t>(end - start), start, end, epoch};
    records.push_back({h, redo.substr(start - start_lsn, end - start)});
  }
  auto appended = s_->journal->Append(records);
  if (!appended.ok()) return appended.status();
  for (std::size_t i = 0; i < missing.size(); ++i) {
    auto [start, end] = missing[i];
    s_->index.Insert(storage::Extent{start, end, epoch, appended->where[i], start, appended->sequence});
    s_->stats.bytes_written += end - start;
  }
  ++s_->stats.appends;
  s_->stats.records_written += missing.size();
  return AppendTicket{appended->sequence};
}

Result<AppendTicket> LogStore::PutTail(const StoredTail& tail) {
  if (tail.image.empty() || tail.image.size() > kMaxRecordPayload || tail.data_end <= tail.block_lsn ||
      tail.data_end - tail.block_lsn > tail.image.size())
    return Status::InvalidArgument("tail register at " + std::to_string(tail.block_lsn) + " with data end " +
                                   std::to_string(tail.data_end) + " and a " + std::to_string(tail.image.size()) +
                                   "-byte image");
  std::lock_guard<std::mutex> lock(s_->mu);
  auto appended = s_->journal->Append({{State::TailHeader(tail), tail.image}});
  if (!appended.ok()) return appended.status();
  s_->tail = tail;
  s_->tail_where = appended->where[0];
  ++s_->stats.tail_writes;
  return AppendTicket{appended->sequence};
}

std::optional<StoredTail> LogStore::last_tail() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->tail;
}

Status LogStore::Sync() {
  STRATA_RETURN_IF_ERROR(s_->journal->SyncAll());
  s_->RefreshDurable();
  return Status::Ok();
}

Status LogStore::SyncUpTo(AppendTicket ticket) {
  STRATA_RETURN_IF_ERROR(s_->journal->SyncUpTo(ticket.sequence));
  s_->RefreshDurable();
  return Status::Ok();
}

Result<std::vector<RedoRange>> LogStore::Read(Lsn from, std::size_t max_bytes) const {
  std::vector<storage::Extent> extents;
  Lsn limit;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (from < s_->index.base())
      return Status::NotFound("LSN " + std::to_string(from) + " was released (released LSN " +
                              std::to_string(s_->index.base()) + ")");
    limit = s_->index.durable();
    if (max_bytes < limit - std::min(limit, from)) limit = from + max_bytes;
    if (from < limit) extents = s_->index.Covering(from, limit, max_bytes);
  }
  std::vector<RedoRange> out;
  RecordHeader h;
  std::string payload;
  Lsn cursor = from;
  for (const auto& e : extents) {
    DamagedRecord damage;
    Status read = s_->journal->Read(e.where, &h, &payload, &damage);
    if (read.is_not_found()) return Status::NotFound("LSN " + std::to_string(cursor) + " released while reading");
    if (read.is_data_loss()) {
      // The whole record is lost to this node, not just the part asked for.
      damage.start_lsn = e.record_start;
      damage.end_lsn = e.record_start + e.where.payload_len;
      return s_->ReportDamage(std::move(damage));
    }
    STRATA_RETURN_IF_ERROR(read);
    if (h.type != RecordType::kRedo || h.start_lsn != e.record_start || h.epoch != e.epoch) {
      // It checks out, but it is another record (a misdirected write).
      damage.start_lsn = e.record_start;
      damage.end_lsn = e.record_start + e.where.payload_len;
      damage.reason = "a valid record, but not the one the index expects";
      return s_->ReportDamage(std::move(damage));
    }
    Lsn end = std::min(e.end, limit);
    std::string_view bytes = std::string_view(payload).substr(cursor - e.record_start, end - cursor);
    if (!out.empty() && out.back().epoch == e.epoch) out.back().bytes.append(bytes);
    else out.push_back(RedoRange{cursor, e.epoch, std::string(bytes)});
    cursor = end;
  }
  return out;
}

Status LogStore::TruncateAfter(Lsn lsn, Epoch new_epoch) {
  std::uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    STRATA_RETURN_IF_ERROR(s_->index.CheckTruncate(lsn, new_epoch));
    RecordHeader h{RecordType::kTruncate, 0, lsn, lsn, new_epoch};
    auto appended = s_->journal->Append({{h, {}}});
    if (!appended.ok()) return appended.status();
    s_->index.TruncateAfter(lsn, new_epoch, appended->where[0].segment);
    sequence = appended->sequence;
  }
  STRATA_RETURN_IF_ERROR(s_->journal->SyncUpTo(sequence));
  s_->RefreshDurable();
  s_->options.log(LogLevel::kInfo, s_->dir + ": truncated after LSN " + std::to_string(lsn) + ", fenced to epoch " +
                                       std::to_string(new_epoch));
  return Status::Ok();
}

Status LogStore::ReleaseBelow(Lsn lsn) { return Release(lsn, /*beyond_complete=*/false); }

Status LogStore::StartAt(Lsn lsn) { return Release(lsn, /*beyond_complete=*/true); }

// One release record either way: replay applies it without the bound check,
// so a log moved forward by StartAt reopens where it was moved to.
Status LogStore::Release(Lsn lsn, bool beyond_complete) {
  std::uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    if (lsn <= s_->index.base()) return Status::Ok();
    if (!beyond_complete) STRATA_RETURN_IF_ERROR(s_->index.CheckRelease(lsn));
    RecordHeader h{RecordType::kRelease, 0, lsn, lsn, 0};
    auto appended = s_->journal->Append({{h, {}}});
    if (!appended.ok()) return appended.status();
    s_->index.Release(lsn);
    s_->journal->set_base_lsn(lsn);
    sequence = appended->sequence;
  }
  // The release must be durable before any segment it justifies goes away.
  STRATA_RETURN_IF_ERROR(s_->journal->SyncUpTo(sequence));
  STRATA_RETURN_IF_ERROR(s_->KeepTailLive());
  std::lock_guard<std::mutex> lock(s_->mu);
  s_->index.OnSynced(s_->journal->synced_sequence());
  auto deleted = s_->journal->DeleteOldest([this](std::uint64_t seg) { return s_->Deletable(seg); });
  if (!deleted.ok()) return deleted.status();
  return Status::Ok();
}

std::vector<DamagedRecord> LogStore::damaged() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return s_->damaged;
}

LogFrontier LogStore::frontier() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  const LogIndex& ix = s_->index;
  return LogFrontier{ix.base(), ix.durable(), ix.complete(), ix.highest(), ix.max_epoch()};
}

LogStoreStats LogStore::stats() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  LogStoreStats out = s_->stats;
  out.fdatasyncs = s_->journal->fdatasync_count();
  out.segments = s_->journal->segment_count();
  return out;
}

}  // namespace strata::logservice
