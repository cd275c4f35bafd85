// PageStore: the page server's storage (docs/design/page-server.md, section 7).
//
// What it keeps: per-page records ingested from the log (opaque bytes: the
// InnoDB redo records of one page, parsed and applied elsewhere) and page
// images at chosen LSNs, in immutable layer files (src/pageserver/format.h)
// listed by one manifest, the only commit point. It answers "what is needed
// to build page P at LSN L" (Select) and never builds a page itself.
//
// Frontiers (all LSNs are mini-transaction boundaries given by the caller):
//   ingested_lsn      every record with end_lsn <= it has been Ingest()ed;
//                     records above persisted_lsn live only in memory
//   persisted_lsn     every record with end_lsn <= it is in a delta file the
//                     manifest lists (moved only by Freeze); after a crash
//                     the caller re-ingests from here (the log keeps it)
//   materialized_lsn  set by the image policy's owner, kept in the manifest
//   gc_horizon        history below it is gone: Select(P, L < horizon)
//                     answers by the below-horizon rule (section 7.4)
// Order: gc_horizon <= persisted_lsn <= ingested_lsn,
//        materialized_lsn <= persisted_lsn.
//
// Durability: Freeze, WriteImages, CollectGarbage and the manifest setters
// return OK only once the manifest that lists their result is durable. A
// crash at any point leaves the old or the new manifest, each complete;
// files it does not list are deleted at the next Open. A failed write of a
// layer file leaves the store as it was (retry, e.g. after kNoSpace); a
// failed manifest write leaves the store unable to tell what is on disk: it
// then answers kNeedsRecovery to every mutation until reopened.
//
// Thread-safety: all methods may be called from any thread. Mutations
// (Freeze, WriteImages, CollectGarbage, setters) are serialised among
// themselves; Ingest and Select run concurrently with them (Select reads
// layer files without holding the store's lock; a file GC drops stays
// readable through open handles until the last reader lets go).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/file_system.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::pageserver {

using logservice::Lsn;
using logservice::PageId;
using logservice::Result;
using logservice::Status;

enum class RecordKind : std::uint8_t {
  kDelta = 1,  // redo of one page: counts at L iff end_lsn <= L
  kImage = 2,  // full page image: end_lsn is its version, start_lsn its page LSN (FIL_PAGE_LSN)
};

struct PageRecord {
  PageId page;
  Lsn start_lsn = 0;
  Lsn end_lsn = 0;
  RecordKind kind = RecordKind::kDelta;
  std::string body;
  bool operator==(const PageRecord&) const = default;
};

struct StoreOptions {
  std::shared_ptr<logservice::FileSystem> fs;
  std::string dir;
  // Only when the directory holds no manifest yet: the store starts empty
  // with every frontier at initial_lsn (the seeding LSN, section 7.5).
  Lsn initial_lsn = 0;
  // Open also reads every block of every listed file (slow; for checks).
  bool verify_blocks_at_open = false;
  logservice::LogSink log;  // default: stderr
};

// What Select returns: build the page by applying `records`, in order, to
// `image` (or to a page never written when there is none).
struct ReadPlan {
  enum class Outcome {
    kReady,         // image and/or records below; both empty: no record or image ever touched the page
    kBelowHorizon,  // L < gc_horizon and the page changed after L: no answer (section 7.4)
  };
  Outcome outcome = Outcome::kReady;
  std::optional<PageRecord> image;
  std::vector<PageRecord> records;  // kDelta, end_lsn in (image version, L], application order
  // kBelowHorizon: the request, the horizon and the image that could not serve it.
  Lsn request_lsn = 0;
  Lsn horizon = 0;
  Lsn image_version = 0;
  Lsn image_page_lsn = 0;
  std::string reason;
};

// "Needs image" policy (section 7.3): a page qualifies with at least
// max_records records, or at least max_bytes of record bodies, with
// end_lsn above its newest image's version.
struct ImagePolicy {
  std::uint64_t max_records = 32;
  std::uint64_t max_bytes = 64u << 10;
};
struct ImageNeed {
  PageId page;
  Lsn image_version = 0;  // 0: the page has no image
  std::uint64_t records = 0;
  std::uint64_t bytes = 0;
};

struct GcReport {
  Lsn horizon = 0;
  std::uint64_t delta_files_removed = 0;
  std::uint64_t image_files_removed = 0;
  // Pages holding back a delta file that ends at or below the horizon: each
  // needs an image with version in [its newest record there, horizon].
  std::vector<PageId> pages_needing_images;
};

