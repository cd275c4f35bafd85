// The dir:// backend against the Backend contract (backend.h).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "backend.h"

namespace strata::redo {
namespace {

namespace fs = std::filesystem;

class DirBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char *tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp != nullptr ? tmp : "/tmp") + "/redo_dir_test.XXXXXX";
    ASSERT_NE(::mkdtemp(templ.data()), nullptr);
    root_ = templ;
    vol_ = root_ + "/parent/vol";  // open(create) makes missing parents
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<Backend> writer() {
    auto b = make_dir_backend(vol_);
    EXPECT_TRUE(b->open(true).ok());
    WriterInfo info;
    const Status s = b->acquire_writer(&info);
    EXPECT_TRUE(s.ok()) << s.message();
    last_info_ = info;
    return b;
  }

  static std::vector<unsigned char> blocks(std::uint64_t lsn, std::size_t n, unsigned char fill) {
    std::vector<unsigned char> v(n * kBlockSize, fill);
    for (std::size_t i = 0; i < n; ++i) std::memcpy(&v[i * kBlockSize], &lsn, sizeof lsn), lsn += kBlockSize;
    return v;
  }

  std::string root_, vol_;
  WriterInfo last_info_;
};

TEST_F(DirBackendTest, MissingVolumeIsUnavailableWithoutCreate) {
  auto b = make_dir_backend(vol_);
  const Status s = b->open(false);
  EXPECT_EQ(s.code(), Code::kUnavailable);
  EXPECT_NE(s.message().find(vol_), std::string::npos);
}

TEST_F(DirBackendTest, EmptyVolumeHasNoCheckpoint) {
  auto b = writer();
  Checkpoint c;
  EXPECT_EQ(b->read_checkpoint(&c).code(), Code::kNotFound);
  EXPECT_EQ(last_info_.log_end, 0u);
  EXPECT_EQ(last_info_.epoch, 1u);
}

TEST_F(DirBackendTest, CheckpointRoundTripAndEpoch) {
  {
    auto b = writer();
    ASSERT_TRUE(b->write_checkpoint(8204, "meta-1").ok());
    ASSERT_TRUE(b->write_checkpoint(9000, "meta-2").ok());
  }
  auto b = writer();
  EXPECT_EQ(last_info_.epoch, 2u);
  Checkpoint c;
  ASSERT_TRUE(b->read_checkpoint(&c).ok());
  EXPECT_EQ(c.lsn, 9000u);
  EXPECT_EQ(c.epoch, 1u);
  EXPECT_EQ(c.metadata, "meta-2");
}

