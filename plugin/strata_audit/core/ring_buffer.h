// A bounded byte queue of whole records between sessions and the writer.
//
// Not synchronised: its owner (AuditLog) guards it with one mutex. The
// writer peeks at everything pending (at most two spans, when it wraps),
// writes it outside the lock, then consumes it; producers keep appending
// into the free part meanwhile. push() is all-or-nothing, so the bytes
// between head and tail are always a sequence of complete records.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

namespace strata_audit {

class RingBuffer {
 public:
  explicit RingBuffer(size_t capacity) : buf_(capacity) {}

  size_t capacity() const { return buf_.size(); }
  size_t used() const { return used_; }
  size_t free_space() const { return buf_.size() - used_; }
  bool empty() const { return used_ == 0; }

  // Appends all of rec, or nothing (returns false) if it does not fit.
  bool push(std::string_view rec);

  // The pending bytes, oldest first: first then second (second may be empty).
  void peek(std::string_view *first, std::string_view *second) const;

  // Drops the n oldest bytes (n <= used()).
  void consume(size_t n);

 private:
  std::vector<char> buf_;
  size_t head_ = 0;  // oldest pending byte
  size_t used_ = 0;
};

}  // namespace strata_audit
