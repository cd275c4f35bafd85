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

namespace {

// One MySQL protocol packet around payload, as the replica sends an ack.
std::vector<unsigned char> packet(const std::vector<unsigned char> &payload,
                                  unsigned char seq = 0) {
  std::vector<unsigned char> p = {
      static_cast<unsigned char>(payload.size()),
      static_cast<unsigned char>(payload.size() >> 8),
      static_cast<unsigned char>(payload.size() >> 16), seq};
  p.insert(p.end(), payload.begin(), payload.end());
  return p;
}

}  // namespace

// The ack reader gets the byte stream in arbitrary chunks: every split of
// three acks (one byte at a time up to all at once) yields the same three.
TEST(StrataSyncProtocol, SplitterFindsPacketsInAnyChunking) {
  std::vector<unsigned char> stream;
  for (std::uint64_t pos : {100u, 2000u, 300000u}) {
    const auto p = packet(encode("binlog.000007", pos));
    stream.insert(stream.end(), p.begin(), p.end());
  }
  for (std::size_t chunk = 1; chunk <= stream.size(); chunk++) {
    wire::PacketSplitter s;
    std::vector<std::uint64_t> got;
    for (std::size_t at = 0; at < stream.size(); at += chunk) {
      s.feed(stream.data() + at, std::min(chunk, stream.size() - at));
      std::size_t len = 0;
      while (const unsigned char *pkt = s.next(&len)) {
        char name[wire::kMaxFileNameLength + 1];
        std::uint64_t pos = 0;
        ASSERT_EQ(wire::parse_ack(pkt, len, name, &pos), nullptr);
        EXPECT_STREQ(name, "binlog.000007");
        got.push_back(pos);
      }
      ASSERT_EQ(s.error(), nullptr);
    }
    EXPECT_EQ(got, (std::vector<std::uint64_t>{100, 2000, 300000})) << chunk;
    EXPECT_EQ(s.pending(), 0u);
  }
}

TEST(StrataSyncProtocol, SplitterSeesComQuit) {
  wire::PacketSplitter s;
  const auto p = packet({wire::kComQuit});
  s.feed(p.data(), p.size());
  std::size_t len = 0;
  const unsigned char *pkt = s.next(&len);
  ASSERT_NE(pkt, nullptr);
  EXPECT_EQ(len, 1u);
  EXPECT_EQ(pkt[0], wire::kComQuit);
}

// Lengths no ack can have break the stream (the source drops the replica):
// zero and anything above kAckMaxSize; and feeding without draining.
TEST(StrataSyncProtocol, SplitterRejectsBadLengths) {
  {
    wire::PacketSplitter s;
    const unsigned char zero[4] = {0, 0, 0, 0};
    s.feed(zero, 4);
    std::size_t len = 0;
    EXPECT_EQ(s.next(&len), nullptr);
    EXPECT_NE(s.error(), nullptr);
  }
  {
    wire::PacketSplitter s;
    const auto p = packet(std::vector<unsigned char>(wire::kAckMaxSize + 1, 1));
    s.feed(p.data(), 4);
    std::size_t len = 0;
    EXPECT_EQ(s.next(&len), nullptr);
    EXPECT_NE(s.error(), nullptr);
  }
  {
    wire::PacketSplitter s;
    const std::vector<unsigned char> junk(wire::PacketSplitter::kMaxFeed, 0xA8);
    for (int i = 0; i < 3; i++) s.feed(junk.data(), junk.size());
    EXPECT_NE(s.error(), nullptr);
  }
}
