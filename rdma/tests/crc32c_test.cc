// CRC32C (strata/rdma/crc32c.h), the checksum of rdma/ frames and of every
// log service and page server format: each path against known vectors (RFC
// 3720 appendix B.4 and the "123456789" check value), the paths against each
// other on random data, and chaining.
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "strata/rdma/crc32c.h"
#include "test_support.h"

namespace strata::rdma::test {
namespace {

constexpr Crc32cPath kAllPaths[] = {Crc32cPath::kTable, Crc32cPath::kCrc32Instruction, Crc32cPath::kFolding};

struct Vector {
  std::string data;
  uint32_t crc;
};

std::vector<Vector> KnownVectors() {
  std::string ascending(32, '\0'), descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  // RFC 3720 B.4: an iSCSI SCSI Read (10) command PDU.
  const unsigned char iscsi[48] = {0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                   0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
                                   0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0};
  return {
      {"", 0x00000000u},
      {"123456789", 0xE3069283u},
      {std::string(32, '\0'), 0x8A9136AAu},
      {std::string(32, '\xff'), 0x62A8AB43u},
      {ascending, 0x46DD794Eu},
      {descending, 0x113FDB5Cu},
      {std::string(reinterpret_cast<const char*>(iscsi), sizeof iscsi), 0xD9963A56u},
  };
}

TEST(Crc32c, EveryPathMatchesKnownVectors) {
  for (const auto& v : KnownVectors()) {
    EXPECT_EQ(Crc32c(v.data), v.crc) << "length " << v.data.size();
    for (auto path : kAllPaths)
      EXPECT_EQ(Crc32cImplementation(path, 0, v.data.data(), v.data.size()), v.crc)
          << "length " << v.data.size() << " path " << static_cast<int>(path);
  }
  const char* text = "123456789";
  EXPECT_EQ(Crc32c(Crc32c(0, text, 4), text + 4, 5), 0xE3069283u);
}

// The folding (VPCLMULQDQ) and crc32-instruction paths must compute exactly
// the table's function: every length around the 256-byte folding threshold
// and the 4 KiB lane size, random larger lengths, unaligned starts, chained
// calls with arbitrary incoming states.
TEST(Crc32c, ImplementationsAgree) {
  std::printf("crc32c paths on this CPU: crc32 instruction %s, AVX-512 folding %s\n",
              Crc32cPathAvailable(Crc32cPath::kCrc32Instruction) ? "yes" : "no (table)",
              Crc32cPathAvailable(Crc32cPath::kFolding) ? "yes" : "no (fallback)");
  const char* env = std::getenv("STRATA_TEST_SEED");
  const uint64_t seed = env ? std::strtoull(env, nullptr, 10) : 20261123;
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> buf(3 * 65536 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  auto check = [&](size_t offset, size_t n, uint32_t init) {
    const uint32_t want = Crc32cImplementation(Crc32cPath::kTable, init, buf.data() + offset, n);
    ASSERT_EQ(Crc32cImplementation(Crc32cPath::kCrc32Instruction, init, buf.data() + offset, n), want)
        << "n=" << n << " offset=" << offset << " seed=" << seed;
    ASSERT_EQ(Crc32cImplementation(Crc32cPath::kFolding, init, buf.data() + offset, n), want)
        << "n=" << n << " offset=" << offset << " seed=" << seed;
    ASSERT_EQ(Crc32c(init, buf.data() + offset, n), want) << "n=" << n << " seed=" << seed;
  };
  for (size_t n = 0; n <= 1100; ++n) check(n % 61, n, static_cast<uint32_t>(rng()));
  for (size_t n : {4095u, 4096u, 4097u, 12287u, 12288u, 12289u, 65535u, 65536u, 65537u, 3u * 65536u})
    check(rng() % 64, n, 0);
  for (int i = 0; i < 300; ++i) check(rng() % 64, rng() % (2 * 65536), static_cast<uint32_t>(rng()));
  // Chaining across the threshold equals one call.
  const uint32_t whole = Crc32c(0, buf.data(), 70000);
  EXPECT_EQ(Crc32c(Crc32c(0, buf.data(), 300), buf.data() + 300, 69700), whole);
  EXPECT_EQ(Crc32c(Crc32c(0, buf.data(), 100), buf.data() + 100, 69900), whole);
}

}  // namespace
}  // namespace strata::rdma::test
