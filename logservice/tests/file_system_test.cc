// Both FileSystem implementations: the POSIX one on a scratch directory, and
// the fault-injecting one's crash model, which the crash tests rely on.
#include <cerrno>

#include "storage/fault_injection_file_system.h"
#include "storage/file_system.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;

std::string ReadAll(FileSystem& fs, const std::string& path) {
  auto file = fs.OpenReadable(path);
  if (!file.ok()) return "<" + file.status().ToString() + ">";
  std::string out;
  EXPECT_OK((*file)->ReadAt(0, 1 << 20, &out));
  return out;
}

void ExerciseBasics(FileSystem& fs, const std::string& root) {
  const std::string dir = JoinPath(root, "a/b");
  ASSERT_OK(fs.CreateDirs(dir));
  ASSERT_OK(fs.CreateDirs(dir));  // idempotent
  const std::string path = JoinPath(dir, "f");
  {
    auto w = fs.OpenWritable(path, OpenMode::kCreateNew);
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    ASSERT_OK((*w)->Append("hello "));
    ASSERT_OK((*w)->Append("world"));
    EXPECT_EQ((*w)->Size(), 11u);
    ASSERT_OK((*w)->Sync());
    ASSERT_OK((*w)->Truncate(5));
    ASSERT_OK((*w)->Append("!"));
  }
  EXPECT_EQ(ReadAll(fs, path), "hello!");
  EXPECT_FALSE(fs.OpenWritable(path, OpenMode::kCreateNew).ok());
  {
    auto w = fs.OpenWritable(path, OpenMode::kOpenExisting);
    ASSERT_TRUE(w.ok());
    EXPECT_EQ((*w)->Size(), 6u);
    ASSERT_OK((*w)->Append("?"));
  }
  EXPECT_EQ(ReadAll(fs, path), "hello!?");
  auto r = fs.OpenReadable(path);
  ASSERT_TRUE(r.ok());
  std::string part;
  ASSERT_OK((*r)->ReadAt(4, 100, &part));
  EXPECT_EQ(part, "o!?");
  ASSERT_OK((*r)->ReadAt(100, 10, &part));
  EXPECT_EQ(part, "");
  ASSERT_OK(fs.Rename(path, JoinPath(dir, "g")));
  ASSERT_OK(fs.SyncDir(dir));
  auto names = fs.ListDir(dir);
  ASSERT_TRUE(names.ok());
  EXPECT_EQ(*names, std::vector<std::string>{"g"});
  EXPECT_TRUE(*fs.Exists(JoinPath(dir, "g")));
  EXPECT_FALSE(*fs.Exists(path));
  ASSERT_OK(fs.Remove(JoinPath(dir, "g")));
  EXPECT_TRUE(fs.Remove(JoinPath(dir, "g")).is_not_found());
  EXPECT_TRUE(fs.OpenReadable(path).status().is_not_found());
  EXPECT_TRUE(fs.OpenWritable(path, OpenMode::kOpenExisting).status().is_not_found());

  // A whole directory moves with what is in it (a node moving its damaged
  // log aside, server/log_quarantine.h).
  {
    auto w = fs.OpenWritable(JoinPath(dir, "h"), OpenMode::kCreateNew);
    ASSERT_TRUE(w.ok());
    ASSERT_OK((*w)->Append("kept"));
    ASSERT_OK((*w)->Sync());
  }
  ASSERT_OK(fs.SyncDir(dir));
  ASSERT_OK(fs.Rename(dir, JoinPath(root, "a/moved")));
  ASSERT_OK(fs.SyncDir(JoinPath(root, "a")));
  EXPECT_EQ(ReadAll(fs, JoinPath(root, "a/moved/h")), "kept");
  EXPECT_FALSE(*fs.Exists(dir));
  EXPECT_FALSE(*fs.Exists(JoinPath(dir, "h")));
  ASSERT_OK(fs.CreateDirs(dir));  // the old name is free again
  EXPECT_TRUE(*fs.Exists(dir));
}

