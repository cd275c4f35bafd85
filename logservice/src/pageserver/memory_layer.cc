// The in-memory layer; see memory_layer.h.
#include "memory_layer.h"

namespace strata::pageserver {

void MemoryLayer::Add(PageRecord r) {
  records_ += 1;
  bytes_ += r.body.size();
  pages_[r.page].push_back(std::move(r));
}

void MemoryLayer::PrependOlder(const MemoryLayer& older) {
  for (const auto& [page, recs] : older.pages_) {
    auto& mine = pages_[page];
    mine.insert(mine.begin(), recs.begin(), recs.end());
  }
  records_ += older.records_;
  bytes_ += older.bytes_;
}

void MemoryLayer::Collect(PageId page, std::optional<Lsn> after, Lsn upto, std::vector<PageRecord>* out) const {
  auto it = pages_.find(page);
  if (it == pages_.end()) return;
  for (const PageRecord& r : it->second) {
    if (r.end_lsn > upto) break;  // non-decreasing end_lsn
    if (!after || r.end_lsn > *after) out->push_back(r);
  }
}

std::vector<const PageRecord*> MemoryLayer::InFileOrder() const {
  std::vector<const PageRecord*> out;
  out.reserve(records_);
  for (const auto& [page, recs] : pages_)
    for (const PageRecord& r : recs) out.push_back(&r);
  return out;
}

}  // namespace strata::pageserver
