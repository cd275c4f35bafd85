// Little-endian fixed-width encoding for the on-disk formats. Explicit byte
// order (not memcpy of structs) so files are portable and padding-free.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace strata::logservice::storage {

inline void PutFixed32(char* dst, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void PutFixed64(char* dst, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline std::uint32_t GetFixed32(const char* src) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<std::uint32_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  return v;
}
inline std::uint64_t GetFixed64(const char* src) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(src[i])) << (8 * i);
  return v;
}

}  // namespace strata::logservice::storage