TEST(PosixFileSystem, Basics) {
  testing::ScratchDir scratch;
  ExerciseBasics(*PosixFileSystem(), scratch.path());
}

TEST(SpaceLimitedFileSystem, Basics) {
  testing::ScratchDir scratch;
  auto fs = SpaceLimitedFileSystem(PosixFileSystem(), scratch.path(), 1 << 20);
  ExerciseBasics(*fs, scratch.path());
}

// A full "disk": the append that does not fit fails with kNoSpace (ENOSPC)
// and writes nothing; removing, truncating or replacing files frees space;
// files present at creation count.
TEST(SpaceLimitedFileSystem, FailsLikeAFullDiskAndFreesSpace) {
  testing::ScratchDir scratch;
  {
    auto w = PosixFileSystem()->OpenWritable(JoinPath(scratch.path(), "old"), OpenMode::kCreateNew);
    ASSERT_TRUE(w.ok());
    ASSERT_OK((*w)->Append(std::string(40, 'o')));
  }
  auto fs = SpaceLimitedFileSystem(PosixFileSystem(), scratch.path(), 100);
  const std::string a = JoinPath(scratch.path(), "a");
  auto w = fs->OpenWritable(a, OpenMode::kCreateNew);
  ASSERT_TRUE(w.ok());
  ASSERT_OK((*w)->Append(std::string(50, 'a')));  // 90 of 100 used
  Status full = (*w)->Append(std::string(11, 'b'));
  EXPECT_EQ(full.code(), StatusCode::kNoSpace) << full.ToString();
  EXPECT_TRUE(full.retryable());
  EXPECT_NE(full.message().find("No space left on device"), std::string::npos) << full.message();
  EXPECT_EQ((*w)->Size(), 50u);  // nothing written
  ASSERT_OK((*w)->Append(std::string(10, 'c')));  // exactly fits
  ASSERT_OK(fs->Remove(JoinPath(scratch.path(), "old")));  // 40 back
  ASSERT_OK((*w)->Append(std::string(40, 'd')));
  EXPECT_EQ((*w)->Append("e").code(), StatusCode::kNoSpace);
  ASSERT_OK((*w)->Truncate(60));  // 40 back
  ASSERT_OK((*w)->Append(std::string(40, 'f')));
  EXPECT_EQ((*w)->Append("g").code(), StatusCode::kNoSpace);
  // Replacing a file by rename frees the replaced one's space.
  w->reset();
  const std::string t = JoinPath(scratch.path(), "t");
  ASSERT_OK(fs->Rename(a, t));
  auto w2 = fs->OpenWritable(a, OpenMode::kCreateNew);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ((*w2)->Append("h").code(), StatusCode::kNoSpace);
  ASSERT_OK(fs->Rename(a, t));  // the 100-byte t is replaced by the empty a
  ASSERT_OK((*w2)->Append(std::string(100, 'i')));
}

TEST(FaultInjectionFileSystem, Basics) {
  FaultFs fs(testing::TestSeed());
  ExerciseBasics(fs, "/r");
}

TEST(FaultInjectionFileSystem, CrashDropsUnsyncedDataAndDirectoryEntries) {
  FaultFs fs(testing::TestSeed());
  ASSERT_OK(fs.CreateDirs("/d"));
  auto w = fs.OpenWritable("/d/f", OpenMode::kCreateNew);
  ASSERT_TRUE(w.ok());
  ASSERT_OK((*w)->Append("synced"));
  ASSERT_OK((*w)->Sync());
  ASSERT_OK((*w)->Append("+lost"));
  fs.SimulateCrash();
  EXPECT_FALSE(*fs.Exists("/d/f")) << "entry was never made durable with SyncDir";
  EXPECT_FALSE((*w)->Append("x").ok()) << "handles die in a crash";

  auto w2 = fs.OpenWritable("/d/f", OpenMode::kCreateNew);
  ASSERT_TRUE(w2.ok());
  ASSERT_OK((*w2)->Append("synced"));
  ASSERT_OK((*w2)->Sync());
  ASSERT_OK(fs.SyncDir("/d"));
  ASSERT_OK((*w2)->Append("+lost"));
  ASSERT_OK(fs.Rename("/d/f", "/d/g"));  // not durable: no SyncDir
  fs.SimulateCrash();
  EXPECT_EQ(ReadAll(fs, "/d/f"), "synced");
  EXPECT_FALSE(*fs.Exists("/d/g"));
}

