// Node metadata / tail register: round trips, corruption rejected, durable.
#include <gtest/gtest.h>

#include "node_meta.h"
#include "storage/fault_injection_file_system.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice::server {
namespace {

NodeMeta Sealed() {
  NodeMeta m{7, 99, 7, 4096, 1, {{1, 0, 0}, {7, 4096, 4100}}, {"tcp://a:1", "tcp://b:2"}};
  m.tail = repl::TailImage{7, 4096, 4100, "tailimg!"};
  m.tail_anchored = true;
  m.seal_cut = 4000;
  m.was_member = true;  // a member always has been one
  return m;
}

void Put64(std::string* o, std::uint64_t v) { rdma::AppendLe(o, v, 8); }

// A node_meta as versions 1 and 2 wrote it (no entry ends, no register).
std::string EncodeOld(const NodeMeta& m, std::uint64_t version) {
  std::string o;
  for (std::uint64_t v : {version, m.promised_epoch, m.writer_id, m.seal_epoch, m.seal_lsn,
                          std::uint64_t{m.self_index}, std::uint64_t{m.history.size()}})
    Put64(&o, v);
  for (const auto& h : m.history) { Put64(&o, h.epoch); Put64(&o, h.lsn); }
  Put64(&o, m.peers.size());
  for (const auto& p : m.peers) { Put64(&o, p.size()); o += p; }
  if (version == 2) { Put64(&o, m.rebuilding ? 1 : 0); Put64(&o, m.certify_lsn); }
  return o;
}

TEST(NodeMeta, RoundTripAndDamage) {
  const NodeMeta m = Sealed();
  NodeMeta g;
  ASSERT_TRUE(DecodeNodeMeta(EncodeNodeMeta(m), &g).ok());
  EXPECT_EQ(g, m);
  const std::string b = EncodeNodeMeta(m);
  for (std::size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(DecodeNodeMeta(b.substr(0, n), &g).ok());
  repl::TailImage t{3, 1024, 1100, "img"}, u;
  ASSERT_TRUE(DecodeTail(EncodeTail(t), &u).ok());
  EXPECT_EQ(u, t);
  EXPECT_FALSE(DecodeTail(EncodeTail(t) + "x", &u).ok());
}

// Each decoder error path, reached on purpose, with its reason. (The files
// also carry the durable-file header and CRC, tested in disk_format_test;
// these are the payload decoders behind it.)
TEST(NodeMeta, EveryDecoderErrorPathHasItsReason) {
  NodeMeta m = Sealed();
  m.peers = {"tcp://a:1"};
  const std::string b = EncodeNodeMeta(m);
  NodeMeta g;
  auto put64 = [](std::string s, std::size_t at, std::uint64_t v) {
    rdma::PutFixed64(&s[at], v);
    return s;
  };
  auto why = [&](const std::string& bytes) { return DecodeNodeMeta(bytes, &g).message(); };
  // Layout: 56-byte header, 2 entries of 24, peers at 104 (count + 8 + 9),
  // rebuild state (16), register (epoch, block, data end, 8 + 8 image,
  // anchored), seal cut, was_member, pin count (8, no pins).
  const std::size_t end = b.size() - 8;
  const std::size_t tail_at = end - (8 * 3 + 8 + 8 + 8 + 8 + 8);
  const std::size_t rebuild_at = tail_at - 16;
  EXPECT_EQ(why(put64(b, 0, 99)), "node meta: bad version");
  EXPECT_EQ(why(put64(b, 0, 0)), "node meta: bad version");
  EXPECT_EQ(why(b.substr(0, 20)), "node meta: truncated header");
  EXPECT_EQ(why(put64(b, 48, wire::kMaxHistory + 1)), "node meta: truncated header");  // history count over the cap
  EXPECT_EQ(why(b.substr(0, 56 + 8)), "node meta: truncated history");
  EXPECT_EQ(why(b.substr(0, 56 + 24 + 16)), "node meta: truncated history");  // an entry without its end
  EXPECT_EQ(why(put64(b, 56 + 24 + 16, 4095)), "node meta: history entry ends below its seal");
  EXPECT_EQ(why(put64(b, 104, wire::kMaxPeers + 1)), "node meta: bad peer count");
  EXPECT_EQ(why(b.substr(0, rebuild_at - 1)), "node meta: truncated peer");
  EXPECT_EQ(why(b.substr(0, rebuild_at + 15)), "node meta: truncated rebuild state");
  EXPECT_EQ(why(put64(b, rebuild_at, 2)), "node meta: truncated rebuild state");  // flag is 0 or 1
  EXPECT_EQ(why(b.substr(0, end - 9)), "node meta: truncated tail register");
  EXPECT_EQ(why(put64(b, end - 24, 2)), "node meta: truncated tail register");  // anchored is 0 or 1
  EXPECT_EQ(why(b.substr(0, end - 1)), "node meta: truncated membership");
  EXPECT_EQ(why(b.substr(0, end + 7)), "node meta: bad pin count");
  EXPECT_EQ(why(put64(b, end, wire::kMaxPins + 1)), "node meta: bad pin count");
  EXPECT_EQ(why(put64(b, end, 1)), "node meta: truncated pin");
  EXPECT_EQ(why(put64(b, end - 8, 2)), "node meta: truncated membership");  // was_member is 0 or 1
  EXPECT_EQ(why(put64(b, tail_at + 16, 4096 + 9)), "node meta: tail register's data end outside its image");
  EXPECT_EQ(why(put64(b, tail_at + 16, 4096)), "node meta: tail register's data end outside its image");
  EXPECT_EQ(why(b + "x"), "node meta: trailing bytes");
  for (const std::string& bad : {put64(b, 0, 99), b + "x"}) EXPECT_TRUE(DecodeNodeMeta(bad, &g).is_data_loss());

  repl::TailImage t{3, 1024, 1100, "img"}, u;
  const std::string tb = EncodeTail(t);
  for (std::size_t n = 0; n < tb.size(); ++n)
    EXPECT_EQ(DecodeTail(tb.substr(0, n), &u).message(), "tail register: malformed") << n;
  EXPECT_EQ(DecodeTail(put64(tb, 0, 99), &u).message(), "tail register: malformed");
  EXPECT_EQ(DecodeTail(tb + "x", &u).message(), "tail register: malformed");
}

// Version 2 added the rebuild state: a version 1 file was written by a
// member (nodes could not rebuild then) and loads as a member. Version 3
// added entry ends and moved the register in: older files read with
// unknown ends and say that their register is still in the "tail" file.
// Version 5 added the retention pins: they round-trip, and a version 4
// file (no pin count) reads with none.
TEST(NodeMeta, PinsRoundTripAndVersion4ReadsWithoutPins) {
  NodeMeta m = Sealed();
  m.pins = {{"pageserver-1", 4096}, {"backup", 1024}};
  NodeMeta g;
  const std::string b = EncodeNodeMeta(m);
  ASSERT_TRUE(DecodeNodeMeta(b, &g).ok());
  EXPECT_EQ(g.pins, m.pins);
  for (std::size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(DecodeNodeMeta(b.substr(0, n), &g).ok()) << n;
  m.pins.clear();
  std::string v4 = EncodeNodeMeta(m);
  v4.resize(v4.size() - 8);  // no pin count
  v4[0] = 4;
  ASSERT_TRUE(DecodeNodeMeta(v4, &g).ok());
  EXPECT_TRUE(g.pins.empty());
  EXPECT_EQ(g.seal_lsn, m.seal_lsn);
}

TEST(NodeMeta, OlderVersionsStillRead) {
  NodeMeta m = Sealed();
  m.rebuilding = true;
  m.was_member = false;
  m.certify_lsn = 12345;
  NodeMeta g;
  ASSERT_TRUE(DecodeNodeMeta(EncodeNodeMeta(m), &g).ok());
  EXPECT_EQ(g, m);
  EXPECT_FALSE(g.tail_in_file);
  ASSERT_TRUE(DecodeNodeMeta(EncodeOld(m, 2), &g).ok());
  EXPECT_TRUE(g.rebuilding);
  EXPECT_FALSE(g.was_member) << "a rebuilding node of version 2 may never have been a member";
  EXPECT_EQ(g.certify_lsn, 12345u);
  EXPECT_TRUE(g.tail_in_file);
  EXPECT_FALSE(g.tail.valid());
  ASSERT_EQ(g.history.size(), 2u);
  EXPECT_EQ(g.history[1].lsn, 4096u);
  EXPECT_EQ(g.history[1].end, repl::kUnknownEnd);
  ASSERT_TRUE(DecodeNodeMeta(EncodeOld(m, 1), &g).ok());
  EXPECT_FALSE(g.rebuilding);
  EXPECT_TRUE(g.was_member) << "version 1 files are members'";
  EXPECT_EQ(g.certify_lsn, 0u);
  EXPECT_EQ(g.promised_epoch, 7u);
  EXPECT_TRUE(g.tail_in_file);
  EXPECT_FALSE(DecodeNodeMeta(EncodeOld(m, 2) + "x", &g).ok());
}

// A member that moved its damaged log aside is rebuilding but was a member:
// the flag survives the file, and a member always reads as one that was.
TEST(NodeMeta, AMemberThatLostItsLogStillSaysItWasAMember) {
  NodeMeta m = Sealed();
  m.rebuilding = true;
  m.was_member = true;
  NodeMeta g;
  ASSERT_TRUE(DecodeNodeMeta(EncodeNodeMeta(m), &g).ok());
  EXPECT_TRUE(g.rebuilding);
  EXPECT_TRUE(g.was_member);
  m.rebuilding = false;
  m.was_member = false;  // not a state a node writes; read back as the truth
  ASSERT_TRUE(DecodeNodeMeta(EncodeNodeMeta(m), &g).ok());
  EXPECT_TRUE(g.was_member);
  std::string b = EncodeNodeMeta(m);
  b[b.size() - 8] = 2;  // the flag is 0 or 1
  EXPECT_FALSE(DecodeNodeMeta(b, &g).ok());
}

TEST(NodeMeta, PromiseSurvivesACrashOnceSaved) {
  auto fs = std::make_shared<FaultInjectionFileSystem>(1);
  ASSERT_TRUE(fs->CreateDirs("/n").ok());
  EXPECT_TRUE(LoadNodeMeta(*fs, "/n").status().is_not_found());
  NodeMeta m;
  m.promised_epoch = 5;
  m.tail = repl::TailImage{5, 0, 10, std::string(20, 'x')};
  ASSERT_TRUE(SaveNodeMeta(*fs, "/n", m).ok());
  fs->SimulateCrash(FaultInjectionFileSystem::CrashMode::kDropUnsynced);
  auto got = LoadNodeMeta(*fs, "/n");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->promised_epoch, 5u);
  EXPECT_EQ(got->tail.data_end, 10u);
  // The old register file still loads (a node moves it into node_meta at start).
  ASSERT_TRUE(SaveTail(*fs, "/n", repl::TailImage{5, 0, 12, std::string(20, 'x')}).ok());
  fs->SimulateCrash(FaultInjectionFileSystem::CrashMode::kDropUnsynced);
  auto tail = LoadTail(*fs, "/n");
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data_end, 12u);
}

}  // namespace
}  // namespace strata::logservice::server
