// Little-endian loads and stores: the one byte-order helper of the project.
// rdma/'s frame headers and handshake payloads, the log service's message
// headers and codecs (ByteWriter / ByteReader), its on-disk formats (segment
// and record headers, checkpoints, node metadata) and the page server's
// layer files all write their integers through these. logservice/ gets them
// with strata_rdma's include directory, as it gets Crc32c.
//
// Explicit byte order (not memcpy of structs) keeps every format portable and
// padding-free; the compiler turns each loop into one load or store. Header
// only and standard library only, so code built inside the server tree (the
// page-apply helper's pipe protocol) can include it too.
//
// `p` may be any byte buffer (char, unsigned char, std::byte); the caller
// guarantees that n bytes are there. n is 1 to 8.
#pragma once

#include <cstdint>
#include <string>

namespace strata::rdma {

// The n-byte little-endian number at p.
inline std::uint64_t LoadLe(const void* p, int n) {
  const auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= std::uint64_t{b[i]} << (8 * i);
  return v;
}

// Writes the low n bytes of v at p, least significant first.
inline void StoreLe(void* p, std::uint64_t v, int n) {
  auto* b = static_cast<unsigned char*>(p);
  for (int i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(v >> (8 * i));
}

// Appends the low n bytes of v to out, least significant first.
inline void AppendLe(std::string* out, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

// The fixed-width forms.
inline std::uint16_t GetFixed16(const void* p) { return static_cast<std::uint16_t>(LoadLe(p, 2)); }
inline std::uint32_t GetFixed32(const void* p) { return static_cast<std::uint32_t>(LoadLe(p, 4)); }
inline std::uint64_t GetFixed64(const void* p) { return LoadLe(p, 8); }
inline void PutFixed16(void* p, std::uint16_t v) { StoreLe(p, v, 2); }
inline void PutFixed32(void* p, std::uint32_t v) { StoreLe(p, v, 4); }
inline void PutFixed64(void* p, std::uint64_t v) { StoreLe(p, v, 8); }

}  // namespace strata::rdma
