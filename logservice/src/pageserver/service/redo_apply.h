// The redo-apply helper interface (docs/design/page-server.md, section 5):
// what pageserverd asks of whoever understands the redo. Stage 4 implements
// it with InnoDB's own parser and apply code in `mysqld --strata-page-apply`
// children over pipes; until then FakeRedoHelper (fake_redo.h) implements it
// for a toy record format defined by the tests, so that the page server's
// generic code (follow, ingest, store, GetPage, waits, errors) is exercised
// without MySQL.
//
// Contract (both implementations):
//   - Parse is given log bytes from a mini-transaction boundary and returns
//     the per-page records and tablespace events of every COMPLETE group in
//     them, and parsed_to = the end of the last complete group (the bytes
//     after it are given again, longer, next time). Bytes that cannot be
//     parsed are an error naming the LSN, never skipped. Stateless between
//     calls apart from what the caller hands back.
//   - Apply builds a page from a base image (none: a page never written)
//     and records in application order; the result is stamped with its page
//     LSN. An unknown record type, a record that does not fit the page or a
//     base that fails its checks is an error, never a guessed page.
//   - CheckImage verifies an image (checksum, page id) and returns its page
//     LSN: the page server checks every image it stores and serves.
// Thread-safety: Apply and CheckImage may run concurrently; Parse is called
// by the ingest thread only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pageserver/store.h"

namespace strata::pageserver {

// A tablespace event (section 6: MLOG_FILE_* and page-0 size changes).
struct SpaceEvent {
  // kExtend: the size is now size_pages (InnoDB: a file extension, or a
  // write of FSP_SIZE on page 0, which may also shrink it).
  enum class Kind : std::uint8_t { kCreate = 1, kExtend = 2, kDelete = 3, kRename = 4 };
  Kind kind = Kind::kCreate;
  std::uint32_t space = 0;
  std::uint32_t size_pages = 0;  // kCreate, kExtend
  std::string name;              // kCreate; kRename: the new name
  Lsn lsn = 0;                   // end LSN of its group
  std::uint32_t flags = 0;       // kCreate: the format's tablespace flags (InnoDB: FSP_SPACE_FLAGS)
  bool operator==(const SpaceEvent&) const = default;
};

struct ParseResult {
  std::vector<PageRecord> records;  // kDelta, in log order, stamped [group start, group end)
  std::vector<SpaceEvent> events;   // in log order
  Lsn parsed_to = 0;                // end of the last complete group (>= from)
};

class RedoApplyHelper {
 public:
  virtual ~RedoApplyHelper() = default;
  virtual std::uint32_t page_size() const = 0;
  // The size of a stored page of `space` (InnoDB: smaller than page_size()
  // for a compressed tablespace); what a page never written is served as.
  virtual std::uint32_t physical_page_size(std::uint32_t space) const {
    (void)space;
    return page_size();
  }
  // 0: Parse takes bytes from any group boundary. B > 0: the format is in
  // B-byte blocks (InnoDB: 512), and Parse takes whole blocks from the one
  // holding `from`, the partial last block as its full image.
  virtual std::uint32_t parse_block_size() const { return 0; }
  // `bytes` start at `from`, a group boundary (at the start of its block
  // when parse_block_size() > 0).
  virtual Result<ParseResult> Parse(Lsn from, std::string_view bytes) = 0;
  // The page at the last record's end LSN (or the base when there are none).
  virtual Result<std::string> Apply(PageId page, const std::optional<std::string>& base,
                                    const std::vector<PageRecord>& records) = 0;
  // kCorruption with the reason if `image` is not a valid image of `page`.
  virtual Result<Lsn> CheckImage(PageId page, std::string_view image) const = 0;
  // An image a page server is seeded with (PutImages) may describe its
  // tablespace (InnoDB: page 0 holds the flags and the size): the kCreate
  // event that brings the tablespace into the directory, which the helper
  // also learns. nullopt: this image describes none.
  virtual std::optional<SpaceEvent> SeedSpace(PageId page, std::string_view image) {
    (void)page, (void)image;
    return std::nullopt;
  }
};

}  // namespace strata::pageserver
