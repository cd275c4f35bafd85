// LogIndex: see log_index.h for the rules and invariants.
#include "log_index.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace strata::logservice::storage {

namespace {
std::string Range(Lsn a, Lsn b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + ")"; }
}  // namespace

Status LogIndex::PlanAppend(Lsn start, Lsn end, Epoch epoch, std::vector<std::pair<Lsn, Lsn>>* missing) const {
  missing->clear();
  if (end <= start) return Status::InvalidArgument("empty range " + Range(start, end));
  for (auto f = fences_.begin(); f != fences_.end() && f->first < end; ++f) {
    if (epoch < f->second.epoch)
      return Status::StaleEpoch("range " + Range(start, end) + " of epoch " + std::to_string(epoch) +
                                " reaches LSN " + std::to_string(f->first) + ", fenced to epoch " +
                                std::to_string(f->second.epoch) + " by TruncateAfter");
  }
  const Lsn from = std::max(start, base_);
  if (from >= end) return Status::Ok();  // all released already

  // First extent ending after `from` (ends are ordered like starts).
  auto it = extents_.upper_bound(from);
  if (it != extents_.begin() && std::prev(it)->second.end > from) --it;
  if (it != extents_.begin()) {
    const Extent& before = std::prev(it)->second;
    if (before.epoch > epoch)
      return Status::StaleEpoch("range " + Range(start, end) + " of epoch " + std::to_string(epoch) +
                                " follows " + Range(before.start, before.end) + " of newer epoch " +
                                std::to_string(before.epoch));
  }
  Lsn cursor = from;
  for (; it != extents_.end() && it->second.start < end; ++it) {
    const Extent& e = it->second;
    if (e.epoch != epoch) {
      std::string what = "range " + Range(start, end) + " of epoch " + std::to_string(epoch) + " overlaps " +
                         Range(e.start, e.end) + " of epoch " + std::to_string(e.epoch);
      if (epoch < e.epoch) return Status::StaleEpoch(what);
      return Status::Conflict(what + ": TruncateAfter must remove the older suffix first");
    }
    if (e.start > cursor) missing->emplace_back(cursor, e.start);
    cursor = std::max(cursor, e.end);
  }
  if (it != extents_.end() && it->second.epoch < epoch)
    return Status::Conflict("range " + Range(start, end) + " of epoch " + std::to_string(epoch) + " precedes " +
                            Range(it->second.start, it->second.end) + " of older epoch " +
                            std::to_string(it->second.epoch) + ": TruncateAfter must remove it first");
  if (cursor < end) missing->emplace_back(cursor, end);
  return Status::Ok();
}

void LogIndex::Insert(const Extent& extent) {
  extents_[extent.start] = extent;
  AddRef(extent.where.segment);
  highest_ = std::max(highest_, extent.end);
  max_epoch_ = std::max(max_epoch_, extent.epoch);
  Advance();
}

Status LogIndex::CheckTruncate(Lsn lsn, Epoch epoch) const {
  if (lsn < base_)
    return Status::InvalidArgument("TruncateAfter(" + std::to_string(lsn) + ") is below the released LSN " +
                                   std::to_string(base_));
  for (const auto& [at, fence] : fences_) {
    if (epoch < fence.epoch)
      return Status::StaleEpoch("TruncateAfter epoch " + std::to_string(epoch) + " is below the fence epoch " +
                                std::to_string(fence.epoch) + " at LSN " + std::to_string(at));
  }
  auto kept = extents_.lower_bound(lsn);
  if (kept != extents_.begin() && std::prev(kept)->second.epoch > epoch)
    return Status::InvalidArgument("TruncateAfter epoch " + std::to_string(epoch) + " is below epoch " +
                                   std::to_string(std::prev(kept)->second.epoch) + " of data kept below LSN " +
                                   std::to_string(lsn));
  return Status::Ok();
}

void LogIndex::TruncateAfter(Lsn lsn, Epoch epoch, std::uint64_t segment) {
  for (auto it = extents_.lower_bound(lsn); it != extents_.end();) {
    DropRef(it->second.where.segment);
    it = extents_.erase(it);
  }
  if (!extents_.empty()) {
    Extent& last = std::prev(extents_.end())->second;
    last.end = std::min(last.end, lsn);
  }
  // Fences at or above lsn are subsumed: this one starts lower with an epoch
  // at least as high (CheckTruncate).
  for (auto it = fences_.lower_bound(lsn); it != fences_.end();) {
    DropRef(it->second.segment);
    it = fences_.erase(it);
  }
  fences_[lsn] = Fence{epoch, segment};
  AddRef(segment);
  max_epoch_ = std::max(max_epoch_, epoch);
  complete_ = std::min(complete_, lsn);
  durable_ = std::min(durable_, lsn);
  highest_ = extents_.empty() ? base_ : std::max(base_, std::prev(extents_.end())->second.end);
  Advance();
}

