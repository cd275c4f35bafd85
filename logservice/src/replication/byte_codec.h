// ByteWriter / ByteReader: the little-endian fields every message codec of
// the log service is built from (the replication frames of codec.cc, the
// page service's of pageserver/service/page_codec.cc). Strings carry a u16
// length, byte blocks a u32 length; a reader never reads past its input and
// takes a cap for every length it allocates for.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/rdma/little_endian.h"

namespace strata::logservice::repl {

class ByteWriter {
 public:
  void U8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void U16(std::uint16_t v) { Raw(v, 2); }
  void U32(std::uint32_t v) { Raw(v, 4); }
  void U64(std::uint64_t v) { Raw(v, 8); }
  void Str(std::string_view s) { U16(static_cast<std::uint16_t>(s.size())); out_.append(s); }
  void Bytes(std::string_view s) { U32(static_cast<std::uint32_t>(s.size())); out_.append(s); }
  std::string& out() { return out_; }

 private:
  void Raw(std::uint64_t v, int n) { rdma::AppendLe(&out_, v, n); }
  std::string out_;
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view in) : in_(in) {}
  bool U8(std::uint8_t* v) { return Narrow(v, 1); }
  bool U16(std::uint16_t* v) { return Narrow(v, 2); }
  bool U32(std::uint32_t* v) { return Narrow(v, 4); }
  bool U64(std::uint64_t* v) { return Raw(v, 8); }
  bool Str(std::string* s, std::size_t cap) {
    std::uint16_t n;
    return U16(&n) && n <= cap && Take(n, s);
  }
  bool Bytes(std::string* s, std::size_t cap) {
    std::uint32_t n;
    return U32(&n) && n <= cap && Take(n, s);
  }
  bool Bool(bool* b) {
    std::uint8_t v;
    if (!U8(&v) || v > 1) return false;
    *b = v == 1;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }

 private:
  template <typename T>
  bool Narrow(T* v, int n) {
    std::uint64_t x;
    if (!Raw(&x, n)) return false;
    *v = static_cast<T>(x);
    return true;
  }
  bool Raw(std::uint64_t* v, int n) {
    if (in_.size() - pos_ < static_cast<std::size_t>(n)) return false;
    *v = rdma::LoadLe(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool Take(std::size_t n, std::string* s) {
    if (in_.size() - pos_ < n) return false;
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

}  // namespace strata::logservice::repl
