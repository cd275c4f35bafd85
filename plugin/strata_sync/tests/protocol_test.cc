// Unit tests of the strong-sync wire format (strata_sync_protocol.h): every
// error path of the ack parser, and encode/parse round trips.
#include "strata_sync_protocol.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace wire = strata::sync::wire;

namespace {

std::vector<unsigned char> encode(const std::string &file, std::uint64_t pos) {
  std::vector<unsigned char> buf(wire::kAckMaxSize);
  buf.resize(wire::encode_ack(buf.data(), file.c_str(), pos));
  return buf;
}

const char *parse(const std::vector<unsigned char> &buf, std::string *file,
                  std::uint64_t *pos) {
  char name[wire::kMaxFileNameLength + 1];
  const char *err = wire::parse_ack(buf.data(), buf.size(), name, pos);
  if (err == nullptr) *file = name;
  return err;
}

}  // namespace

TEST(StrataSyncProtocol, RoundTrip) {
  for (std::uint64_t pos : {std::uint64_t{4}, std::uint64_t{123456789},
                            ~std::uint64_t{0}}) {
    const auto buf = encode("binlog.000042", pos);
    ASSERT_EQ(buf.size(), wire::kAckFileOffset + 13);
    EXPECT_EQ(buf[0], wire::kAckMagic);
    EXPECT_EQ(buf[1], wire::kProtocolVersion);
    std::string file;
    std::uint64_t got = 0;
    ASSERT_EQ(parse(buf, &file, &got), nullptr);
    EXPECT_EQ(file, "binlog.000042");
    EXPECT_EQ(got, pos);
  }
}

TEST(StrataSyncProtocol, PositionIsLittleEndian) {
  const auto buf = encode("f", 0x0102030405060708ULL);
  EXPECT_EQ(buf[wire::kAckPosOffset], 0x08);
  EXPECT_EQ(buf[wire::kAckPosOffset + 7], 0x01);
}

TEST(StrataSyncProtocol, EncodeRefusesBadNames) {
  unsigned char buf[wire::kAckMaxSize];
  EXPECT_EQ(wire::encode_ack(buf, "", 4), 0u);
  EXPECT_EQ(wire::encode_ack(buf, nullptr, 4), 0u);
  const std::string longest(wire::kMaxFileNameLength, 'x');
  EXPECT_EQ(wire::encode_ack(buf, longest.c_str(), 4), wire::kAckMaxSize);
  const std::string too_long(wire::kMaxFileNameLength + 1, 'x');
  EXPECT_EQ(wire::encode_ack(buf, too_long.c_str(), 4), 0u);
}

TEST(StrataSyncProtocol, ParseRejectsEveryMalformedAck) {
  std::string file;
  std::uint64_t pos = 0;
  const auto good = encode("binlog.000001", 99);

  auto shorter = good;
  shorter.resize(wire::kAckFileOffset);  // no file name
  EXPECT_STREQ(parse(shorter, &file, &pos), "ack packet too short");
  EXPECT_STREQ(parse({}, &file, &pos), "ack packet too short");

  std::vector<unsigned char> longer(wire::kAckMaxSize + 1, 'x');
  longer[0] = wire::kAckMagic;
  longer[1] = wire::kProtocolVersion;
  EXPECT_STREQ(parse(longer, &file, &pos), "ack packet too long");

  auto magic = good;
  magic[0] = 0xEF;  // a semisync reply
  EXPECT_STREQ(parse(magic, &file, &pos), "bad ack magic");

  auto version = good;
  version[1] = wire::kProtocolVersion + 1;
  EXPECT_STREQ(parse(version, &file, &pos), "unsupported ack version");

  auto nul = good;
  nul[wire::kAckFileOffset + 3] = '\0';
  EXPECT_STREQ(parse(nul, &file, &pos), "NUL in ack file name");
}

TEST(StrataSyncProtocol, ParseNeverReadsPastTheBuffer) {
  // Seeded, so a failure reproduces.
  std::mt19937 rng(20261123);
  for (int i = 0; i < 20000; i++) {
    std::vector<unsigned char> buf(rng() % (wire::kAckMaxSize + 8));
    for (auto &b : buf) b = static_cast<unsigned char>(rng());
    if (!buf.empty() && rng() % 2) buf[0] = wire::kAckMagic;
    if (buf.size() > 1 && rng() % 2) buf[1] = wire::kProtocolVersion;
    std::string file;
    std::uint64_t pos = 0;
    if (parse(buf, &file, &pos) == nullptr) {
      EXPECT_EQ(file.size(), buf.size() - wire::kAckFileOffset);
    }
  }
}
