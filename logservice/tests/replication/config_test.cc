// logserviced configuration: file + flags, secret only from a file.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "config.h"

namespace strata::logservice::server {
namespace {

TEST(Config, FileAndFlagsFlagsWin) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/s") << "s3cret\n";
  std::ofstream(dir + "/c.conf") << "# node config\nnode_id = n7\nlisten = tcp://127.0.0.1:0\ndata_dir = /tmp/x\n"
                                 << "peers = tcp://a:1, tcp://b:2\ncluster_id = prod\nsecret_file = " << dir << "/s\n";
  auto c = ParseDaemonConfig({"--config=" + dir + "/c.conf", "--node_id=n8"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->node.node_id, "n8");
  EXPECT_EQ(c->node.secret, "s3cret");
  EXPECT_EQ(c->node.cluster_id, "prod");
  ASSERT_EQ(c->node.peers.size(), 2u);
  EXPECT_EQ(c->node.peers[1], "tcp://b:2");
}

TEST(Config, RejectsSecretOnTheCommandLineAndUnknownKeys) {
  EXPECT_FALSE(ParseDaemonConfig({"--data_dir=/x", "--secret=abc"}).ok());
  EXPECT_FALSE(ParseDaemonConfig({"--data_dir=/x", "--bogus=1"}).ok());
  EXPECT_FALSE(ParseDaemonConfig({"--data_dir=/x"}).ok());  // no secret file
  EXPECT_FALSE(ParseDaemonConfig({"positional"}).ok());
}

TEST(Config, ByteCountsAreCheckedNotThrown) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/s2") << "s3cret\n";
  const std::string secret = "--secret_file=" + dir + "/s2";
  auto c = ParseDaemonConfig({"--data_dir=/x", secret, "--disk_limit_bytes=1048576", "--segment_bytes=4096"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->node.disk_limit_bytes, 1048576u);
  EXPECT_EQ(c->node.segment_bytes, 4096u);
  for (const char* bad : {"--disk_limit_bytes=abc", "--disk_limit_bytes=-1", "--segment_bytes=", "--segment_bytes=12k",
                          "--disk_limit_bytes=99999999999999999999999"}) {
    auto r = ParseDaemonConfig({"--data_dir=/x", secret, bad});
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("must be a byte count"), std::string::npos) << r.status().ToString();
    }
  }
}

TEST(Config, DamagedLogAndScrubSettings) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/s3") << "s3cret\n";
  const std::string secret = "--secret_file=" + dir + "/s3";
  auto d = ParseDaemonConfig({"--data_dir=/x", secret});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->node.damaged_log, NodeOptions::DamagedLog::kRebuild) << "healing is the default";
  EXPECT_EQ(d->node.scrub_interval, std::chrono::seconds(kDefaultScrubIntervalSeconds)) << "the daemon scrubs";
  auto c = ParseDaemonConfig(
      {"--data_dir=/x", secret, "--damaged_log=stop", "--scrub_interval_seconds=0", "--scrub_bytes_per_second=1000"});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->node.damaged_log, NodeOptions::DamagedLog::kStop);
  EXPECT_EQ(c->node.scrub_interval.count(), 0);
  EXPECT_EQ(c->node.scrub_bytes_per_second, 1000u);
  for (const char* bad : {"--damaged_log=repair", "--scrub_interval_seconds=1h", "--scrub_bytes_per_second=0"}) {
    auto r = ParseDaemonConfig({"--data_dir=/x", secret, bad});
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find(std::string(bad).substr(2, 10)), std::string::npos) << r.status().ToString();
    }
  }
}

}  // namespace
}  // namespace strata::logservice::server
