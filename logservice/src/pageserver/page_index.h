// The in-memory per-page index (design note section 7.2): for every page,
// which listed layer files hold its records or its image, with the LSN
// bounds and sizes from those files' index entries. Rebuilt at Open from
// the files' footers (their indexes); changed only when a manifest commit
// adds or drops a file. About 64 bytes per (page, file); section 7.2 names
// the per-file index + layer map it becomes when that is too much.
// Not thread-safe: the store guards it with its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "format.h"
#include "layer_reader.h"

namespace strata::pageserver {

struct PageFileEntry {
  std::uint64_t file_id = 0;
  format::FileKind kind = format::FileKind::kDelta;
  format::IndexEntry entry;  // this page's entry in that file's index
};

class PageIndex {
 public:
  void AddFile(const LayerReader& file);
  void RemoveFile(const LayerReader& file);

  // Entries of `page`, in the order files were added (empty if none).
  const std::vector<PageFileEntry>* Find(PageId page) const;
  // The newest image of `page` with version <= lsn (nullopt: none).
  std::optional<PageFileEntry> NewestImageAtOrBelow(PageId page, Lsn lsn) const;
  std::optional<PageFileEntry> NewestImage(PageId page) const;

  const std::map<PageId, std::vector<PageFileEntry>>& pages() const { return pages_; }

 private:
  std::map<PageId, std::vector<PageFileEntry>> pages_;
};

}  // namespace strata::pageserver
