// Replication codec: every message type round-trips; malformed input (every
// truncation, bad header fields, caps, trailing bytes, random damage) is rejected.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "codec.h"
#include "strata/rdma/crc32c.h"

namespace strata::logservice::repl {
namespace {

using wire::MsgType;

Frame Populated(MsgType t) {
  Frame f;
  f.type = t;
  f.request_id = 0x1122334455667788ull;
  f.epoch = 42;
  if (wire::IsResponse(t)) {
    f.code = wire::ReplyCode::kStaleEpoch;
    f.error = "because";
  }
  switch (t) {
    case MsgType::kPromiseReq: f.writer_id = 99; break;
    case MsgType::kSealReq:
      f.lsn = 4096; f.commit_lsn = 8192; f.self_index = 1; f.history = {{1, 0, 0}, {3, 4096, 4100}}; f.peers = {"tcp://a:1", "tcp://b:2"};
      f.tail = TailImage{42, 4096, 4100, std::string(512, 'r')};  // the header's epoch, at the seal LSN
      break;
    case MsgType::kAppendReq:
      f.lsn = 512; f.commit_lsn = 256; f.data = std::string(1024, 'x');
      f.append_flags = wire::kAppendWantsWrittenAck | wire::kAppendCarriesTail;
      f.tail = TailImage{42, 1536, 1600, std::string(512, 't')};  // the block after the redo
      break;
    case MsgType::kAppendResp: f.lsn = 1024; f.complete_lsn = 2048; f.tail = TailImage{42, 1536, 1600, ""}; break;
    case MsgType::kTailReq: f.lsn = 1024; f.data_end = 1100; f.data = std::string(512, 't'); break;
    case MsgType::kTailResp: f.lsn = 1024; f.data_end = 1100; f.durable_lsn = 1024; break;
    case MsgType::kReadReq: f.lsn = 7; f.max_bytes = 4096; f.seal_epoch = 3; break;
    case MsgType::kReadResp: f.lsn = 900; f.ranges = {{0, 1, "abc"}, {3, 2, "defg"}}; break;
    case MsgType::kCkptSetReq: f.lsn = 77; f.data = "meta"; break;
    case MsgType::kCkptGetResp: f.found = true; f.lsn = 77; f.checkpoint_epoch = 4; f.data = "meta"; break;
    case MsgType::kPagePutReq: f.space = 5; f.page = 6; f.lsn = 8; f.data = "page"; break;
    case MsgType::kPageGetReq: f.space = 5; f.page = 6; f.lsn = 8; break;
    case MsgType::kPageGetResp: f.found = true; f.lsn = 8; f.data = "page"; break;
    case MsgType::kReleaseReq: f.lsn = 4096; break;
    case MsgType::kReleaseResp: f.lsn = 2048; break;
    case MsgType::kFollowReq: f.lsn = 4096; f.max_bytes = 65536; break;
    case MsgType::kFollowResp:
      f.lsn = 1024; f.released = 512; f.ranges = {{512, 3, std::string(512, 'b')}};
      f.tail = TailImage{0, 1024, 1100, std::string(512, 't')};
      break;
    case MsgType::kHintReq: f.lsn = 9000; break;
    case MsgType::kPinReq: f.pin_op = wire::PinOp::kSet; f.lsn = 500; f.pins = {{"ps1", 500}}; break;
    case MsgType::kPinResp: f.pins = {{"ps1", 500}, {"ps2", 700}}; break;
    case MsgType::kPromiseResp:
    case MsgType::kSealResp:
    case MsgType::kStatusResp:
      f.state.node_id = "n1";
      f.state.promised_epoch = 3; f.state.writer_id = 5; f.state.seal_epoch = 3; f.state.seal_lsn = 10;
      f.state.last_epoch = 3; f.state.released = 1; f.state.durable = 20; f.state.complete = 30; f.state.highest = 40;
      f.state.tail = TailImage{3, 20, 25, "tailimg"};
      f.state.tail_anchored = true;
      f.state.history = {{1, 0}, {3, 10, 25}};
      f.state.counters = {1, 2, 3};
      break;
    default: break;
  }
  return f;
}

TEST(Codec, EveryMessageTypeRoundTrips) {
  for (std::uint8_t t = wire::kFirstType; t <= wire::kLastType; ++t) {
    const Frame f = Populated(static_cast<MsgType>(t));
    const std::string bytes = Encode(f);
    Frame g;
    ASSERT_TRUE(Decode(bytes, &g).ok()) << MsgTypeName(f.type);
    EXPECT_EQ(g.type, f.type);
    EXPECT_EQ(g.request_id, f.request_id);
    EXPECT_EQ(g.epoch, f.epoch);
    EXPECT_EQ(g.code, f.code);
    EXPECT_EQ(g.error, f.error);
    EXPECT_EQ(g.data, f.data);
    EXPECT_EQ(g.lsn, f.lsn);
    EXPECT_EQ(g.commit_lsn, f.commit_lsn);
    EXPECT_EQ(g.certify_lsn, f.certify_lsn);
    EXPECT_EQ(g.self_index, f.self_index);
    EXPECT_EQ(g.append_flags, f.append_flags);
    EXPECT_EQ(g.complete_lsn, f.complete_lsn);
    EXPECT_EQ(g.data_end, f.data_end);
    EXPECT_EQ(g.durable_lsn, f.durable_lsn);
    EXPECT_EQ(g.max_bytes, f.max_bytes);
    EXPECT_EQ(g.seal_epoch, f.seal_epoch);
    EXPECT_EQ(g.checkpoint_epoch, f.checkpoint_epoch);
    EXPECT_EQ(g.space, f.space);
    EXPECT_EQ(g.page, f.page);
    EXPECT_EQ(g.released, f.released);
    EXPECT_EQ(g.pin_op, f.pin_op);
    EXPECT_EQ(g.history, f.history);
    EXPECT_EQ(g.tail, f.tail);
    EXPECT_EQ(g.peers, f.peers);
    EXPECT_EQ(g.ranges, f.ranges);
    EXPECT_EQ(g.state, f.state);
    EXPECT_EQ(g.pins, f.pins);
    EXPECT_EQ(Encode(g), bytes) << MsgTypeName(f.type);
  }
}

// The bytes themselves, not only a round trip: the CRC32C of each message
// type's encoding of Populated(), as the codec wrote them before the header
// code was shared with the page service (message_header.h) and before
// Frame's fields got one name each (they were slots lsn2, lsn3, u32a, u32b
// meaning one thing per type). A difference is a wire format change: that
// needs a new kWireVersion.
TEST(Codec, EveryMessageTypeEncodesToTheRecordedBytes) {
  static constexpr std::uint32_t kCrcs[] = {
      0x50B97439u, 0x0C4A5E6Au, 0xF9644062u, 0x294DCD59u, 0xEB376BECu, 0x4B52F6CEu, 0xC919D790u, 0x39A9A804u,
      0x096A2E29u, 0x4F62ADD7u, 0x0F2588D5u, 0xD07599BCu, 0x7551CE75u, 0x17FEE777u, 0x937F0949u, 0xB631FC8Eu,
      0xE235FEBDu, 0xF8E782E6u, 0xBFA22893u, 0x3202687Eu, 0x900D7003u, 0xDA1D1091u, 0xA10346C2u, 0xEB9A9110u,
      0x4AF18266u, 0x4A2120E7u, 0x0130553Bu, 0x0BDB2B2Du};
  static_assert(std::size(kCrcs) == wire::kLastType - wire::kFirstType + 1);
  for (std::uint8_t t = wire::kFirstType; t <= wire::kLastType; ++t)
    EXPECT_EQ(rdma::Crc32c(Encode(Populated(static_cast<MsgType>(t)))), kCrcs[t - wire::kFirstType])
        << MsgTypeName(static_cast<MsgType>(t));
}

TEST(Codec, EveryTruncationAndTrailingByteIsRejected) {
  for (std::uint8_t t = wire::kFirstType; t <= wire::kLastType; ++t) {
    const std::string bytes = Encode(Populated(static_cast<MsgType>(t)));
    Frame g;
    for (std::size_t n = 0; n < bytes.size(); ++n)
      EXPECT_FALSE(Decode(std::string_view(bytes).substr(0, n), &g).ok()) << MsgTypeName(static_cast<MsgType>(t)) << " " << n;
    EXPECT_FALSE(Decode(bytes + "x", &g).ok());
  }
}

// A follower must never be handed a byte at or above the frontier the
// reply names, nor a tail that is not at the frontier.
TEST(Codec, FollowRespNeverCarriesBytesAtOrAboveItsFrontier) {
  Frame f = Populated(MsgType::kFollowResp);
  Frame g;
  ASSERT_TRUE(Decode(Encode(f), &g).ok());
  f.lsn = 1023;  // the range [512, 1024) now ends above the frontier
  f.tail = TailImage{};
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kFollowResp);
  f.tail.block_lsn = 512;  // a tail below the frontier
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kPinReq);
  f.pins[0].name.clear();  // set without a name
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
}

