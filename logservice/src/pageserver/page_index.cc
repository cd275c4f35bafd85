// Per-page index maintenance; see page_index.h.
#include "page_index.h"

#include <algorithm>

namespace strata::pageserver {

void PageIndex::AddFile(const LayerReader& file) {
  for (const format::IndexEntry& e : file.index())
    pages_[e.page].push_back(PageFileEntry{file.header().file_id, file.header().kind, e});
}

void PageIndex::RemoveFile(const LayerReader& file) {
  const std::uint64_t id = file.header().file_id;
  for (const format::IndexEntry& e : file.index()) {
    auto it = pages_.find(e.page);
    if (it == pages_.end()) continue;
    auto& v = it->second;
    v.erase(std::remove_if(v.begin(), v.end(), [id](const PageFileEntry& p) { return p.file_id == id; }), v.end());
    if (v.empty()) pages_.erase(it);
  }
}

const std::vector<PageFileEntry>* PageIndex::Find(PageId page) const {
  auto it = pages_.find(page);
  return it == pages_.end() ? nullptr : &it->second;
}

std::optional<PageFileEntry> PageIndex::NewestImageAtOrBelow(PageId page, Lsn lsn) const {
  std::optional<PageFileEntry> best;
  if (const auto* v = Find(page)) {
    for (const PageFileEntry& e : *v) {
      if (e.kind != format::FileKind::kImage || e.entry.max_end_lsn > lsn) continue;
      if (!best || e.entry.max_end_lsn > best->entry.max_end_lsn) best = e;
    }
  }
  return best;
}

std::optional<PageFileEntry> PageIndex::NewestImage(PageId page) const {
  return NewestImageAtOrBelow(page, ~Lsn{0});
}

}  // namespace strata::pageserver