struct StoreState {
  Lsn ingested_lsn = 0;
  Lsn persisted_lsn = 0;
  Lsn materialized_lsn = 0;
  Lsn gc_horizon = 0;
  Lsn pin_lsn = 0;
  std::uint64_t manifest_sequence = 0;
  std::uint64_t delta_files = 0;
  std::uint64_t image_files = 0;
  std::uint64_t disk_bytes = 0;      // layer files listed by the manifest
  std::uint64_t memory_records = 0;  // ingested, not yet in a delta file
  std::uint64_t memory_bytes = 0;
  std::uint64_t pages = 0;           // pages with any record or image
};

// What Open found and did (also logged).
struct OpenReport {
  bool created = false;
  std::uint64_t orphans_removed = 0;  // files the manifest does not list (a crash's leftovers)
};

class PageStore {
 public:
  virtual ~PageStore() = default;

  // Opens (or creates) the store in options.dir. Reads the manifest, removes
  // layer and temporary files it does not list, checks every listed file's
  // header, footer and index (and, with verify_blocks_at_open, every block),
  // and rebuilds the per-page index. kCorruption names the file and offset of
  // the first damage found; a listed file that is missing is kCorruption too.
  static Result<std::unique_ptr<PageStore>> Open(StoreOptions options, OpenReport* report = nullptr);

  // Adds kDelta records of one or more whole mini-transactions and moves
  // ingested_lsn to `ingested_to`. Each record needs
  //   ingested_lsn <= start_lsn <= end_lsn <= ingested_to, end_lsn > ingested_lsn,
  // a body of at most 1 MiB, and end_lsn not below the previous record's
  // (records of one page are applied in the order given). kInvalidArgument
  // otherwise, with nothing added.
  virtual Status Ingest(std::vector<PageRecord> records, Lsn ingested_to) = 0;

  // Writes every in-memory record into one delta file [persisted_lsn,
  // ingested_lsn) and commits it with persisted_lsn = ingested_lsn (and the
  // tablespace directory snapshot at that LSN, when given). With no records
  // it commits the frontier alone.
  virtual Status Freeze(std::optional<std::string> directory_snapshot = std::nullopt) = 0;

  // Writes one image file of kImage records at `version` (one per page;
  // end_lsn == version, start_lsn = page LSN <= version, a non-empty body)
  // and commits it. Needs gc_horizon <= version <= ingested_lsn; images above
  // persisted_lsn are fine (their records are re-ingested after a crash).
  virtual Status WriteImages(Lsn version, std::vector<PageRecord> images) = 0;

  // What builds `page` at `lsn` (<= ingested_lsn, else kInvalidArgument):
  // the newest image with version <= lsn and every kDelta record with
  // end_lsn in (that version, lsn], from the delta files and memory. Below
  // the horizon (section 7.4): if the page's newest image at or below the
  // horizon is newer than lsn, it is the answer when its page LSN <= lsn,
  // else the outcome is kBelowHorizon with both LSNs. kCorruption if a file
  // read fails its checks (file and offset in the message).
  virtual Result<ReadPlan> Select(PageId page, Lsn lsn) const = 0;

  // Pages the image policy asks an image for (section 7.3).
  virtual Result<std::vector<ImageNeed>> PagesNeedingImages(const ImagePolicy& policy) const = 0;

  // Moves gc_horizon to `horizon` (gc_horizon <= horizon <= persisted_lsn)
  // and, in the same manifest commit, stops listing every delta file that
  // ends at or below it whose pages all have an image in [their newest
  // record in it, horizon], and every image file whose images all have a
  // newer one at or below the horizon. Only then unlinks them. Every answer
  // at L >= horizon is unchanged. Pages still holding files back are
  // reported: make their images at `horizon` and run again.
  virtual Result<GcReport> CollectGarbage(Lsn horizon) = 0;

  // Manifest fields owned by other parts of the page server; each commits.
  virtual Status SetMaterializedLsn(Lsn lsn) = 0;  // monotonic, <= persisted_lsn
  virtual Status SetPinLsn(Lsn lsn) = 0;           // the retention pin last sent to the log nodes

  virtual StoreState state() const = 0;
  virtual std::string directory_snapshot() const = 0;
  // Reads every block of every listed file and cross-checks it with the index.
  virtual Status VerifyFiles() const = 0;
};

}  // namespace strata::pageserver