TEST(Codec, BadHeaderFieldsAreRejected) {
  const std::string good = Encode(Populated(MsgType::kAppendReq));
  Frame g;
  auto with = [&](std::size_t off, char v) {
    std::string b = good;
    b[off] = v;
    return b;
  };
  EXPECT_FALSE(Decode(with(wire::kMagicOffset, 'X'), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kVersionOffset, wire::kWireVersion + 1), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kVersionOffset, wire::kWireVersion - 1), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kTypeOffset, 0), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kTypeOffset, wire::kLastType + 1), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kCodeOffset, 1), &g).ok());  // reply code on a request
  EXPECT_FALSE(Decode(with(wire::kReservedOffset, 1), &g).ok());
  EXPECT_FALSE(Decode(with(wire::kBodyLengthOffset, 1), &g).ok());
  std::string resp = Encode(Populated(MsgType::kAppendResp));
  resp[wire::kCodeOffset] = static_cast<char>(wire::kLastReplyCode + 1);
  EXPECT_FALSE(Decode(resp, &g).ok());
}

TEST(Codec, CapsAndContractsAreEnforced) {
  Frame g;
  Frame f = Populated(MsgType::kAppendReq);
  f.data = std::string(wire::kMaxRedoChunk + 1, 'x');
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f.data.clear();  // empty append
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);
  f.lsn = ~0ull - 10;  // LSN overflow
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);
  f.append_flags |= 4;  // an append flag this version does not know
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  // A carried tail must be the register of the block right after the redo,
  // holding data.
  f = Populated(MsgType::kAppendReq);
  f.tail.block_lsn += 512;
  f.tail.data_end += 512;
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);
  f.tail.data_end = f.tail.block_lsn + f.tail.image.size() + 1;  // data end beyond the image
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);
  f.tail.data_end = f.tail.block_lsn;  // empty tail
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);
  f.tail.image = std::string(wire::kMaxTailImage + 1, 't');
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kAppendReq);  // without the flag, no tail is read
  f.append_flags = 0;
  ASSERT_TRUE(Decode(Encode(f), &g).ok());
  EXPECT_FALSE(g.tail.valid());

  f = Populated(MsgType::kTailReq);
  f.data_end = f.lsn + f.data.size() + 1;  // data end beyond the image
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kTailReq);
  f.data_end = f.lsn;  // empty tail
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kReadReq);
  f.max_bytes = wire::kMaxReadBytes + 1;
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kSealReq);
  f.self_index = 2;  // self index outside the peer list
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kSealReq);
  f.history[1].end = f.history[1].lsn - 1;  // a writer's recovered log ends below its seal
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kSealReq);
  f.tail.data_end = f.lsn + f.tail.image.size() + 1;  // the seal's tail: data end beyond its image
  EXPECT_FALSE(Decode(Encode(f), &g).ok());
  f = Populated(MsgType::kSealReq);
  f.tail = TailImage{};
  ASSERT_TRUE(Decode(Encode(f), &g).ok());  // no tail
  EXPECT_FALSE(g.tail.valid());
  std::string nt = Encode(f);  // no tail, but an image
  const std::size_t img_len_at = nt.size() - 4;
  nt.replace(img_len_at, 4, std::string("\x01\x00\x00\x00", 4));
  nt += "x";
  nt[wire::kBodyLengthOffset] = static_cast<char>(nt[wire::kBodyLengthOffset] + 1);
  EXPECT_FALSE(Decode(nt, &g).ok());
  f = Populated(MsgType::kCkptGetResp);
  std::string b = Encode(f);
  b[wire::kHeaderSize + 2 + f.error.size()] = 2;  // "found" must be 0 or 1
  EXPECT_FALSE(Decode(b, &g).ok());
}

TEST(Codec, RandomDamageNeverCrashes) {
  const char* env = std::getenv("STRATA_TEST_SEED");
  std::mt19937_64 rng(env ? std::strtoull(env, nullptr, 10) : 12345);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string b = Encode(Populated(static_cast<MsgType>(1 + rng() % wire::kLastType)));
    const int flips = 1 + rng() % 4;
    for (int k = 0; k < flips; ++k) b[rng() % b.size()] ^= static_cast<char>(1 + rng() % 255);
    Frame g;
    Status s = Decode(b, &g);
    if (s.ok()) {
      EXPECT_EQ(Encode(g).size(), b.size());  // whatever decodes re-encodes to the same size
    }
  }
}

}  // namespace
}  // namespace strata::logservice::repl
