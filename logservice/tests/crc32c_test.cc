// CRC32C against known vectors (RFC 3720 appendix B.4 and the "123456789"
// check value), for both implementations, plus incremental use.
#include <string>

#include "crc32c.h"
#include "test_support.h"

namespace strata::logservice::storage {
namespace {

struct Vector {
  std::string data;
  std::uint32_t crc;
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

TEST(Crc32c, PortableMatchesKnownVectors) {
  for (const auto& v : KnownVectors())
    EXPECT_EQ(Crc32cExtendPortable(0, v.data.data(), v.data.size()), v.crc) << "length " << v.data.size();
}

TEST(Crc32c, HardwareMatchesKnownVectors) {
  if (!Crc32cHardwareAvailable()) GTEST_SKIP() << "CPU has no SSE4.2 crc32 instruction";
  for (const auto& v : KnownVectors())
    EXPECT_EQ(Crc32cExtendHardware(0, v.data.data(), v.data.size()), v.crc) << "length " << v.data.size();
}

TEST(Crc32c, ImplementationsAgreeOnRandomInputAndSplits) {
  std::string data = testing::RandomBytes(testing::TestSeed(1), 10000);
  for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 65u, 4096u, 10000u}) {
    std::uint32_t whole = Crc32cExtendPortable(0, data.data(), len);
    EXPECT_EQ(Crc32cExtend(0, data.data(), len), whole);
    EXPECT_EQ(Crc32cExtendHardware(0, data.data(), len), whole);
    // Unaligned start and incremental extension give the same answer.
    for (std::size_t split : {std::size_t{0}, len / 3, len}) {
      std::uint32_t part = Crc32cExtend(0, data.data(), split);
      EXPECT_EQ(Crc32cExtend(part, data.data() + split, len - split), whole);
    }
    EXPECT_EQ(Crc32cExtendPortable(0, data.data() + 1, len > 0 ? len - 1 : 0),
              Crc32cExtendHardware(0, data.data() + 1, len > 0 ? len - 1 : 0));
  }
}

}  // namespace
}  // namespace strata::logservice::storage
