#include "record_ring.h"

namespace strata_audit {

RecordRing::RecordRing(size_t capacity)
    : cap_(std::clamp<size_t>(capacity, 1, size_t{1} << 32)) {
  size_t slots = kMinSlots;
  while (slots < cap_ / 128 && slots < kMaxSlots) slots <<= 1;
  slot_mask_ = slots - 1;
  data_.reset(new char[cap_]);
  slots_.reset(new Slot[slots]);
  reset(1);
}

void RecordRing::reset(uint64_t first_id) {
  for (size_t i = 0; i <= slot_mask_; ++i) {
    slots_[i].seq.store(0, std::memory_order_relaxed);
    slots_[i].len = 0;
    slots_[i].ext = nullptr;
  }
  tail_id_.store(first_id);
  tail_pos_.store(0);
  head_.store(pack(first_id, 0));
}

void RecordRing::close() { head_.fetch_or(kClosedBit); }

uint64_t RecordRing::next_id() const {
  for (;;) {
    const uint64_t h = head_.load();
    uint64_t id, pos;
    if (unpack(h & ~kClosedBit, tail_id_.load(), tail_pos_.load(), &id, &pos))
      return id;
  }
}

uint64_t RecordRing::used() const {
  for (;;) {
    const uint64_t h = head_.load();
    const uint64_t tpos = tail_pos_.load();
    uint64_t id, pos;
    if (unpack(h & ~kClosedBit, tail_id_.load(), tpos, &id, &pos))
      return pos - tpos;
  }
}

bool RecordRing::room_for(size_t len) const {
  const uint64_t h = head_.load();
  if (h & kClosedBit) return true;
  const uint64_t tid = tail_id_.load();
  const uint64_t tpos = tail_pos_.load();
  uint64_t id, pos;
  if (!unpack(h, tid, tpos, &id, &pos)) return true;  // moved: look again
  if (id - tid >= slot_mask_ + 1) return false;
  return len > cap_ || pos + len - tpos <= cap_;
}

RecordRing::Batch RecordRing::peek() const {
  Batch b;
  uint64_t id = tail_id_.load(std::memory_order_relaxed);  // ours
  const uint64_t pos = tail_pos_.load(std::memory_order_relaxed);
  size_t bytes = 0;
  for (uint64_t n = 0; n <= slot_mask_; ++n, ++id) {
    const Slot &s = slots_[id & slot_mask_];
    if (s.seq.load(std::memory_order_acquire) != id + 1) break;
    if (s.ext != nullptr) {
      if (b.records > 0) break;  // first the records before it
      b.records = 1;
      b.by_reference = true;
      b.a = std::string_view(s.ext, s.len);
      return b;
    }
    bytes += s.len;
    ++b.records;
  }
  if (bytes == 0) return b;
  const size_t at = static_cast<size_t>(pos % cap_);
  const size_t first = std::min(bytes, cap_ - at);
  b.a = std::string_view(data_.get() + at, first);
  b.b = std::string_view(data_.get(), bytes - first);
  return b;
}

void RecordRing::consume(const Batch &b) {
  if (b.records == 0) return;
  if (!b.by_reference)
    tail_pos_.store(tail_pos_.load(std::memory_order_relaxed) + b.a.size() +
                    b.b.size());
  tail_id_.store(tail_id_.load(std::memory_order_relaxed) + b.records);
}

}  // namespace strata_audit
