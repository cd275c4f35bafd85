// The helper pipe protocol's frame header (helper/helper_protocol.h): the
// bytes both ends agree on, and the headers no well-behaved peer sends.
#include "helper/helper_protocol.h"

#include <gtest/gtest.h>

#include "strata/rdma/crc32c.h"

namespace strata::pageserver::helper {
namespace {

TEST(HelperProtocol, HeaderRoundTripsInTwentyFourLittleEndianBytes) {
  FrameHeader h;
  h.type = kApply;
  h.request_id = 0x0102030405060708ull;
  h.payload_len = 4096;
  h.crc = 0xA1B2C3D4u;
  const std::string bytes = EncodeHeader(h);
  ASSERT_EQ(bytes.size(), kHeaderSize);
  EXPECT_EQ(bytes.substr(0, 4), "SPAH");
  EXPECT_EQ(static_cast<unsigned char>(bytes[8]), 0x08);  // request id, low byte first
  FrameHeader back;
  const char* why = nullptr;
  ASSERT_TRUE(DecodeHeader(bytes, &back, &why));
  EXPECT_EQ(back.type, kApply);
  EXPECT_EQ(back.request_id, h.request_id);
  EXPECT_EQ(back.payload_len, 4096u);
  EXPECT_EQ(back.crc, h.crc);
}

TEST(HelperProtocol, BadHeadersAreRefusedWithAReason) {
  FrameHeader h;
  const char* why = nullptr;
  FrameHeader out;

  std::string bytes = EncodeHeader(h);
  bytes[0] = 'X';
  EXPECT_FALSE(DecodeHeader(bytes, &out, &why));
  EXPECT_STREQ(why, "bad frame magic");

  h.version = kVersion + 1;
  EXPECT_FALSE(DecodeHeader(EncodeHeader(h), &out, &why));
  EXPECT_STREQ(why, "unsupported protocol version");

  h.version = kVersion;
  h.payload_len = kMaxPayload + 1;
  EXPECT_FALSE(DecodeHeader(EncodeHeader(h), &out, &why));
  EXPECT_STREQ(why, "frame payload too large");

  EXPECT_FALSE(DecodeHeader(EncodeHeader(h).substr(0, 10), &out, &why));
  EXPECT_STREQ(why, "short frame header");
}

// The helper answers HELLO with its CRC-32C of "123456789"; the page server
// compares it with this constant, so the two ends' CRCs are proven equal.
TEST(HelperProtocol, CheckValueIsThePageServersCrc32c) {
  EXPECT_EQ(rdma::Crc32c("123456789"), kCrcCheckValue);
}

}  // namespace
}  // namespace strata::pageserver::helper
