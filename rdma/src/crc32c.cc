// CRC32C: hardware path (SSE4.2) and a byte-wise table fallback.
#include "crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace strata::rdma {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // reflected Castagnoli polynomial

constexpr std::array<uint32_t, 256> MakeTable() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
    t[i] = c;
  }
  return t;
}
constexpr auto kTable = MakeTable();

uint32_t SoftwareCrc(uint32_t crc, const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
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
// x^(8*n) mod P.
constexpr uint32_t ShiftConstant(uint64_t n) {
  uint32_t x2k = 1u << 30;  // x^1, then x^2, x^4, ...
  uint32_t result = 1u << 31;  // x^0
  for (uint64_t bits = n * 8; bits != 0; bits >>= 1) {
    if (bits & 1) result = MulModP(x2k, result);
    x2k = MulModP(x2k, x2k);
  }
  return result;
}

#if defined(__x86_64__)
// Three interleaved lanes hide the crc32 instruction's 3-cycle latency.
constexpr size_t kLane = 4096;
constexpr uint32_t kShiftLane = ShiftConstant(kLane);
constexpr uint32_t kShiftTwoLanes = ShiftConstant(2 * kLane);

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
#endif

}  // namespace

uint32_t Crc32c(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
#if defined(__x86_64__)
  if (kHaveHardware) return ~HardwareCrc(crc, p, size);
#endif
  return ~SoftwareCrc(crc, p, size);
}

}  // namespace strata::rdma
