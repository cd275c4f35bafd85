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
