// strata::page_service::LastWrittenLsn: how far a page server must have
// ingested before it can answer for a page the compute no longer holds
// (docs/design/page-server.md, section 9; Neon's "last written LSN").
//
// A page not in the buffer pool was last changed no later than when it was
// evicted, and its changes' redo was durable before it was written out. So
// asking the page server for it with not_modified_since = the page's newest
// LSN at eviction is exact; any larger value is still correct, only makes
// the page server wait for more of the log. The cache keeps:
//   - the exact value per evicted page, up to `capacity` entries (when full
//     it is emptied: every dropped entry is covered by the next level);
//   - per tablespace, the largest value it ever recorded;
//   - the LSN at which the cache started (set once recovery is over): a
//     page of a tablespace with no eviction since was last changed before.
// lookup() answers with the first level that knows the page's space: the
// entry, else the larger of the space's maximum and the start LSN.
//
// Thread-safe (one mutex: note() runs at each eviction, lookup() before each
// page server call, both far cheaper than the call itself).
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace strata::page_service {

class LastWrittenLsn {
 public:
  explicit LastWrittenLsn(std::size_t capacity) : capacity_(capacity) {}

  /** Sets the start LSN (idempotent: the first call wins). */
  void start(std::uint64_t lsn);
  bool started() const;

  void note(std::uint32_t space, std::uint32_t page, std::uint64_t lsn);
  std::uint64_t lookup(std::uint32_t space, std::uint32_t page) const;

  struct Counters {
    std::uint64_t hits = 0;       // answered by a page's own entry
    std::uint64_t fallbacks = 0;  // answered by a space maximum or the start
  };
  Counters counters() const;

 private:
  static std::uint64_t key(std::uint32_t space, std::uint32_t page) {
    return (std::uint64_t{space} << 32) | page;
  }

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::uint64_t start_lsn_ = 0;
  bool started_ = false;
  std::unordered_map<std::uint64_t, std::uint64_t> pages_;
  std::unordered_map<std::uint32_t, std::uint64_t> space_max_;
  mutable Counters counters_;
};

}  // namespace strata::page_service