TEST(FaultInjectionFileSystem, ProcessCrashKeepsPageCacheAndTornCrashKeepsAPrefix) {
  FaultFs fs(testing::TestSeed());
  ASSERT_OK(fs.CreateDirs("/d"));
  {
    auto w = fs.OpenWritable("/d/f", OpenMode::kCreateNew);
    ASSERT_OK((*w)->Append("base"));
    ASSERT_OK((*w)->Sync());
    ASSERT_OK(fs.SyncDir("/d"));
    ASSERT_OK((*w)->Append("cached"));
  }
  fs.SimulateCrash(FaultFs::CrashMode::kProcessOnly);
  EXPECT_EQ(ReadAll(fs, "/d/f"), "basecached");
  std::set<std::size_t> sizes;
  for (int i = 0; i < 40; ++i) {
    auto w = fs.OpenWritable("/d/f", OpenMode::kOpenExisting);
    ASSERT_OK((*w)->Truncate(4));
    ASSERT_OK((*w)->Sync());
    ASSERT_OK((*w)->Append("0123456789"));
    fs.SimulateCrash(FaultFs::CrashMode::kTornUnsynced);
    std::string got = ReadAll(fs, "/d/f");
    ASSERT_GE(got.size(), 4u);
    ASSERT_LE(got.size(), 14u);
    EXPECT_EQ(got.substr(0, 4), "base");
    sizes.insert(got.size());
  }
  EXPECT_GT(sizes.size(), 3u) << "torn crashes should keep prefixes of varying length";
}

TEST(FaultInjectionFileSystem, SpaceLimitWritesWhatFitsThenEnospc) {
  FaultFs fs(testing::TestSeed());
  ASSERT_OK(fs.CreateDirs("/d"));
  fs.SetSpaceLimit(10);
  auto w = fs.OpenWritable("/d/f", OpenMode::kCreateNew);
  ASSERT_OK((*w)->Append("12345678"));
  Status s = (*w)->Append("abcdef");
  EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s.ToString();
  EXPECT_TRUE(s.retryable());
  EXPECT_EQ((*w)->Size(), 10u);
  ASSERT_OK((*w)->Truncate(8));
  fs.SetSpaceLimit(std::nullopt);
  ASSERT_OK((*w)->Append("abcdef"));
  EXPECT_EQ(ReadAll(fs, "/d/f"), "12345678abcdef");
}

TEST(FaultInjectionFileSystem, InjectedErrorsAndCrashPoints) {
  FaultFs fs(testing::TestSeed());
  ASSERT_OK(fs.CreateDirs("/d"));
  auto w = fs.OpenWritable("/d/f", OpenMode::kCreateNew);
  fs.FailOp(FaultFs::Op::kSync, EIO, /*skip=*/1);
  EXPECT_OK((*w)->Sync());
  Status s = (*w)->Sync();
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("Input/output error"), std::string::npos) << s.message();
  EXPECT_OK((*w)->Sync());

  fs.CrashAfterMutations(2);
  EXPECT_OK((*w)->Append("a"));
  EXPECT_OK((*w)->Append("b"));
  EXPECT_FALSE((*w)->Append("c").ok());
  EXPECT_TRUE(fs.crash_point_reached());
  EXPECT_FALSE(fs.SyncDir("/d").ok()) << "everything fails after the crash point";
}

}  // namespace
}  // namespace strata::logservice
