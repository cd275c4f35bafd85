// Node metadata / tail register: round trips, corruption rejected, durable.
#include <gtest/gtest.h>

#include "node_meta.h"
#include "strata/logservice/fault_injection_file_system.h"

namespace strata::logservice::server {
namespace {

TEST(NodeMeta, RoundTripAndDamage) {
  NodeMeta m{7, 99, 7, 4096, 1, {{1, 0}, {7, 4096}}, {"tcp://a:1", "tcp://b:2"}};
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
  NodeMeta m{7, 99, 7, 4096, 1, {{1, 0}, {7, 4096}}, {"tcp://a:1"}};
  const std::string b = EncodeNodeMeta(m);
  NodeMeta g;
  auto put64 = [](std::string s, std::size_t at, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) s[at + i] = static_cast<char>(v >> (8 * i));
    return s;
  };
  auto why = [&](const std::string& bytes) { return DecodeNodeMeta(bytes, &g).message(); };
  EXPECT_EQ(why(put64(b, 0, 99)), "node meta: bad version");
  EXPECT_EQ(why(b.substr(0, 20)), "node meta: truncated header");
  EXPECT_EQ(why(put64(b, 48, wire::kMaxHistory + 1)), "node meta: truncated header");  // history count over the cap
  EXPECT_EQ(why(b.substr(0, 56 + 8)), "node meta: truncated history");
  EXPECT_EQ(why(put64(b, 88, wire::kMaxPeers + 1)), "node meta: bad peer count");
  EXPECT_EQ(why(b.substr(0, b.size() - 17)), "node meta: truncated peer");
  EXPECT_EQ(why(b.substr(0, b.size() - 1)), "node meta: truncated rebuild state");
  EXPECT_EQ(why(put64(b, b.size() - 16, 2)), "node meta: truncated rebuild state");  // flag is 0 or 1
  EXPECT_EQ(why(b + "x"), "node meta: trailing bytes");
  for (const std::string& bad : {put64(b, 0, 99), b + "x"}) EXPECT_TRUE(DecodeNodeMeta(bad, &g).is_data_loss());

  repl::TailImage t{3, 1024, 1100, "img"}, u;
  const std::string tb = EncodeTail(t);
  for (std::size_t n = 0; n < tb.size(); ++n)
    EXPECT_EQ(DecodeTail(tb.substr(0, n), &u).message(), "tail register: malformed") << n;
  EXPECT_EQ(DecodeTail(put64(tb, 0, 99), &u).message(), "tail register: malformed");
  EXPECT_EQ(DecodeTail(tb + "x", &u).message(), "tail register: malformed");
}

// Version 2 added the rebuild state. A version 1 file was written by a
// member (nodes could not rebuild then): it still loads, as a member.
TEST(NodeMeta, RebuildStateRoundTripsAndVersionOneReadsAsAMember) {
  NodeMeta m{7, 99, 7, 4096, 1, {{1, 0}, {7, 4096}}, {"tcp://a:1"}};
  m.rebuilding = true;
  m.certify_lsn = 12345;
  NodeMeta g;
  ASSERT_TRUE(DecodeNodeMeta(EncodeNodeMeta(m), &g).ok());
  EXPECT_EQ(g, m);
  std::string v1 = EncodeNodeMeta(m);
  v1.resize(v1.size() - 16);  // no rebuild state
  v1[0] = 1;                  // version 1
  ASSERT_TRUE(DecodeNodeMeta(v1, &g).ok());
  EXPECT_FALSE(g.rebuilding);
  EXPECT_EQ(g.certify_lsn, 0u);
  EXPECT_EQ(g.promised_epoch, 7u);
}

TEST(NodeMeta, PromiseSurvivesACrashOnceSaved) {
  auto fs = std::make_shared<FaultInjectionFileSystem>(1);
  ASSERT_TRUE(fs->CreateDirs("/n").ok());
  EXPECT_TRUE(LoadNodeMeta(*fs, "/n").status().is_not_found());
  NodeMeta m;
  m.promised_epoch = 5;
  ASSERT_TRUE(SaveNodeMeta(*fs, "/n", m).ok());
  ASSERT_TRUE(SaveTail(*fs, "/n", repl::TailImage{5, 0, 10, std::string(20, 'x')}).ok());
  fs->SimulateCrash(FaultInjectionFileSystem::CrashMode::kDropUnsynced);
  auto got = LoadNodeMeta(*fs, "/n");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->promised_epoch, 5u);
  auto tail = LoadTail(*fs, "/n");
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data_end, 10u);
}

}  // namespace
}  // namespace strata::logservice::server
