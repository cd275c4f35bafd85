// Appends text to a std::string through a raw pointer: the formatters'
// output type.
//
// Why: a record is some 60 small appends, and libstdc++'s
// std::string::push_back and append are out-of-line calls at -O2 (the
// class is an extern template, so GCC does not inline them): they were 40%
// of the sink's CPU per record in strata_audit_append_bench. Here a field
// costs one capacity check and a copy.
//
// Contract: while a TextOut is alive it owns the string: the string's
// size() then includes spare bytes not yet written, so nothing else may
// read or change it until the TextOut is destroyed, which trims it to what
// was written. One TextOut per string at a time; formatters that nest take
// the caller's TextOut. Not thread-safe (one per thread, as the strings).
#pragma once

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace strata_audit {

class TextOut {
 public:
  explicit TextOut(std::string *s) : s_(s), len_(s->size()) { grow(0); }
  ~TextOut() { s_->resize(len_); }
  TextOut(const TextOut &) = delete;
  TextOut &operator=(const TextOut &) = delete;

  // Bytes written so far (including what the string held before).
  size_t size() const { return len_; }

  // Room for n more bytes: write them at the pointer, then commit(n).
  char *reserve(size_t n) {
    if (cap_ - len_ < n) grow(n);
    return p_ + len_;
  }
  void commit(size_t n) { len_ += n; }

  void put(char c) {
    reserve(1)[0] = c;
    ++len_;
  }
  void put(std::string_view v) {
    std::memcpy(reserve(v.size()), v.data(), v.size());
    len_ += v.size();
  }

 private:
  static constexpr size_t kMinSpare = 512;

  // The string's size covers what is written plus the spare bytes asked
  // for: resize() zero-fills the bytes it adds, so the spare is kept small
  // (never the whole capacity, which one huge statement could have made
  // megabytes); std::string grows its capacity geometrically underneath.
  void grow(size_t n) {
    s_->resize(len_ + n + kMinSpare);
    p_ = s_->data();
    cap_ = s_->size();
  }

  std::string *s_;
  char *p_;
  size_t len_;
  size_t cap_;
};

}  // namespace strata_audit
