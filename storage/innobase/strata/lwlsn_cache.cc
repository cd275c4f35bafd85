// strata::page_service::LastWrittenLsn: see lwlsn_cache.h.
#include "lwlsn_cache.h"

#include <algorithm>

namespace strata::page_service {

void LastWrittenLsn::start(std::uint64_t lsn) {
  std::lock_guard<std::mutex> l(mu_);
  if (started_) return;
  start_lsn_ = lsn;
  started_ = true;
}

bool LastWrittenLsn::started() const {
  std::lock_guard<std::mutex> l(mu_);
  return started_;
}

void LastWrittenLsn::note(std::uint32_t space, std::uint32_t page,
                          std::uint64_t lsn) {
  std::lock_guard<std::mutex> l(mu_);
  if (pages_.size() >= capacity_) pages_.clear();
  auto &entry = pages_[key(space, page)];
  entry = std::max(entry, lsn);
  auto &top = space_max_[space];
  top = std::max(top, lsn);
}

std::uint64_t LastWrittenLsn::lookup(std::uint32_t space,
                                     std::uint32_t page) const {
  std::lock_guard<std::mutex> l(mu_);
  const auto it = pages_.find(key(space, page));
  if (it != pages_.end()) {
    ++counters_.hits;
    return it->second;
  }
  ++counters_.fallbacks;
  const auto sp = space_max_.find(space);
  return std::max(start_lsn_, sp == space_max_.end() ? 0 : sp->second);
}

LastWrittenLsn::Counters LastWrittenLsn::counters() const {
  std::lock_guard<std::mutex> l(mu_);
  return counters_;
}

}  // namespace strata::page_service
