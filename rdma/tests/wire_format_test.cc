// Frame codec: round trip and every rejection path of the parser.
#include <cstring>

#include "test_support.h"

namespace strata::rdma::test {
namespace {

const FrameLimits kLimits{1024, 64 * 1024};

std::vector<std::byte> Frame(FrameHeader h, std::span<const std::byte> payload) {
  std::vector<std::byte> f(wire::kHeaderSize + payload.size());
  h.length = static_cast<uint32_t>(payload.size());
  EncodeHeader(h, f.data());
  SealHeader(f.data(), PayloadCrc(payload));
  std::memcpy(f.data() + wire::kHeaderSize, payload.data(), payload.size());
  return f;
}

Status ParseError(std::span<const std::byte> bytes) {
  ParsedFrame out;
  Status error;
  EXPECT_EQ(ParseFrame(bytes, kLimits, &out, &error), ParseOutcome::kError);
  return error;
}

TEST(WireFormat, HeaderRoundTrip) {
  FrameHeader h;
  h.type = wire::FrameType::kBulk;
  h.length = 77;
  h.sequence = 0xDEADBEEF;
  h.credits = 5;
  h.bulk_freed = 6;
  h.aux = 128;
  std::byte buf[wire::kHeaderSize];
  EncodeHeader(h, buf);
  const FrameHeader d = DecodeHeader(buf);
  EXPECT_EQ(d.magic, wire::kMagic);
  EXPECT_EQ(d.version, wire::kVersion);
  EXPECT_EQ(d.type, wire::FrameType::kBulk);
  EXPECT_EQ(d.length, 77u);
  EXPECT_EQ(d.sequence, 0xDEADBEEF);
  EXPECT_EQ(d.credits, 5u);
  EXPECT_EQ(d.bulk_freed, 6u);
  EXPECT_EQ(d.aux, 128u);
  // Little-endian on the wire, whatever the host.
  EXPECT_EQ(buf[0], std::byte{'S'});
  EXPECT_EQ(buf[3], std::byte{'M'});
}

TEST(WireFormat, ParsesCompleteFrameAndWaitsForPartial) {
  FrameHeader h;
  h.sequence = 1;
  const auto payload = Pattern(100, 1);
  const auto f = Frame(h, payload);
  ParsedFrame out;
  Status error;
  ASSERT_EQ(ParseFrame(f, kLimits, &out, &error), ParseOutcome::kFrame) << error.ToString();
  EXPECT_EQ(out.consumed, f.size());
  EXPECT_TRUE(std::equal(out.payload.begin(), out.payload.end(), payload.begin()));
  for (size_t cut : {size_t{0}, size_t{3}, size_t{31}, size_t{32}, f.size() - 1}) {
    EXPECT_EQ(ParseFrame(std::span(f).first(cut), kLimits, &out, &error), ParseOutcome::kNeedMore) << cut;
  }
}

TEST(WireFormat, RejectsBadMagic) {
  FrameHeader h;
  h.magic = 0x12345678;
  EXPECT_NE(ParseError(Frame(h, {})).message().find("bad magic"), std::string::npos);
  const std::byte junk[2] = {std::byte{'G'}, std::byte{'E'}};  // "GET /" is not us
  EXPECT_NE(ParseError(junk).message().find("bad magic"), std::string::npos);
}

TEST(WireFormat, RejectsWrongVersion) {
  FrameHeader h;
  h.version = 9;
  EXPECT_NE(ParseError(Frame(h, {})).message().find("unsupported wire version 9"), std::string::npos);
}

TEST(WireFormat, RejectsUnknownTypeAndFlags) {
  FrameHeader h;
  h.type = static_cast<wire::FrameType>(99);
  EXPECT_NE(ParseError(Frame(h, {})).message().find("unknown frame type 99"), std::string::npos);
  FrameHeader f;
  f.flags = 1;
  EXPECT_NE(ParseError(Frame(f, {})).message().find("reserved flags"), std::string::npos);
}

TEST(WireFormat, RejectsOversizeBeforeReadingPayload) {
  FrameHeader h;
  h.sequence = 1;
  h.length = 1u << 30;  // a hostile length must not make us wait for a GB
  std::byte buf[wire::kHeaderSize];
  EncodeHeader(h, buf);
  EXPECT_NE(ParseError(buf).message().find("oversize DATA frame"), std::string::npos);
}

TEST(WireFormat, RejectsBadChecksum) {
  FrameHeader h;
  h.sequence = 1;
  auto f = Frame(h, Pattern(64, 2));
  f.back() ^= std::byte{1};
  EXPECT_NE(ParseError(f).message().find("checksum mismatch"), std::string::npos);
  auto g = Frame(h, Pattern(64, 2));
  g[wire::offset::kCredits] ^= std::byte{1};  // the header is covered too
  EXPECT_NE(ParseError(g).message().find("checksum mismatch"), std::string::npos);
}

TEST(WireFormat, ControlFramesHaveExactLengths) {
  FrameHeader h;
  h.type = wire::FrameType::kPing;
  EXPECT_NE(ParseError(Frame(h, Pattern(4, 3))).message().find("bad PING length"), std::string::npos);
  FrameHeader c;
  c.type = wire::FrameType::kChallenge;
  EXPECT_NE(ParseError(Frame(c, Pattern(31, 3))).message().find("bad CHALLENGE length"), std::string::npos);
  FrameHeader s;
  s.type = wire::FrameType::kCredit;
  s.sequence = 3;
  EXPECT_NE(ParseError(Frame(s, {})).message().find("sequence set"), std::string::npos);
}

TEST(WireFormat, BulkFramesMustFitTheRing) {
  FrameHeader h;
  h.type = wire::FrameType::kBulk;
  h.sequence = 1;
  h.aux = 64 * 1024 - 64;
  EXPECT_NE(ParseError(Frame(h, Pattern(64, 4))).message().find("exceeds ring"), std::string::npos);
  h.aux = 65;
  EXPECT_NE(ParseError(Frame(h, {})).message().find("misaligned"), std::string::npos);
  ParsedFrame out;
  Status error;
  const FrameLimits no_bulk{1024, 0};
  h.aux = 0;
  const auto f = Frame(h, {});
  EXPECT_EQ(ParseFrame(f, no_bulk, &out, &error), ParseOutcome::kError);
  EXPECT_NE(error.message().find("bulk is disabled"), std::string::npos);
}

}  // namespace
}  // namespace strata::rdma::test