Status LogIndex::CheckRelease(Lsn lsn) const {
  if (lsn > complete_)
    return Status::InvalidArgument("ReleaseBelow(" + std::to_string(lsn) + ") is beyond the complete LSN " +
                                   std::to_string(complete_));
  return Status::Ok();
}

void LogIndex::Release(Lsn lsn) {
  if (lsn <= base_) return;
  while (!extents_.empty() && extents_.begin()->second.end <= lsn) {
    DropRef(extents_.begin()->second.where.segment);
    extents_.erase(extents_.begin());
  }
  if (!extents_.empty() && extents_.begin()->second.start < lsn) {
    Extent cut = extents_.begin()->second;
    extents_.erase(extents_.begin());
    cut.start = lsn;
    extents_[lsn] = cut;
  }
  while (!fences_.empty() && fences_.begin()->first <= lsn) {
    DropRef(fences_.begin()->second.segment);
    fences_.erase(fences_.begin());
  }
  base_ = lsn;
  complete_ = std::max(complete_, lsn);
  durable_ = std::max(durable_, lsn);
  highest_ = std::max(highest_, lsn);
  Advance();
}

void LogIndex::OnSynced(std::uint64_t sequence) {
  synced_ = std::max(synced_, sequence);
  Advance();
}

void LogIndex::Advance() {
  for (auto it = extents_.find(complete_); it != extents_.end(); it = extents_.find(complete_))
    complete_ = it->second.end;
  for (auto it = extents_.find(durable_); it != extents_.end() && it->second.sequence <= synced_;
       it = extents_.find(durable_))
    durable_ = it->second.end;
}

std::vector<Extent> LogIndex::Covering(Lsn from, Lsn limit, std::size_t max_bytes) const {
  std::vector<Extent> out;
  auto it = extents_.upper_bound(from);
  if (it == extents_.begin()) return out;
  --it;
  Lsn cursor = from;
  std::size_t bytes = 0;
  for (; it != extents_.end() && cursor < limit && bytes < max_bytes; ++it) {
    const Extent& e = it->second;
    if (e.start > cursor || e.end <= cursor) break;  // a gap (or `from` not covered)
    out.push_back(e);
    bytes += std::min(e.end, limit) - cursor;
    cursor = e.end;
  }
  return out;
}

bool LogIndex::SegmentInUse(std::uint64_t segment) const {
  auto it = refs_.find(segment);
  return it != refs_.end() && it->second > 0;
}

void LogIndex::AddRef(std::uint64_t segment) { ++refs_[segment]; }

void LogIndex::DropRef(std::uint64_t segment) {
  auto it = refs_.find(segment);
  if (it != refs_.end() && --it->second == 0) refs_.erase(it);
}

std::string LogIndex::CheckInvariants() const {
  if (!(base_ <= durable_ && durable_ <= complete_ && complete_ <= highest_))
    return "frontiers out of order: base " + std::to_string(base_) + " durable " + std::to_string(durable_) +
           " complete " + std::to_string(complete_) + " highest " + std::to_string(highest_);
  Lsn prev_end = base_;
  Epoch prev_epoch = 0;
  std::map<std::uint64_t, std::uint64_t> refs;
  Lsn run = base_;
  for (const auto& [start, e] : extents_) {
    if (start != e.start || e.start >= e.end) return "malformed extent at " + std::to_string(start);
    if (e.start < prev_end) return "overlap or below base at " + std::to_string(start);
    if (e.epoch < prev_epoch) return "epoch decreases at " + std::to_string(start);
    if (e.end > highest_) return "extent beyond highest at " + std::to_string(start);
    for (const auto& [at, f] : fences_)
      if (e.end > at && e.epoch < f.epoch) return "extent below fence epoch at " + std::to_string(start);
    if (e.start == run) run = e.end;
    prev_end = e.end;
    prev_epoch = e.epoch;
    ++refs[e.where.segment];
  }
  if (run != complete_) return "complete is " + std::to_string(complete_) + ", run ends at " + std::to_string(run);
  for (const auto& [at, f] : fences_) ++refs[f.segment];
  if (refs != refs_) return "segment reference counts are off";
  return "";
}

}  // namespace strata::logservice::storage
