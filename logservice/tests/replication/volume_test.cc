// The volume record and the drop / create steps on a data directory
// (src/server/volume.h), without processes: what a drop keeps (the fencing
// floor), what it removes, and that a crash in the middle is finished later.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "node_host.h"
#include "node_meta.h"
#include "volume.h"

namespace strata::logservice::server {
namespace {

std::string FreshDir(const std::string& name) {
  const std::string d = ::testing::TempDir() + "/volume_test_" + name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d + "/redo");
  std::filesystem::create_directories(d + "/pages");
  return d;
}

void Touch(const std::string& path) { std::ofstream(path) << "x"; }

TEST(VolumeRecord, RoundTripsAndRefusesDamage) {
  VolumeRecord r{VolumeState::kDropped, 1764230400, "prod-1"};
  VolumeRecord back;
  ASSERT_TRUE(DecodeVolumeRecord(EncodeVolumeRecord(r), &back).ok());
  EXPECT_EQ(back, r);
  std::string bytes = EncodeVolumeRecord(r);
  EXPECT_FALSE(DecodeVolumeRecord(bytes.substr(0, bytes.size() - 1), &back).ok());
  EXPECT_FALSE(DecodeVolumeRecord(bytes + "x", &back).ok());
  bytes[4] = 9;  // state
  EXPECT_FALSE(DecodeVolumeRecord(bytes, &back).ok());
  bytes = EncodeVolumeRecord(r);
  bytes[0] = 2;  // version
  EXPECT_FALSE(DecodeVolumeRecord(bytes, &back).ok());
}

TEST(Volume, NoRecordMeansPresent) {
  const std::string d = FreshDir("norecord");
  auto present = VolumePresent(*PosixFileSystem(), d);
  ASSERT_TRUE(present.ok());
  EXPECT_TRUE(*present);
}

TEST(Volume, DropRemovesTheVolumeAndRaisesTheEpochFloor) {
  auto fs = PosixFileSystem();
  const std::string d = FreshDir("drop");
  NodeMeta m;
  m.promised_epoch = 7;
  m.writer_id = 42;
  m.seal_epoch = 7;
  m.seal_lsn = 8192;
  m.history = {{3, 0}, {7, 8192}};
  m.peers = {"tcp://a:1", "tcp://b:2", "tcp://c:3"};
  m.self_index = 1;
  ASSERT_TRUE(SaveNodeMeta(*fs, d, m).ok());
  for (const char* f : {"redo/000001.seg", "pages/000001.seg", "checkpoint", "tail", "tail.tmp"}) Touch(d + "/" + f);
  Touch(d + "/unrelated");

  ASSERT_TRUE(DropVolume(*fs, d, "prod-1", 100).ok());
  auto present = VolumePresent(*fs, d);
  ASSERT_TRUE(present.ok());
  EXPECT_FALSE(*present);
  for (const char* f : {"redo/000001.seg", "pages/000001.seg", "checkpoint", "tail", "tail.tmp"})
    EXPECT_FALSE(std::filesystem::exists(d + "/" + f)) << f;
  EXPECT_TRUE(std::filesystem::exists(d + "/unrelated")) << "a drop removes only the volume's files";
  // The store directories stay: node_meta without redo/ means "lost its log".
  EXPECT_TRUE(std::filesystem::is_directory(d + "/redo"));
  EXPECT_TRUE(std::filesystem::is_directory(d + "/pages"));
  auto after = LoadNodeMeta(*fs, d);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->promised_epoch, 8u) << "every old writer (epoch <= 7) must be fenced";
  EXPECT_EQ(after->writer_id, 0u);
  EXPECT_EQ(after->seal_epoch, 0u);
  EXPECT_EQ(after->seal_lsn, 0u);
  EXPECT_TRUE(after->history.empty());
  EXPECT_EQ(after->peers, m.peers);
  EXPECT_EQ(after->self_index, 1u);
  auto rec = LoadVolumeRecord(*fs, d);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->cluster_id, "prod-1");
  EXPECT_EQ(rec->changed_at, 100u);

  // Dropped twice: the floor rises again, nothing else changes.
  ASSERT_TRUE(DropVolume(*fs, d, "prod-1", 101).ok());
  EXPECT_EQ(LoadNodeMeta(*fs, d)->promised_epoch, 9u);

  ASSERT_TRUE(CreateVolume(*fs, d, "prod-1", 102).ok());
  present = VolumePresent(*fs, d);
  ASSERT_TRUE(present.ok());
  EXPECT_TRUE(*present);
  EXPECT_EQ(LoadNodeMeta(*fs, d)->promised_epoch, 9u) << "create keeps the floor";
}

// A drop that stopped after its record (a crash, a full disk) left files:
// RemoveVolumeFiles, which a dropped node's start and CreateVolume both run,
// finishes it.
TEST(Volume, LeftoversOfAnInterruptedDropAreRemovedLater) {
  auto fs = PosixFileSystem();
  const std::string d = FreshDir("interrupted");
  ASSERT_TRUE(SaveVolumeRecord(*fs, d, VolumeRecord{VolumeState::kDropped, 5, "c"}).ok());
  Touch(d + "/redo/000003.seg");
  Touch(d + "/checkpoint");
  ASSERT_TRUE(CreateVolume(*fs, d, "c", 6).ok());
  EXPECT_FALSE(std::filesystem::exists(d + "/redo/000003.seg"));
  EXPECT_FALSE(std::filesystem::exists(d + "/checkpoint"));
  EXPECT_TRUE(RemoveVolumeFiles(*fs, FreshDir("empty")).ok()) << "idempotent on an empty directory";
}

// NodeHost in-process: the cluster id confirms a drop; a dropped volume
// stays dropped across a restart (no listener, nothing served) until
// CreateVolume.
TEST(NodeHost, DropIsConfirmedAndSurvivesARestartUntilCreate) {
  NodeOptions o;
  o.node_id = "n1";
  o.data_dir = FreshDir("host");
  o.cluster_id = "prod-1";
  o.secret = "node-host-test-secret";
  auto host = NodeHost::Start(o);
  ASSERT_TRUE(host.ok()) << host.status().ToString();
  EXPECT_TRUE((*host)->volume_present());
  EXPECT_FALSE((*host)->address().empty());

  auto wrong = (*host)->DropVolume("prod-2");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("nothing was dropped"), std::string::npos) << wrong.status().ToString();
  EXPECT_TRUE((*host)->volume_present());

  auto dropped = (*host)->DropVolume("prod-1");
  ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
  EXPECT_TRUE(dropped->changed);
  EXPECT_FALSE((*host)->volume_present());
  EXPECT_EQ((*host)->address(), "");
  EXPECT_EQ((*host)->State().node_id, "n1");
  EXPECT_EQ((*host)->State().promised_epoch, 1u);
  host.value().reset();

  auto again = NodeHost::Start(o);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE((*again)->volume_present()) << "a restart brought a dropped volume back";
  auto created = (*again)->CreateVolume();
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(created->changed);
  EXPECT_TRUE((*again)->volume_present());
  EXPECT_FALSE((*again)->address().empty());
  EXPECT_EQ((*again)->State().durable, 0u);
  EXPECT_EQ((*again)->State().promised_epoch, 1u);
  auto twice = (*again)->CreateVolume();
  ASSERT_TRUE(twice.ok());
  EXPECT_FALSE(twice->changed);
}

}  // namespace
}  // namespace strata::logservice::server
