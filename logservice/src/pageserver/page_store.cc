// PageStore: the page server's storage engine (design note sections 7.1-7.4,
// public contract in include/strata/pageserver/store.h).
//
// State and where it lives:
//   manifest_   the last committed manifest (MANIFEST on disk): live files,
//               persisted_lsn, materialized_lsn, gc_horizon, pin, directory
//   files_      an open LayerReader per listed file; index_ maps every page
//               to its entries in those files (rebuilt from footers at Open)
//   active_     records ingested since the last freeze (memory only)
//   frozen_     the records a Freeze is writing; still read by Select until
//               the manifest that lists their delta file is installed
//
// Ordering (the commit protocol, the same for every mutation):
//   1. write new layer files: "*.tmp", fdatasync, rename, fsync dir;
//   2. write the manifest that lists them and no longer lists dropped ones
//      (durable replace): the commit point;
//   3. install the new state in memory (under mu_, atomically for readers);
//   4. only for GC: unlink the files the manifest stopped listing.
// A crash before 2 leaves orphans that Open deletes; a crash after 2 leaves
// files the manifest no longer lists, which Open deletes too. The log
// service is the write-ahead log: records above persisted_lsn are lost by a
// crash and the caller ingests them again from there.
//
// Locks: write_mu_ serialises mutations (Freeze, WriteImages, GC, setters)
// and is held across their I/O; mu_ (shared) guards the in-memory state and
// is never held across I/O, so Ingest and Select proceed while a mutation
// writes. Select snapshots the readers and memory records it needs under
// mu_, then reads blocks without it.
//
// Failure handling: a failed layer-file write undoes itself (the frozen
// records go back in front of the active ones) and the error is returned;
// the call can be retried. A failed manifest write marks the store broken
// (kNeedsRecovery for every later mutation): the rename may or may not
// have happened, so only a reopen knows the state.
#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "layer_reader.h"
#include "layer_writer.h"
#include "manifest.h"
#include "memory_layer.h"
#include "page_index.h"
#include "pageserver/store.h"

namespace strata::pageserver {

using logservice::LogLevel;

namespace {

std::string L(Lsn lsn) { return std::to_string(lsn); }

class PageStoreImpl final : public PageStore {
 public:
  explicit PageStoreImpl(StoreOptions o) : opt_(std::move(o)), fs_(*opt_.fs) {
    if (!opt_.log) opt_.log = logservice::StderrLogSink();
  }

  Status Recover(OpenReport* report);

  Status Ingest(std::vector<PageRecord> records, Lsn ingested_to) override;
  Status Freeze(std::optional<std::string> directory_snapshot) override;
  Status WriteImages(Lsn version, std::vector<PageRecord> images) override;
  Result<ReadPlan> Select(PageId page, Lsn lsn) const override;
  Result<std::vector<ImageNeed>> PagesNeedingImages(const ImagePolicy& policy) const override;
  Result<GcReport> CollectGarbage(Lsn horizon) override;
  Status SetMaterializedLsn(Lsn lsn) override;
  Status SetPinLsn(Lsn lsn) override;
  StoreState state() const override;
  std::string directory_snapshot() const override;
  Status VerifyFiles() const override;

 private:
  struct LiveFile {
    format::ManifestFile entry;
    std::shared_ptr<const LayerReader> reader;
  };

  Status CheckUsable() const;
  // Step 2 of the protocol; on failure the store is broken.
  Status Commit(const format::Manifest& m);
  // Opens a file just written and checks it is what the writer reported.
  Result<std::shared_ptr<const LayerReader>> OpenWritten(const WrittenLayer& w);
  Status OpenListed(const format::ManifestFile& f, std::shared_ptr<const LayerReader>* out);
  void Install(const format::Manifest& m, const std::vector<std::shared_ptr<const LayerReader>>& added,
               const std::vector<std::uint64_t>& dropped);  // mu_ held exclusively
  void Log(LogLevel level, const std::string& text) const { opt_.log(level, "pageserver store " + opt_.dir + ": " + text); }

