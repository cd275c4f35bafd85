// CRC32C: three paths computing the same function, chosen once per process:
//   - AVX-512 + VPCLMULQDQ folding for buffers >= 256 bytes (about 4x the
//     crc32-instruction path on a 64 KiB frame; it is what keeps the frame
//     checksum off the critical path of large messages),
//   - the SSE4.2 crc32 instruction in three interleaved lanes,
//   - a slicing-by-8 table (any CPU; also the reference in tests):
//     table[0] is the classic byte-at-a-time table, table[k][b] the CRC
//     contribution of byte b followed by k zero bytes, so eight lookups fold
//     eight input bytes at once (several times the byte-wise loop, which
//     matters on CPUs without a crc32 instruction).
//
// Folding (carry-less multiplication), in the reflected bit order CRC32C
// uses: a 128-bit block X at distance D bits before a later block may be
// replaced by X * x^D mod P xor'ed into that block without changing the
// message's remainder mod P. Split X = Xh * x^64 + Xl (Xh = the first eight
// bytes = the low qword), so X * x^D = Xh * x^(D+64) + Xl * x^D, each a
// 64 x 32-bit carry-less product that fits in 128 bits. A reflected pclmul
// returns product * x, hence the constants x^(D+63) and x^(D-1) mod P
// (computed below, not tabulated). Once everything is folded into one
// 128-bit block R sitting right before the unfolded tail, CRC(message) ==
// CRC of (R, tail) started from 0, which the crc32 instruction finishes; the
// incoming CRC state is xor'ed into the first four bytes, which is what a
// CRC's initial value means.
#include "strata/rdma/crc32c.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#include <nmmintrin.h>
#endif

namespace strata::rdma {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // reflected Castagnoli polynomial

using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[0][i] = c;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
  return t;
}
constexpr Tables kTables = MakeTables();
static_assert(kTables[0][1] == 0xF26B8303u, "first entry of the standard CRC32C table");

uint32_t SoftwareCrc(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    if constexpr (std::endian::native == std::endian::big) v = __builtin_bswap64(v);
    v ^= crc;
    crc = kTables[7][v & 0xFF] ^ kTables[6][(v >> 8) & 0xFF] ^ kTables[5][(v >> 16) & 0xFF] ^
          kTables[4][(v >> 24) & 0xFF] ^ kTables[3][(v >> 32) & 0xFF] ^ kTables[2][(v >> 40) & 0xFF] ^
          kTables[1][(v >> 48) & 0xFF] ^ kTables[0][v >> 56];
    p += 8;
    n -= 8;
  }
  for (; n > 0; --n) crc = kTables[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
  return crc;
}

// GF(2) arithmetic on reflected CRC values (bit 31 is x^0), used to join
// CRCs computed in parallel: crc(A||B) = crc(A) * x^(8|B|) xor crc0(B).
constexpr uint32_t MulModP(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31, product = 0;
  for (;;) {
    if (a & m) {
      product ^= b;
      if ((a & (m - 1)) == 0) break;
    }
    m >>= 1;
    b = (b & 1) ? (b >> 1) ^ kPoly : b >> 1;
  }
  return product;
}
// x^bits mod P, reflected (bit 31 is x^0).
constexpr uint32_t XPowModP(uint64_t bits) {
  uint32_t x2k = 1u << 30;     // x^1, then x^2, x^4, ...
  uint32_t result = 1u << 31;  // x^0
  for (; bits != 0; bits >>= 1) {
    if (bits & 1) result = MulModP(x2k, result);
    x2k = MulModP(x2k, x2k);
  }
  return result;
}

#if defined(__x86_64__)
// Three interleaved lanes hide the crc32 instruction's 3-cycle latency.
constexpr size_t kLane = 4096;
constexpr uint32_t kShiftLane = XPowModP(8 * kLane);
constexpr uint32_t kShiftTwoLanes = XPowModP(16 * kLane);

__attribute__((target("sse4.2"))) uint32_t HardwareCrc(uint32_t crc, const uint8_t* p, size_t n) {
  while (n >= 3 * kLane) {
    uint64_t a = crc, b = 0, c = 0;
    for (size_t i = 0; i < kLane; i += 8) {
      uint64_t va, vb, vc;
      std::memcpy(&va, p + i, 8);
      std::memcpy(&vb, p + kLane + i, 8);
      std::memcpy(&vc, p + 2 * kLane + i, 8);
      a = _mm_crc32_u64(a, va);
      b = _mm_crc32_u64(b, vb);
      c = _mm_crc32_u64(c, vc);
    }
    crc = MulModP(kShiftTwoLanes, static_cast<uint32_t>(a)) ^ MulModP(kShiftLane, static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
    p += 3 * kLane;
    n -= 3 * kLane;
  }
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n > 0) {
    c32 = _mm_crc32_u8(c32, *p++);
    --n;
  }
  return c32;
}
const bool kHaveHardware = __builtin_cpu_supports("sse4.2");

