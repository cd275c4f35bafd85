// PageStore: page images by (space, page, LSN) on a SegmentJournal of kind
// kPages (contract in page_store.h).
//
// Index: PageId -> (version LSN -> record location + journal sequence), in
// memory, rebuilt by replaying the journal on Open. A version is visible to
// GetPage only once its sequence is synced, so GetPage, like LogStore::Read,
// never serves anything a crash could take back. TruncateAfter writes a
// kTruncate record (replayed the same way) and syncs before returning. A
// damaged truncation at the very end is rewritten at Open when the owner
// names it (PageStoreOptions::last_truncation); other damage refuses.
// Locks: mu_ before the journal's mutex; fdatasync without mu_.
#include "storage/page_store.h"

#include <map>
#include <mutex>

#include "strata/rdma/little_endian.h"
#include "segment_journal.h"

namespace strata::logservice {

using storage::RecordHeader;
using storage::RecordLocation;
using storage::RecordType;
using storage::SegmentJournal;

namespace {

struct Version {
  RecordLocation where;
  std::uint64_t sequence = 0;
};
using VersionMap = std::map<PageId, std::map<Lsn, Version>>;

void DropVersionsAfter(VersionMap* versions, Lsn lsn) {
  for (auto page = versions->begin(); page != versions->end();) {
    auto& by_lsn = page->second;
    by_lsn.erase(by_lsn.upper_bound(lsn), by_lsn.end());
    page = by_lsn.empty() ? versions->erase(page) : std::next(page);
  }
}

// The page store's truncation record (no fence epoch: the log's carries it).
RecordHeader TruncationHeader(Lsn lsn) { return RecordHeader{RecordType::kTruncate, 0, lsn, lsn, 0}; }

PageId DecodePageKey(std::string_view payload) {
  return PageId{rdma::GetFixed32(payload.data()), rdma::GetFixed32(payload.data() + 4)};
}

class PageReplay final : public storage::ReplayHandler {
 public:
  explicit PageReplay(VersionMap* versions) : versions_(versions) {}
  Status OnSegment(const storage::SegmentHeader& header) override {
    if (header.kind != storage::SegmentKind::kPages) return Status::Corruption("not a page segment");
    return Status::Ok();
  }
  Status OnRecord(const RecordHeader& h, std::string_view payload, const RecordLocation& where) override {
    if (h.type == RecordType::kPageImage) {
      (*versions_)[DecodePageKey(payload)][h.start_lsn] = Version{where, 0};
      return Status::Ok();
    }
    if (h.type == RecordType::kTruncate) {
      DropVersionsAfter(versions_, h.start_lsn);
      return Status::Ok();
    }
    return Status::Corruption("unexpected record type in a page segment");
  }

 private:
  VersionMap* versions_;
};

}  // namespace

struct PageStore::State {
  std::string dir;
  PageStoreOptions options;
  std::unique_ptr<SegmentJournal> journal;
  mutable std::mutex mu;
  VersionMap versions;
  std::uint64_t version_count() const {
    std::uint64_t n = 0;
    for (const auto& [id, by_lsn] : versions) n += by_lsn.size();
    return n;
  }
};

PageStore::PageStore(std::unique_ptr<State> state) : s_(std::move(state)) {}
PageStore::~PageStore() = default;

Result<std::unique_ptr<PageStore>> PageStore::Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                   PageStoreOptions options, RecoveryReport* report) {
  if (!options.log) options.log = [](LogLevel, std::string_view) {};
  auto state = std::make_unique<State>();
  state->dir = dir;
  state->options = options;
  PageReplay replay(&state->versions);
  storage::JournalOptions jo{storage::SegmentKind::kPages, options.segment_bytes, 0, options.log,
                            options.cut_damaged_tail,
                            options.last_truncation ? std::optional(TruncationHeader(*options.last_truncation))
                                                    : std::nullopt};
  auto journal = SegmentJournal::Open(fs, dir, jo, &replay, report);
  if (!journal.ok()) return journal.status();
  state->journal = std::move(journal).value();
  return std::unique_ptr<PageStore>(new PageStore(std::move(state)));
}

Result<AppendTicket> PageStore::PutPage(PageId id, Lsn lsn, std::string_view image) {
  if (image.empty() || image.size() > kMaxPageImage)
    return Status::InvalidArgument("page image of " + std::to_string(image.size()) + " bytes (allowed 1.." +
                                   std::to_string(kMaxPageImage) + ")");
  std::string payload(storage::kPageKeySize, '\0');
  rdma::PutFixed32(&payload[0], id.space_id);
  rdma::PutFixed32(&payload[4], id.page_no);
  payload.append(image);
  RecordHeader h{RecordType::kPageImage, static_cast<std::uint32_t>(payload.size()), lsn, lsn, 0};
  std::lock_guard<std::mutex> lock(s_->mu);
  auto appended = s_->journal->Append({{h, payload}});
  if (!appended.ok()) return appended.status();
  s_->versions[id][lsn] = Version{appended->where[0], appended->sequence};
  return AppendTicket{appended->sequence};
}

Status PageStore::Sync() { return s_->journal->SyncAll(); }
Status PageStore::SyncUpTo(AppendTicket ticket) { return s_->journal->SyncUpTo(ticket.sequence); }

Result<PageVersion> PageStore::GetPage(PageId id, Lsn lsn) const {
  Version found;
  Lsn found_lsn = 0;
  bool have = false;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    const std::uint64_t synced = s_->journal->synced_sequence();
    auto page = s_->versions.find(id);
    if (page != s_->versions.end()) {
      const auto& by_lsn = page->second;
      // Newest version at or below lsn that is durable.
      for (auto it = by_lsn.upper_bound(lsn); it != by_lsn.begin();) {
        --it;
        if (it->second.sequence <= synced) {
          found = it->second;
          found_lsn = it->first;
          have = true;
          break;
        }
      }
    }
  }
  if (!have)
    return Status::NotFound("no durable image of page " + std::to_string(id.space_id) + ":" +
                            std::to_string(id.page_no) + " at or below LSN " + std::to_string(lsn));
  RecordHeader h;
  std::string payload;
  STRATA_RETURN_IF_ERROR(s_->journal->Read(found.where, &h, &payload));
  if (h.type != RecordType::kPageImage || h.start_lsn != found_lsn || !(DecodePageKey(payload) == id))
    return Status::Corruption(s_->dir + ": page record at segment " + std::to_string(found.where.segment) +
                              " offset " + std::to_string(found.where.offset) + " is not the one the index expects");
  return PageVersion{found_lsn, payload.substr(storage::kPageKeySize)};
}

Status PageStore::TruncateAfter(Lsn lsn) {
  std::uint64_t sequence;
  {
    std::lock_guard<std::mutex> lock(s_->mu);
    auto appended = s_->journal->Append({{TruncationHeader(lsn), {}}});
    if (!appended.ok()) return appended.status();
    DropVersionsAfter(&s_->versions, lsn);
    sequence = appended->sequence;
  }
  return s_->journal->SyncUpTo(sequence);
}

PageStoreStats PageStore::stats() const {
  std::lock_guard<std::mutex> lock(s_->mu);
  return PageStoreStats{s_->versions.size(), s_->version_count(), s_->journal->fdatasync_count()};
}

}  // namespace strata::logservice