TEST_F(DirBackendTest, CorruptCheckpointIsReported) {
  {
    auto b = writer();
    ASSERT_TRUE(b->write_checkpoint(8204, "meta").ok());
  }
  {
    std::fstream f(vol_ + "/checkpoint", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(14);
    f.put('\x7f');
  }
  auto b = make_dir_backend(vol_);
  ASSERT_TRUE(b->open(false).ok());
  Checkpoint c;
  const Status s = b->read_checkpoint(&c);
  EXPECT_EQ(s.code(), Code::kCorrupt);
  EXPECT_NE(s.message().find("checksum"), std::string::npos);
}

TEST_F(DirBackendTest, TruncatedCheckpointIsReported) {
  {
    auto b = writer();
    ASSERT_TRUE(b->write_checkpoint(8204, "meta").ok());
  }
  fs::resize_file(vol_ + "/checkpoint", 20);
  auto b = make_dir_backend(vol_);
  Checkpoint c;
  EXPECT_EQ(b->read_checkpoint(&c).code(), Code::kCorrupt);
}

TEST_F(DirBackendTest, SecondWriterIsFenced) {
  auto first = writer();
  auto second = make_dir_backend(vol_);
  ASSERT_TRUE(second->open(false).ok());
  WriterInfo info;
  const Status s = second->acquire_writer(&info);
  EXPECT_EQ(s.code(), Code::kFenced);
  first.reset();
  EXPECT_TRUE(second->acquire_writer(&info).ok());
}

TEST_F(DirBackendTest, AppendTailReadBack) {
  auto b = writer();
  const auto full = blocks(8192, 3, 0xAB);
  ASSERT_TRUE(b->append(8192, full.data(), full.size()).ok());
  auto tail = blocks(8192 + 3 * kBlockSize, 1, 0x01);
  ASSERT_TRUE(b->put_tail(8192 + 3 * kBlockSize, tail.data(), 8192 + 3 * kBlockSize + 100).ok());
  tail[100] = 0x02;  // the tail grows: the newest image wins
  ASSERT_TRUE(b->put_tail(8192 + 3 * kBlockSize, tail.data(), 8192 + 3 * kBlockSize + 200).ok());

  EXPECT_LT(b->durable_lsn(), 8192 + 3 * kBlockSize + 200);
  ASSERT_TRUE(b->wait_durable(8192 + 3 * kBlockSize + 200).ok());
  EXPECT_GE(b->durable_lsn(), 8192 + 3 * kBlockSize + 200);

  std::vector<unsigned char> buf(16 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(8192, buf.data(), buf.size(), &got).ok());
  EXPECT_EQ(got, 4 * kBlockSize);  // short: the log ends after the tail block
  EXPECT_EQ(0, std::memcmp(buf.data(), full.data(), full.size()));
  EXPECT_EQ(buf[3 * kBlockSize + 100], 0x02);

  // The block stream continues over the tail's place.
  const auto more = blocks(8192 + 3 * kBlockSize, 2, 0xCD);
  ASSERT_TRUE(b->append(8192 + 3 * kBlockSize, more.data(), more.size()).ok());
  ASSERT_TRUE(b->read(8192 + 3 * kBlockSize, buf.data(), buf.size(), &got).ok());
  EXPECT_EQ(got, 2 * kBlockSize);
  EXPECT_EQ(buf[100], 0xCD);
}

TEST_F(DirBackendTest, ReopenSeesTheLogEndAndTruncateCutsIt) {
  {
    auto b = writer();
    const auto full = blocks(8192, 4, 0x11);
    ASSERT_TRUE(b->append(8192, full.data(), full.size()).ok());
    ASSERT_TRUE(b->wait_durable(8192 + 4 * kBlockSize).ok());
  }
  auto b = writer();
  EXPECT_EQ(last_info_.log_end, 8192 + 4 * kBlockSize);
  EXPECT_EQ(b->durable_lsn(), 8192 + 4 * kBlockSize);
  ASSERT_TRUE(b->truncate(8192 + 2 * kBlockSize).ok());
  EXPECT_EQ(b->durable_lsn(), 8192 + 2 * kBlockSize);
  std::vector<unsigned char> buf(8 * kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(8192, buf.data(), buf.size(), &got).ok());
  EXPECT_EQ(got, 2 * kBlockSize);
  b.reset();
  b = writer();
  EXPECT_EQ(last_info_.log_end, 8192 + 2 * kBlockSize);
}

TEST_F(DirBackendTest, ReleaseKeepsWhatIsAbove) {
  auto b = writer();
  const std::size_t n = 3 * (1 << 20) / kBlockSize;
  const auto full = blocks(0, n, 0x22);
  ASSERT_TRUE(b->append(0, full.data(), full.size()).ok());
  ASSERT_TRUE(b->release(2 * (1 << 20) + 1000).ok());
  std::vector<unsigned char> buf(kBlockSize);
  std::size_t got = 0;
  ASSERT_TRUE(b->read(2 * (1 << 20), buf.data(), buf.size(), &got).ok());
  ASSERT_EQ(got, kBlockSize);
  EXPECT_EQ(buf[100], 0x22);
  struct stat st;
  ASSERT_EQ(::stat((vol_ + "/redo.blocks").c_str(), &st), 0);
  EXPECT_LT(static_cast<std::uint64_t>(st.st_blocks) * 512, 3u << 20);  // holes were punched
}

TEST_F(DirBackendTest, ContractViolationsAreRefused) {
  auto b = writer();
  unsigned char block[kBlockSize] = {};
  EXPECT_EQ(b->append(100, block, kBlockSize).code(), Code::kInvalid);
  EXPECT_EQ(b->append(512, block, 100).code(), Code::kInvalid);
  EXPECT_EQ(b->put_tail(512, block, 512).code(), Code::kInvalid);
  EXPECT_EQ(b->put_tail(512, block, 2000).code(), Code::kInvalid);
  EXPECT_EQ(b->wait_durable(1 << 20).code(), Code::kInvalid);
  EXPECT_EQ(b->truncate(100).code(), Code::kInvalid);
  std::size_t got;
  EXPECT_EQ(b->read(7, block, kBlockSize, &got).code(), Code::kInvalid);

  auto not_writer = make_dir_backend(vol_);
  EXPECT_EQ(not_writer->append(0, block, kBlockSize).code(), Code::kInvalid);
  EXPECT_EQ(not_writer->write_checkpoint(1, "m").code(), Code::kInvalid);
}

}  // namespace
}  // namespace strata::redo