  StoreOptions opt_;
  logservice::FileSystem& fs_;
  std::mutex write_mu_;
  mutable std::shared_mutex mu_;
  format::Manifest manifest_;
  std::map<std::uint64_t, LiveFile> files_;
  PageIndex index_;
  MemoryLayer active_;
  std::shared_ptr<const MemoryLayer> frozen_;
  Lsn ingested_lsn_ = 0;
  std::uint64_t next_file_id_ = 1;  // guarded by write_mu_
  bool broken_ = false;             // guarded by mu_
  std::string broken_why_;
};

// ---- open -----------------------------------------------------------------------

Status PageStoreImpl::OpenListed(const format::ManifestFile& f, std::shared_ptr<const LayerReader>* out) {
  const std::string path = logservice::JoinPath(opt_.dir, format::LayerFileName(f.file_id, f.kind));
  auto reader = LayerReader::Open(fs_, path);
  if (!reader.ok()) {
    if (reader.status().is_not_found()) return Status::Corruption(path + ": listed in the manifest but missing");
    return reader.status();
  }
  const LayerReader& r = **reader;
  if (r.header().kind != f.kind || r.header().file_id != f.file_id || r.header().lsn_start != f.lsn_start ||
      r.header().lsn_end != f.lsn_end)
    return Status::Corruption(path + " at offset 0: header does not match the manifest's entry");
  if (r.size() != f.size || r.footer_crc() != f.footer_crc)
    return Status::Corruption(path + " at offset " + std::to_string(r.size()) +
                              ": size or footer does not match the manifest's entry (" + std::to_string(r.size()) +
                              " bytes, manifest says " + std::to_string(f.size) + ")");
  if (opt_.verify_blocks_at_open) STRATA_RETURN_IF_ERROR(r.VerifyAll());
  *out = *reader;
  return Status::Ok();
}

Status PageStoreImpl::Recover(OpenReport* report) {
  STRATA_RETURN_IF_ERROR(fs_.CreateDirs(opt_.dir));
  auto read = ReadManifest(fs_, opt_.dir);
  if (!read.ok() && !read.status().is_not_found()) return read.status();
  if (!read.ok()) {
    format::Manifest m;
    m.sequence = 1;
    m.next_file_id = 1;
    m.persisted_lsn = m.materialized_lsn = m.gc_horizon = opt_.initial_lsn;
    STRATA_RETURN_IF_ERROR(WriteManifest(fs_, opt_.dir, m));
    report->created = true;
    Log(LogLevel::kInfo, "event=created lsn=" + L(opt_.initial_lsn));
    read = std::move(m);
  }
  manifest_ = std::move(*read);

  // Crash leftovers: layer files the manifest does not list, temporary files.
  auto names = fs_.ListDir(opt_.dir);
  if (!names.ok()) return names.status();
  std::map<std::uint64_t, const format::ManifestFile*> listed;
  for (const auto& f : manifest_.files) listed[f.file_id] = &f;
  for (const std::string& name : *names) {
    std::uint64_t id = 0;
    format::FileKind kind;
    const bool layer = format::ParseLayerFileName(name, &id, &kind);
    const bool tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
    if (name == format::kManifestName) continue;
    if (layer) {
      auto it = listed.find(id);
      if (it != listed.end() && it->second->kind == kind) continue;
    } else if (!tmp) {
      Log(LogLevel::kWarning, "event=unknown_file name=" + name + " (left alone)");
      continue;
    }
    STRATA_RETURN_IF_ERROR(fs_.Remove(logservice::JoinPath(opt_.dir, name)));
    report->orphans_removed += 1;
    Log(LogLevel::kInfo, "event=orphan_removed name=" + name);
  }
  if (report->orphans_removed > 0) STRATA_RETURN_IF_ERROR(fs_.SyncDir(opt_.dir));

  for (const auto& f : manifest_.files) {
    std::shared_ptr<const LayerReader> reader;
    STRATA_RETURN_IF_ERROR(OpenListed(f, &reader));
    index_.AddFile(*reader);
    files_[f.file_id] = LiveFile{f, std::move(reader)};
  }
  ingested_lsn_ = manifest_.persisted_lsn;
  next_file_id_ = manifest_.next_file_id;
  Log(LogLevel::kInfo, "event=opened sequence=" + std::to_string(manifest_.sequence) +
                           " files=" + std::to_string(files_.size()) + " persisted=" + L(manifest_.persisted_lsn) +
                           " horizon=" + L(manifest_.gc_horizon));
  return Status::Ok();
}

// ---- commit helpers ----------------------------------------------------------------

Status PageStoreImpl::CheckUsable() const {
  std::shared_lock lock(mu_);
  if (broken_) return Status::NeedsRecovery("page store needs a reopen: " + broken_why_);
  return Status::Ok();
}

Status PageStoreImpl::Commit(const format::Manifest& m) {
  Status s = WriteManifest(fs_, opt_.dir, m);
  if (s.ok()) return s;
  std::unique_lock lock(mu_);
  broken_ = true;
  broken_why_ = "manifest write failed: " + s.ToString();
  return Status::NeedsRecovery(broken_why_);
}

Result<std::shared_ptr<const LayerReader>> PageStoreImpl::OpenWritten(const WrittenLayer& w) {
  std::shared_ptr<const LayerReader> reader;
  Status s = OpenListed(w.entry, &reader);
  if (!s.ok()) return s;
  return reader;
}

void PageStoreImpl::Install(const format::Manifest& m, const std::vector<std::shared_ptr<const LayerReader>>& added,
                            const std::vector<std::uint64_t>& dropped) {
  for (std::uint64_t id : dropped) {
    auto it = files_.find(id);
    if (it == files_.end()) continue;
    index_.RemoveFile(*it->second.reader);
    files_.erase(it);
  }
  for (const auto& reader : added) {
    index_.AddFile(*reader);
    const format::ManifestFile* entry = nullptr;
    for (const auto& f : m.files)
      if (f.file_id == reader->header().file_id) entry = &f;
    files_[reader->header().file_id] = LiveFile{*entry, reader};
  }
  manifest_ = m;
}

// ---- ingest and freeze ---------------------------------------------------------------

Status PageStoreImpl::Ingest(std::vector<PageRecord> records, Lsn ingested_to) {
  std::unique_lock lock(mu_);
  if (ingested_to < ingested_lsn_)
    return Status::InvalidArgument("ingest: ingested_to " + L(ingested_to) + " below ingested " + L(ingested_lsn_));
  Lsn prev_end = 0;
  for (const PageRecord& r : records) {
    if (r.kind != RecordKind::kDelta) return Status::InvalidArgument("ingest: only delta records are ingested");
    if (r.body.size() > format::kMaxRecordBody) return Status::InvalidArgument("ingest: record body above 1 MiB");
    if (r.start_lsn < ingested_lsn_ || r.start_lsn > r.end_lsn || r.end_lsn <= ingested_lsn_ ||
        r.end_lsn > ingested_to || r.end_lsn < prev_end)
      return Status::InvalidArgument("ingest: record [" + L(r.start_lsn) + ", " + L(r.end_lsn) +
                                     ") out of order or outside (" + L(ingested_lsn_) + ", " + L(ingested_to) + "]");
    prev_end = r.end_lsn;
  }
  for (PageRecord& r : records) active_.Add(std::move(r));
  ingested_lsn_ = ingested_to;
  return Status::Ok();
}

Status PageStoreImpl::Freeze(std::optional<std::string> directory_snapshot) {
  std::lock_guard wlock(write_mu_);
  STRATA_RETURN_IF_ERROR(CheckUsable());
  if (directory_snapshot && directory_snapshot->size() > format::kMaxDirectorySnapshot)
    return Status::InvalidArgument("freeze: directory snapshot above the limit");
  if (manifest_.files.size() + 1 > format::kMaxManifestFiles)
    return Status::InvalidArgument("freeze: the manifest lists the most files it can (run GC)");
  Lsn from, to;
  std::shared_ptr<const MemoryLayer> frozen;
  {
    std::unique_lock lock(mu_);
    from = manifest_.persisted_lsn;
    to = ingested_lsn_;
    if (!active_.empty()) {
      frozen_ = std::make_shared<MemoryLayer>(std::move(active_));
      active_ = MemoryLayer();
    }
    frozen = frozen_;
  }
  if (to == from && !directory_snapshot) return Status::Ok();
  format::Manifest m = manifest_;
  std::vector<std::shared_ptr<const LayerReader>> added;
  if (frozen) {
    auto undo = [&] {
      std::unique_lock lock(mu_);
      active_.PrependOlder(*frozen_);
      frozen_.reset();
    };
    const format::FileHeader header{format::FileKind::kDelta, next_file_id_++, from, to};
    auto written = WriteLayerFile(fs_, opt_.dir, header, frozen->InFileOrder());
    if (!written.ok()) {
      undo();
      return written.status();
    }
    auto reader = OpenWritten(*written);
    if (!reader.ok()) {
      undo();
      return reader.status();
    }
    added.push_back(*reader);
    m.files.push_back(written->entry);
  }
  m.sequence += 1;
  m.next_file_id = next_file_id_;
  m.persisted_lsn = to;
  if (directory_snapshot) m.directory = std::move(*directory_snapshot);
  STRATA_RETURN_IF_ERROR(Commit(m));  // limits were checked above: a failure here breaks the store
  std::unique_lock lock(mu_);
  Install(m, added, {});
  frozen_.reset();
  return Status::Ok();
}

// ---- images ------------------------------------------------------------------------------

Status PageStoreImpl::WriteImages(Lsn version, std::vector<PageRecord> images) {
  std::lock_guard wlock(write_mu_);
  STRATA_RETURN_IF_ERROR(CheckUsable());
  {
    std::shared_lock lock(mu_);
    if (version < manifest_.gc_horizon || version > ingested_lsn_)
      return Status::InvalidArgument("images at " + L(version) + ": outside [horizon " + L(manifest_.gc_horizon) +
                                     ", ingested " + L(ingested_lsn_) + "]");
  }
  for (const PageRecord& r : images) {
    if (r.kind != RecordKind::kImage || r.end_lsn != version || r.start_lsn > version || r.body.empty() ||
        r.body.size() > format::kMaxRecordBody)
      return Status::InvalidArgument("images at " + L(version) +
                                     ": each needs kind kImage, end_lsn == version, page LSN <= version, 1 byte to 1 MiB");
  }
  if (images.empty()) return Status::Ok();
  if (manifest_.files.size() + 1 > format::kMaxManifestFiles)
    return Status::InvalidArgument("images: the manifest lists the most files it can (run GC)");
  std::sort(images.begin(), images.end(), [](const PageRecord& a, const PageRecord& b) { return a.page < b.page; });
  std::vector<const PageRecord*> ordered;
  for (std::size_t i = 0; i < images.size(); ++i) {
    if (i > 0 && images[i].page == images[i - 1].page)
      return Status::InvalidArgument("images at " + L(version) + ": two images of one page");
    ordered.push_back(&images[i]);
  }
  const format::FileHeader header{format::FileKind::kImage, next_file_id_++, version, version};
  auto written = WriteLayerFile(fs_, opt_.dir, header, ordered);
  if (!written.ok()) return written.status();
  auto reader = OpenWritten(*written);
  if (!reader.ok()) return reader.status();
  format::Manifest m = manifest_;
  m.sequence += 1;
  m.next_file_id = next_file_id_;
  m.files.push_back(written->entry);
  STRATA_RETURN_IF_ERROR(Commit(m));
  std::unique_lock lock(mu_);
  Install(m, {*reader}, {});
  return Status::Ok();
}

// ---- selection -----------------------------------------------------------------------------

Result<ReadPlan> PageStoreImpl::Select(PageId page, Lsn lsn) const {
  // Snapshot under the lock, read files after.
  std::vector<std::pair<PageFileEntry, std::shared_ptr<const LayerReader>>> deltas;
  std::optional<std::pair<PageFileEntry, std::shared_ptr<const LayerReader>>> image;
  std::vector<PageRecord> memory;
  ReadPlan plan;
  plan.request_lsn = lsn;
  bool below_rule = false;
  {
    std::shared_lock lock(mu_);
    if (lsn > ingested_lsn_)
      return Status::InvalidArgument("select at " + L(lsn) + ": above ingested " + L(ingested_lsn_));
    plan.horizon = manifest_.gc_horizon;
    std::optional<PageFileEntry> base;
    if (lsn < manifest_.gc_horizon) {
      base = index_.NewestImageAtOrBelow(page, manifest_.gc_horizon);
      below_rule = base && base->entry.max_end_lsn > lsn;
    }
    if (!below_rule) base = index_.NewestImageAtOrBelow(page, lsn);
    if (base) image.emplace(*base, files_.at(base->file_id).reader);
    if (!below_rule) {
      const std::optional<Lsn> after = base ? std::optional<Lsn>(base->entry.max_end_lsn) : std::nullopt;
      if (const auto* entries = index_.Find(page)) {
        for (const PageFileEntry& e : *entries) {
          if (e.kind != format::FileKind::kDelta || e.entry.min_end_lsn > lsn) continue;
          if (after && e.entry.max_end_lsn <= *after) continue;
          deltas.emplace_back(e, files_.at(e.file_id).reader);
        }
      }
      if (frozen_) frozen_->Collect(page, after, lsn, &memory);
      active_.Collect(page, after, lsn, &memory);
    }
  }
  if (image) {
    std::vector<PageRecord> recs;
    STRATA_RETURN_IF_ERROR(image->second->ReadPage(image->first.entry, &recs));
    if (recs.size() != 1 || recs[0].page != page)  // the reader checked both; belt and braces
      return Status::Corruption(image->second->path() + ": image entry does not hold one image of the page");
    plan.image = std::move(recs[0]);
  }
  if (below_rule) {
    plan.image_version = plan.image->end_lsn;
    plan.image_page_lsn = plan.image->start_lsn;
    if (plan.image->start_lsn <= lsn) return plan;  // unchanged between lsn and the image
    plan.image.reset();
    plan.outcome = ReadPlan::Outcome::kBelowHorizon;
    plan.reason = "below_horizon: request LSN " + L(lsn) + " is below the GC horizon " + L(plan.horizon) +
                  " and the page's image at " + L(plan.image_version) + " has page LSN " + L(plan.image_page_lsn);
    return plan;
  }
  const bool has_image = plan.image.has_value();
  const Lsn after = has_image ? plan.image->end_lsn : 0;
  std::sort(deltas.begin(), deltas.end(), [](const auto& a, const auto& b) { return a.first.file_id < b.first.file_id; });
  for (const auto& [e, reader] : deltas) {
    std::vector<PageRecord> recs;
    STRATA_RETURN_IF_ERROR(reader->ReadPage(e.entry, &recs));
    for (PageRecord& r : recs)
      if (r.end_lsn <= lsn && (!has_image || r.end_lsn > after)) plan.records.push_back(std::move(r));
  }
  for (PageRecord& r : memory) plan.records.push_back(std::move(r));
  return plan;
}

Result<std::vector<ImageNeed>> PageStoreImpl::PagesNeedingImages(const ImagePolicy& policy) const {
  struct Straddle {
    std::size_t need;
    format::IndexEntry entry;
    std::shared_ptr<const LayerReader> reader;
  };
  std::vector<ImageNeed> needs;
  std::vector<Straddle> straddles;
  {
    std::shared_lock lock(mu_);
    std::map<PageId, ImageNeed> by_page;
    for (const auto& [page, entries] : index_.pages()) {
      ImageNeed n;
      n.page = page;
      for (const auto& e : entries)
        if (e.kind == format::FileKind::kImage) n.image_version = std::max(n.image_version, e.entry.max_end_lsn);
      by_page[page] = n;
    }
    auto count_memory = [&](const MemoryLayer& layer) {
      for (const auto& [page, recs] : layer.pages()) {
        ImageNeed& n = by_page[page];
        n.page = page;
        for (const PageRecord& r : recs)
          if (r.end_lsn > n.image_version) n.records += 1, n.bytes += r.body.size();
      }
    };
    if (frozen_) count_memory(*frozen_);
    count_memory(active_);
    for (auto& [page, n] : by_page) {
      if (const auto* entries = index_.Find(page)) {
        for (const auto& e : *entries) {
          if (e.kind != format::FileKind::kDelta || e.entry.max_end_lsn <= n.image_version) continue;
          if (e.entry.min_end_lsn > n.image_version) {
            n.records += e.entry.record_count;
            n.bytes += e.entry.body_bytes;
          } else {
            straddles.push_back(Straddle{needs.size(), e.entry, files_.at(e.file_id).reader});
          }
        }
      }
      needs.push_back(n);
    }
  }
  for (const Straddle& s : straddles) {  // the image falls inside this file's records of the page
    std::vector<PageRecord> recs;
    STRATA_RETURN_IF_ERROR(s.reader->ReadPage(s.entry, &recs));
    ImageNeed& n = needs[s.need];
    for (const PageRecord& r : recs)
      if (r.end_lsn > n.image_version) n.records += 1, n.bytes += r.body.size();
  }
  std::vector<ImageNeed> out;
  for (const ImageNeed& n : needs)
    if (n.records > 0 && (n.records >= policy.max_records || n.bytes >= policy.max_bytes)) out.push_back(n);
  return out;
}

// ---- garbage collection --------------------------------------------------------------------

Result<GcReport> PageStoreImpl::CollectGarbage(Lsn horizon) {
  std::lock_guard wlock(write_mu_);
  STRATA_RETURN_IF_ERROR(CheckUsable());
  GcReport report;
  report.horizon = horizon;
  std::vector<std::uint64_t> dropped;
  std::vector<std::string> paths;
  {
    std::shared_lock lock(mu_);
    if (horizon < manifest_.gc_horizon || horizon > manifest_.persisted_lsn)
      return Status::InvalidArgument("gc at " + L(horizon) + ": outside [horizon " + L(manifest_.gc_horizon) +
                                     ", persisted " + L(manifest_.persisted_lsn) + "]");
    std::map<PageId, bool> blocked;
    for (const auto& [id, f] : files_) {
      bool drop = true;
      if (f.entry.kind == format::FileKind::kDelta) {
        if (f.entry.lsn_end > horizon) continue;
        // Each page needs an image in [its newest record here, horizon].
        for (const auto& e : f.reader->index()) {
          auto img = index_.NewestImageAtOrBelow(e.page, horizon);
          if (!img || img->entry.max_end_lsn < e.max_end_lsn) {
            drop = false;
            blocked[e.page] = true;
          }
        }
      } else {
        if (f.entry.lsn_end >= horizon) continue;
        // Each image must have a newer one at or below the horizon.
        for (const auto& e : f.reader->index()) {
          auto img = index_.NewestImageAtOrBelow(e.page, horizon);
          if (img->entry.max_end_lsn <= e.max_end_lsn) {
            drop = false;
            break;
          }
        }
      }
      if (drop) {
        dropped.push_back(id);
        paths.push_back(f.reader->path());
        (f.entry.kind == format::FileKind::kDelta ? report.delta_files_removed : report.image_files_removed) += 1;
      }
    }
    for (const auto& [page, unused] : blocked) report.pages_needing_images.push_back(page);
    if (horizon == manifest_.gc_horizon && dropped.empty()) return report;
  }
  format::Manifest m = manifest_;
  m.sequence += 1;
  m.gc_horizon = horizon;
  std::erase_if(m.files, [&](const format::ManifestFile& f) {
    return std::find(dropped.begin(), dropped.end(), f.file_id) != dropped.end();
  });
  STRATA_RETURN_IF_ERROR(Commit(m));
  {
    std::unique_lock lock(mu_);
    Install(m, {}, dropped);
  }
  // The manifest no longer lists them: unlink. A failure leaves an orphan
  // for the next Open, so it is logged, not returned.
  for (const std::string& path : paths) {
    if (Status s = fs_.Remove(path); !s.ok()) Log(LogLevel::kWarning, "event=gc_unlink_failed " + s.ToString());
  }
  if (!paths.empty()) {
    if (Status s = fs_.SyncDir(opt_.dir); !s.ok()) Log(LogLevel::kWarning, "event=gc_sync_dir_failed " + s.ToString());
  }
  Log(LogLevel::kInfo, "event=gc horizon=" + L(horizon) + " deltas_removed=" + std::to_string(report.delta_files_removed) +
                           " images_removed=" + std::to_string(report.image_files_removed) +
                           " pages_needing_images=" + std::to_string(report.pages_needing_images.size()));
  return report;
}

// ---- small commits and accessors -------------------------------------------------------------

Status PageStoreImpl::SetMaterializedLsn(Lsn lsn) {
  std::lock_guard wlock(write_mu_);
  STRATA_RETURN_IF_ERROR(CheckUsable());
  if (lsn < manifest_.materialized_lsn || lsn > manifest_.persisted_lsn)
    return Status::InvalidArgument("materialized LSN " + L(lsn) + " outside [" + L(manifest_.materialized_lsn) +
                                   ", persisted " + L(manifest_.persisted_lsn) + "]");
  format::Manifest m = manifest_;
  m.sequence += 1;
  m.materialized_lsn = lsn;
  STRATA_RETURN_IF_ERROR(Commit(m));
  std::unique_lock lock(mu_);
  manifest_ = m;
  return Status::Ok();
}

Status PageStoreImpl::SetPinLsn(Lsn lsn) {
  std::lock_guard wlock(write_mu_);
  STRATA_RETURN_IF_ERROR(CheckUsable());
  format::Manifest m = manifest_;
  m.sequence += 1;
  m.pin_lsn = lsn;
  STRATA_RETURN_IF_ERROR(Commit(m));
  std::unique_lock lock(mu_);
  manifest_ = m;
  return Status::Ok();
}

StoreState PageStoreImpl::state() const {
  std::shared_lock lock(mu_);
  StoreState s;
  s.ingested_lsn = ingested_lsn_;
  s.persisted_lsn = manifest_.persisted_lsn;
  s.materialized_lsn = manifest_.materialized_lsn;
  s.gc_horizon = manifest_.gc_horizon;
  s.pin_lsn = manifest_.pin_lsn;
  s.manifest_sequence = manifest_.sequence;
  for (const auto& [id, f] : files_) {
    (f.entry.kind == format::FileKind::kDelta ? s.delta_files : s.image_files) += 1;
    s.disk_bytes += f.entry.size;
  }
  s.memory_records = active_.records() + (frozen_ ? frozen_->records() : 0);
  s.memory_bytes = active_.bytes() + (frozen_ ? frozen_->bytes() : 0);
  std::map<PageId, bool> pages;
  for (const auto& [page, e] : index_.pages()) pages[page] = true;
  for (const auto& [page, r] : active_.pages()) pages[page] = true;
  if (frozen_)
    for (const auto& [page, r] : frozen_->pages()) pages[page] = true;
  s.pages = pages.size();
  return s;
}

std::string PageStoreImpl::directory_snapshot() const {
  std::shared_lock lock(mu_);
  return manifest_.directory;
}

Status PageStoreImpl::VerifyFiles() const {
  std::vector<std::shared_ptr<const LayerReader>> readers;
  {
    std::shared_lock lock(mu_);
    for (const auto& [id, f] : files_) readers.push_back(f.reader);
  }
  for (const auto& r : readers) STRATA_RETURN_IF_ERROR(r->VerifyAll());
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<PageStore>> PageStore::Open(StoreOptions options, OpenReport* report) {
  if (!options.fs || options.dir.empty()) return Status::InvalidArgument("page store: no file system or directory");
  OpenReport local;
  auto store = std::make_unique<PageStoreImpl>(std::move(options));
  STRATA_RETURN_IF_ERROR(store->Recover(report ? report : &local));
  return std::unique_ptr<PageStore>(std::move(store));
}

}  // namespace strata::pageserver
