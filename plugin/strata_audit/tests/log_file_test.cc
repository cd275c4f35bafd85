#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cerrno>

#include "log_file.h"
#include "test_util.h"

using namespace strata_audit;
using namespace strata_audit::testing;

namespace {
int append(LogFile &f, const std::string &s) {
  iovec iov{const_cast<char *>(s.data()), s.size()};
  std::string what;
  return f.append(&iov, 1, false, &what);
}
}  // namespace

TEST(LogFile, CreatedOwnerOnly) {
  TempDir d;
  LogFile f(posix_fs(), d.file("audit.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0) << what;
  struct stat st;
  ASSERT_EQ(stat(d.file("audit.log").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(LogFile, AnExistingFileWithAWiderModeIsTightenedTo0600) {
  // Created by hand, by a tool, or by an older build: readable by others.
  for (mode_t wide : {0644, 0640, 0604, 0666, 0700, 0755, 04600}) {
    TempDir d;
    const std::string path = d.file("audit.log");
    { std::ofstream o(path); o << "{\"a\":1}\n"; }
    ASSERT_EQ(chmod(path.c_str(), wide), 0);
    LogFile f(posix_fs(), path);
    uint64_t torn;
    std::string what;
    ASSERT_EQ(f.open(&torn, &what), 0) << what;
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << std::oct << wide;
    EXPECT_EQ(read_file(path), "{\"a\":1}\n");  // the records are kept
    EXPECT_EQ(f.tightened_from(), static_cast<uint32_t>(wide));
  }
}

TEST(LogFile, AWiderModeThatCannotBeTightenedRefusesTheFile) {
  TempDir d;
  const std::string path = d.file("audit.log");
  { std::ofstream o(path); o << "{\"a\":1}\n"; }
  ASSERT_EQ(chmod(path.c_str(), 0644), 0);
  FaultFs fs;
  fs.fail_chmod_errno = EPERM;  // say, the file belongs to another user
  LogFile f(&fs, path);
  uint64_t torn;
  std::string what;
  EXPECT_EQ(f.open(&torn, &what), EPERM);
  EXPECT_FALSE(f.is_open());
  EXPECT_NE(what.find("0644"), std::string::npos) << what;
  EXPECT_NE(what.find("not opened"), std::string::npos) << what;
  iovec iov{const_cast<char *>("x\n"), 2};
  EXPECT_EQ(f.append(&iov, 1, false, &what), EBADF);
  EXPECT_EQ(read_file(path), "{\"a\":1}\n");
  // A file with the right mode needs no fchmod at all.
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(f.open(&torn, &what), 0) << what;
  EXPECT_EQ(f.tightened_from(), 0u);
}

TEST(LogFile, TornTailIsRemovedOnOpen) {
  TempDir d;
  {
    std::ofstream o(d.file("audit.log"), std::ios::binary);
    o << "{\"a\":1}\n{\"a\":2}\n{\"a\":";  // a crash in the middle of record 3
  }
  LogFile f(posix_fs(), d.file("audit.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  EXPECT_EQ(torn, 5u);
  std::vector<std::string> heads;
  ASSERT_EQ(f.last_line_heads(1, 100, &heads, &what), 0);
  EXPECT_EQ(heads, std::vector<std::string>{"{\"a\":2}"});
  ASSERT_EQ(append(f, "{\"a\":3}\n"), 0);
  f.close();
  EXPECT_EQ(read_file(d.file("audit.log")), "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n");
}

TEST(LogFile, TornTailWithoutAnyNewline) {
  TempDir d;
  {
    std::ofstream o(d.file("audit.log"), std::ios::binary);
    o << std::string(100000, 'x');
  }
  LogFile f(posix_fs(), d.file("audit.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  EXPECT_EQ(torn, 100000u);
  EXPECT_EQ(f.size(), 0u);
}

TEST(LogFile, FailedWriteIsRolledBack) {
  TempDir d;
  FaultFs fs;
  LogFile f(&fs, d.file("audit.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  ASSERT_EQ(append(f, "one\n"), 0);
  fs.fail_write_errno = ENOSPC;
  fs.partial_bytes = 3;  // "two" reaches the file, then the disk is full
  EXPECT_EQ(append(f, "two\n"), ENOSPC);
  fs.fail_write_errno = 0;
  ASSERT_EQ(append(f, "three\n"), 0);
  f.close();
  EXPECT_EQ(read_file(d.file("audit.log")), "one\nthree\n");
}

TEST(LogFile, RotationKeepsTheConfiguredCount) {
  TempDir d;
  LogFile f(posix_fs(), d.file("audit.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(append(f, "record " + std::to_string(i) + "\n"), 0);
    bool rotated;
    ASSERT_EQ(f.rotate_if_needed(1, 3, &rotated, &what), 0) << what;
    EXPECT_TRUE(rotated);
  }
  EXPECT_EQ(read_file(d.file("audit.log")), "");
  EXPECT_EQ(read_file(d.file("audit.log.1")), "record 9\n");
  EXPECT_EQ(read_file(d.file("audit.log.2")), "record 8\n");
  EXPECT_EQ(read_file(d.file("audit.log.3")), "record 7\n");
  EXPECT_FALSE(posix_fs()->exists(d.file("audit.log.4")));
  // Lowering the count deletes the surplus at the next rotation.
  ASSERT_EQ(append(f, "record 10\n"), 0);
  bool rotated;
  ASSERT_EQ(f.rotate_if_needed(1, 1, &rotated, &what), 0);
  EXPECT_EQ(read_file(d.file("audit.log.1")), "record 10\n");
  EXPECT_FALSE(posix_fs()->exists(d.file("audit.log.2")));
  EXPECT_FALSE(posix_fs()->exists(d.file("audit.log.3")));
}

TEST(LogFile, RotationZeroKeepsAll) {
  TempDir d;
  LogFile f(posix_fs(), d.file("a.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(append(f, std::to_string(i) + "\n"), 0);
    bool rotated;
    ASSERT_EQ(f.rotate_if_needed(1, 0, &rotated, &what), 0);
  }
  EXPECT_EQ(read_file(d.file("a.log.5")), "0\n");
  EXPECT_EQ(read_file(d.file("a.log.1")), "4\n");
}

TEST(LogFile, ReopenAfterExternalRename) {
  TempDir d;
  LogFile f(posix_fs(), d.file("a.log"));
  uint64_t torn;
  std::string what;
  ASSERT_EQ(f.open(&torn, &what), 0);
  ASSERT_EQ(append(f, "old\n"), 0);
  ASSERT_EQ(rename(d.file("a.log").c_str(), d.file("a.log.moved").c_str()), 0);
  ASSERT_EQ(f.reopen(&torn, &what), 0);
  ASSERT_EQ(append(f, "new\n"), 0);
  EXPECT_EQ(read_file(d.file("a.log.moved")), "old\n");
  EXPECT_EQ(read_file(d.file("a.log")), "new\n");
}
