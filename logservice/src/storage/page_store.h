// PageStore (stage 1): page images written by the compute node, versioned by
// LSN, per (space id, page number). GetPage(id, lsn) returns the newest image
// whose LSN is <= lsn: the page as of that LSN.
//
// Storage: the same segment journal as the log (own directory, segment kind
// "page"), one record per image, so durability, group commit, torn-tail
// recovery and the failure model are exactly the LogStore's: PutPage writes
// to the page cache; Sync()/SyncUpTo() make it durable; GetPage serves only
// durable versions. The index of versions lives in memory (rebuilt by Open).
// Stage 1 keeps every version: no compaction yet (see docs).
//
// Threads: all methods are thread-safe; fdatasync runs without the store lock.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "storage/file_system.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice {

struct PageStoreOptions {
  std::uint64_t segment_bytes = 64ull << 20;
  LogSink log = StderrLogSink();
  std::optional<DamagedRecord> cut_damaged_tail;  // as LogStoreOptions::cut_damaged_tail
  // The owner's own record of the last TruncateAfter it asked for (the
  // node: its seal's cut, in node_meta). A truncation is header-only, so a
  // crash that tears the last sector of its write leaves a complete record
  // with a bad CRC, which recovery cannot tell from rot. If the store ends
  // in exactly such a record claiming TruncateAfter(last_truncation), Open
  // writes that truncation again in its place instead of refusing: either
  // way the result is the state it stood for. Any other damage still
  // refuses.
  std::optional<Lsn> last_truncation;
};

struct PageVersion {
  Lsn lsn = 0;
  std::string image;
};

struct PageStoreStats {
  std::uint64_t pages = 0;     // distinct page ids
  std::uint64_t versions = 0;  // stored images
  std::uint64_t fdatasyncs = 0;
};

class PageStore {
 public:
  static Result<std::unique_ptr<PageStore>> Open(std::shared_ptr<FileSystem> fs, std::string dir,
                                                 PageStoreOptions options, RecoveryReport* report = nullptr);
  ~PageStore();
  PageStore(const PageStore&) = delete;
  PageStore& operator=(const PageStore&) = delete;

  // Stores the image of `id` as of `lsn`. A second image for the same
  // (id, lsn) replaces the first. Not durable until SyncUpTo(ticket).
  // Errors: kInvalidArgument (empty or oversize image), kNoSpace (retryable,
  // nothing stored), kNeedsRecovery.
  Result<AppendTicket> PutPage(PageId id, Lsn lsn, std::string_view image);
  Status Sync();
  Status SyncUpTo(AppendTicket ticket);

  // Newest durable image of `id` with version LSN <= lsn; kNotFound if none.
  // The image was checked against its CRC32C (kCorruption if that fails).
  Result<PageVersion> GetPage(PageId id, Lsn lsn) const;

  // Quorum recovery twin of LogStore::TruncateAfter: forget versions with
  // LSN > lsn (an image at lsn reflects redo below lsn, so it stays). Durable
  // and crash-safe when it returns OK.
  Status TruncateAfter(Lsn lsn);

  PageStoreStats stats() const;

 private:
  struct State;
  explicit PageStore(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

}  // namespace strata::logservice
