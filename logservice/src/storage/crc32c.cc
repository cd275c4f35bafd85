// CRC32C, portable and SSE4.2. See crc32c.h.
//
// Portable: "slicing by 8". table[0] is the classic byte-at-a-time table;
// table[k][b] is the CRC contribution of byte b followed by k zero bytes, so
// eight table lookups fold eight input bytes at once. Tables are built at
// compile time. Hardware: the crc32 instruction computes exactly this CRC (the
// Castagnoli polynomial is why SSE4.2 has it), 8 bytes per instruction.
#include "crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define STRATA_CRC32C_X86 1
#endif

namespace strata::logservice::storage {
namespace {

constexpr std::uint32_t kReflectedCastagnoli = 0x82F63B78u;

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (std::uint32_t b = 0; b < 256; ++b) {
    std::uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kReflectedCastagnoli : 0u);
    t[0][b] = crc;
  }
  for (std::size_t k = 1; k < 8; ++k)
    for (std::uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xffu];
  return t;
}

constexpr Tables kTables = MakeTables();
static_assert(kTables[0][1] == 0xF26B8303u, "first entry of the standard CRC32C table");

std::uint64_t LoadLittleEndian64(const unsigned char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
  return v;
}

}  // namespace

std::uint32_t Crc32cExtendPortable(std::uint32_t crc, const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = ~crc;
  while (n >= 8) {
    std::uint64_t v = LoadLittleEndian64(p) ^ c;
    c = kTables[7][v & 0xff] ^ kTables[6][(v >> 8) & 0xff] ^ kTables[5][(v >> 16) & 0xff] ^
        kTables[4][(v >> 24) & 0xff] ^ kTables[3][(v >> 32) & 0xff] ^ kTables[2][(v >> 40) & 0xff] ^
        kTables[1][(v >> 48) & 0xff] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  while (n-- > 0) c = kTables[0][(c ^ *p++) & 0xffu] ^ (c >> 8);
  return ~c;
}

#ifdef STRATA_CRC32C_X86
__attribute__((target("sse4.2"))) std::uint32_t Crc32cExtendHardware(std::uint32_t crc, const void* data,
                                                                     std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t c = ~crc;
  while (n >= 8) {
    std::uint64_t v;
    std::memcpy(&v, p, sizeof v);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<std::uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

bool Crc32cHardwareAvailable() {
  static const bool available = __builtin_cpu_supports("sse4.2");
  return available;
}
#else
std::uint32_t Crc32cExtendHardware(std::uint32_t crc, const void* data, std::size_t n) {
  return Crc32cExtendPortable(crc, data, n);
}
bool Crc32cHardwareAvailable() { return false; }
#endif

std::uint32_t Crc32cExtend(std::uint32_t crc, const void* data, std::size_t n) {
  static const bool hardware = Crc32cHardwareAvailable();
  return hardware ? Crc32cExtendHardware(crc, data, n) : Crc32cExtendPortable(crc, data, n);
}

}  // namespace strata::logservice::storage
