#include "ring_buffer.h"

#include <cassert>
#include <cstring>

namespace strata_audit {

bool RingBuffer::push(std::string_view rec) {
  if (rec.size() > free_space()) return false;
  const size_t cap = buf_.size();
  size_t tail = head_ + used_;
  if (tail >= cap) tail -= cap;
  const size_t first = std::min(rec.size(), cap - tail);
  std::memcpy(buf_.data() + tail, rec.data(), first);
  if (first < rec.size())
    std::memcpy(buf_.data(), rec.data() + first, rec.size() - first);
  used_ += rec.size();
  return true;
}

void RingBuffer::peek(std::string_view *first, std::string_view *second) const {
  const size_t cap = buf_.size();
  const size_t n1 = std::min(used_, cap - head_);
  *first = std::string_view(buf_.data() + head_, n1);
  *second = std::string_view(buf_.data(), used_ - n1);
}

void RingBuffer::consume(size_t n) {
  assert(n <= used_);
  used_ -= n;
  head_ += n;
  if (head_ >= buf_.size()) head_ -= buf_.size();
  if (used_ == 0) head_ = 0;  // keep writes contiguous when possible
}

}  // namespace strata_audit
