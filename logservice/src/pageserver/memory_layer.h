// The in-memory layer: records ingested but not yet frozen into a delta file
// (design note section 7.1). Per page, records in ingest order, which is
// the order they apply in and non-decreasing in end_lsn; iterating the map
// gives exactly the order a delta file needs. Immutable once frozen (the
// store then shares it with readers until its delta file is committed).
// Not thread-safe: the store guards it with its lock.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "pageserver/store.h"

namespace strata::pageserver {

class MemoryLayer {
 public:
  void Add(PageRecord r);
  // Puts `older` (records ingested before every record here) in front.
  void PrependOlder(const MemoryLayer& older);

  bool empty() const { return records_ == 0; }
  std::uint64_t records() const { return records_; }
  std::uint64_t bytes() const { return bytes_; }
  const std::map<PageId, std::vector<PageRecord>>& pages() const { return pages_; }
  // Appends to *out the records of `page` with end_lsn in (after, upto].
  void Collect(PageId page, std::optional<Lsn> after, Lsn upto, std::vector<PageRecord>* out) const;
  // Records file order, for the delta file writer.
  std::vector<const PageRecord*> InFileOrder() const;

 private:
  std::map<PageId, std::vector<PageRecord>> pages_;
  std::uint64_t records_ = 0;
  std::uint64_t bytes_ = 0;
};

}  // namespace strata::pageserver
