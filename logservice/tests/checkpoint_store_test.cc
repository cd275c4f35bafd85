// CheckpointStore: round trip, corruption, disk full, and a crash at every
// step of the atomic replace.
#include <cerrno>

#include "storage/checkpoint_store.h"
#include "storage/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;
const std::string kDir = "/node";

TEST(CheckpointStore, WriteReadAndReplace) {
  auto fs = std::make_shared<FaultFs>(testing::TestSeed());
  ASSERT_OK(fs->CreateDirs(kDir));
  CheckpointStore store(fs, kDir);
  EXPECT_TRUE(store.Read().status().is_not_found());
  Checkpoint a{12345, 2, "innodb metadata blob"};
  ASSERT_OK(store.Write(a));
  EXPECT_EQ(*store.Read(), a);
  Checkpoint b{99999, 3, std::string(1000, '\0')};
  ASSERT_OK(store.Write(b));
  fs->SimulateCrash();
  EXPECT_EQ(*store.Read(), b) << "durable when Write returns";
  EXPECT_EQ(store.Write(Checkpoint{1, 1, std::string(kMaxCheckpointMetadata + 1, 'x')}).code(),
            StatusCode::kInvalidArgument);
}

TEST(CheckpointStore, DamagedFileIsCorruptionNeverGarbage) {
  auto fs = std::make_shared<FaultFs>(testing::TestSeed());
  ASSERT_OK(fs->CreateDirs(kDir));
  CheckpointStore store(fs, kDir);
  ASSERT_OK(store.Write(Checkpoint{777, 1, "meta"}));
  const std::string path = kDir + "/checkpoint";
  const std::string good = *fs->FileContents(path);
  for (std::size_t i = 0; i < good.size(); ++i) {
    ASSERT_OK(fs->OverwriteFile(path, good));
    ASSERT_OK(fs->FlipBit(path, i, static_cast<int>(i % 8)));
    EXPECT_TRUE(store.Read().status().is_data_loss()) << "byte " << i;
  }
  ASSERT_OK(fs->OverwriteFile(path, good.substr(0, good.size() - 1)));
  EXPECT_TRUE(store.Read().status().is_data_loss());
  ASSERT_OK(fs->OverwriteFile(path, ""));
  EXPECT_TRUE(store.Read().status().is_data_loss());
}

TEST(CheckpointStore, DiskFullKeepsTheOldCheckpoint) {
  auto fs = std::make_shared<FaultFs>(testing::TestSeed());
  ASSERT_OK(fs->CreateDirs(kDir));
  CheckpointStore store(fs, kDir);
  Checkpoint old{100, 1, "old"};
  ASSERT_OK(store.Write(old));
  fs->SetSpaceLimit(fs->used_bytes() + 10);
  Status s = store.Write(Checkpoint{200, 1, "a larger new metadata blob"});
  EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s.ToString();
  EXPECT_TRUE(s.retryable());
  EXPECT_EQ(*store.Read(), old);
  EXPECT_FALSE(*fs->Exists(kDir + "/checkpoint.tmp")) << "the temp file was cleaned up";
  fs->FailOp(FaultFs::Op::kRename, EIO);
  fs->SetSpaceLimit(std::nullopt);
  EXPECT_FALSE(store.Write(Checkpoint{300, 1, "x"}).ok());
  EXPECT_EQ(*store.Read(), old);
}

TEST(CheckpointStore, CrashAtEveryStepOfReplaceLeavesOldOrNew) {
  const Checkpoint old_cp{100, 1, "old metadata"};
  const Checkpoint new_cp{200, 2, "new metadata, longer than the old one"};
  const std::uint64_t seed = testing::TestSeed(9);
  for (int mode = 0; mode < 3; ++mode) {
    for (int n = 0;; ++n) {
      auto fs = std::make_shared<FaultFs>(seed + n);
      ASSERT_OK(fs->CreateDirs(kDir));
      CheckpointStore store(fs, kDir);
      ASSERT_OK(store.Write(old_cp));
      fs->CrashAfterMutations(n);
      Status written = store.Write(new_cp);
      bool crashed = fs->crash_point_reached();
      fs->SimulateCrash(static_cast<FaultFs::CrashMode>(mode));
      auto got = store.Read();
      ASSERT_TRUE(got.ok()) << "mode " << mode << " n=" << n << ": " << got.status().ToString();
      if (written.ok()) EXPECT_EQ(*got, new_cp) << "n=" << n;
      else EXPECT_TRUE(*got == old_cp || *got == new_cp) << "n=" << n;
      if (!crashed) break;  // Write completed: every step has been crashed at
    }
  }
}

}  // namespace
}  // namespace strata::logservice