// The pair of pclmul constants that folds a 128-bit block forward by
// `bits`: low qword for the block's first 8 bytes, high qword for the rest.
// Reflected 64-bit layout: x^e at bit 63-e, i.e. the 32-bit form << 32.
struct FoldConstants {
  uint64_t first, second;
};
constexpr FoldConstants Fold(uint64_t bits) {
  return {uint64_t{XPowModP(bits + 63)} << 32, uint64_t{XPowModP(bits - 1)} << 32};
}
constexpr FoldConstants kFold2048 = Fold(2048), kFold1536 = Fold(1536), kFold1024 = Fold(1024),
                        kFold512 = Fold(512), kFold384 = Fold(384), kFold256 = Fold(256), kFold128 = Fold(128);

#define STRATA_CRC_AVX512 __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.2")))

STRATA_CRC_AVX512 inline __m512i Broadcast(FoldConstants k) {
  const auto lo = static_cast<long long>(k.first), hi = static_cast<long long>(k.second);
  return _mm512_set_epi64(hi, lo, hi, lo, hi, lo, hi, lo);
}
STRATA_CRC_AVX512 inline __m512i Fold512(__m512i x, __m512i k, __m512i next) {
  // (lo * k.first) ^ (hi * k.second) ^ next, per 128-bit lane.
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11), next,
                                   0x96);
}
STRATA_CRC_AVX512 inline __m128i Fold128(__m128i x, FoldConstants k, __m128i next) {
  const __m128i kk = _mm_set_epi64x(static_cast<long long>(k.second), static_cast<long long>(k.first));
  return _mm_ternarylogic_epi64(_mm_clmulepi64_si128(x, kk, 0x00), _mm_clmulepi64_si128(x, kk, 0x11), next, 0x96);
}

// n >= 256. Returns the CRC state (not inverted), like HardwareCrc.
STRATA_CRC_AVX512 uint32_t FoldingCrc(uint32_t crc, const uint8_t* p, size_t n) {
  __m512i a0 = _mm512_loadu_si512(p), a1 = _mm512_loadu_si512(p + 64), a2 = _mm512_loadu_si512(p + 128),
          a3 = _mm512_loadu_si512(p + 192);
  a0 = _mm512_xor_si512(a0, _mm512_set_epi64(0, 0, 0, 0, 0, 0, 0, static_cast<long long>(crc)));
  p += 256;
  n -= 256;
  const __m512i k2048 = Broadcast(kFold2048);
  while (n >= 256) {
    a0 = Fold512(a0, k2048, _mm512_loadu_si512(p));
    a1 = Fold512(a1, k2048, _mm512_loadu_si512(p + 64));
    a2 = Fold512(a2, k2048, _mm512_loadu_si512(p + 128));
    a3 = Fold512(a3, k2048, _mm512_loadu_si512(p + 192));
    p += 256;
    n -= 256;
  }
  // Four 512-bit accumulators -> one, then its four lanes -> one.
  __m512i acc = Fold512(a0, Broadcast(kFold1536), a3);
  acc = Fold512(a1, Broadcast(kFold1024), acc);
  acc = Fold512(a2, Broadcast(kFold512), acc);
  __m128i r = _mm512_maskz_extracti32x4_epi32(0xF, acc, 3);
  r = Fold128(_mm512_maskz_extracti32x4_epi32(0xF, acc, 0), kFold384, r);
  r = Fold128(_mm512_maskz_extracti32x4_epi32(0xF, acc, 1), kFold256, r);
  r = Fold128(_mm512_maskz_extracti32x4_epi32(0xF, acc, 2), kFold128, r);
  uint64_t c = _mm_crc32_u64(0, static_cast<uint64_t>(_mm_cvtsi128_si64(r)));
  c = _mm_crc32_u64(c, static_cast<uint64_t>(_mm_extract_epi64(r, 1)));
  return HardwareCrc(static_cast<uint32_t>(c), p, n);
}
const bool kHaveFolding = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
                          __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") && kHaveHardware;
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (kHaveFolding && size >= 256) return ~FoldingCrc(crc, p, size);
  if (kHaveHardware) return ~HardwareCrc(crc, p, size);
#endif
  return ~SoftwareCrc(crc, p, size);
}

uint32_t Crc32cImplementation(Crc32cPath path, uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  switch (path) {
    case Crc32cPath::kTable:
      return ~SoftwareCrc(crc, p, size);
#if defined(__x86_64__)
    case Crc32cPath::kCrc32Instruction:
      return kHaveHardware ? ~HardwareCrc(crc, p, size) : ~SoftwareCrc(crc, p, size);
    case Crc32cPath::kFolding:
      if (kHaveFolding && size >= 256) return ~FoldingCrc(crc, p, size);
      return kHaveHardware ? ~HardwareCrc(crc, p, size) : ~SoftwareCrc(crc, p, size);
#else
    default:
      return ~SoftwareCrc(crc, p, size);
#endif
  }
  return ~SoftwareCrc(crc, p, size);
}

bool Crc32cPathAvailable(Crc32cPath path) {
#if defined(__x86_64__)
  if (path == Crc32cPath::kCrc32Instruction) return kHaveHardware;
  if (path == Crc32cPath::kFolding) return kHaveFolding;
#else
  if (path != Crc32cPath::kTable) return false;
#endif
  return true;
}

}  // namespace strata::rdma
