// Layer files (delta and image) written by WriteLayerFile and read back by
// LayerReader: round trips across block boundaries, and every truncation
// and every bit flip of a file rejected with kCorruption naming the file
// and an offset (by Open, or by VerifyAll for damage inside a block).
#include <gtest/gtest.h>

#include <random>

#include "layer_reader.h"
#include "layer_writer.h"
#include "store_model.h"
#include "storage/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::pageserver {
namespace {

using logservice::FaultInjectionFileSystem;
using testing::Delta;
using testing::Image;

const std::string kDir = "/layers";

std::vector<PageRecord> SortedDeltas(std::uint64_t seed, int n, std::size_t max_pad, Lsn start, Lsn end) {
  std::mt19937_64 rng(seed);
  std::vector<PageRecord> v;
  for (int i = 0; i < n; ++i) {
    const Lsn e = start + 1 + rng() % (end - start);
    v.push_back(Delta(PageId{static_cast<std::uint32_t>(rng() % 3), static_cast<std::uint32_t>(rng() % 20)}, start, e,
                      i + 1, rng() % (max_pad + 1)));
  }
  std::stable_sort(v.begin(), v.end(), [](const PageRecord& a, const PageRecord& b) {
    return a.page < b.page || (a.page == b.page && a.end_lsn < b.end_lsn);
  });
  return v;
}

std::vector<const PageRecord*> Ptrs(const std::vector<PageRecord>& v) {
  std::vector<const PageRecord*> out;
  for (const auto& r : v) out.push_back(&r);
  return out;
}

// Reads every page through the index and returns the records in file order.
Status ReadAll(const LayerReader& r, std::vector<PageRecord>* out) {
  for (const auto& e : r.index()) STRATA_RETURN_IF_ERROR(r.ReadPage(e, out));
  return r.VerifyAll();
}

Status OpenAndVerify(FaultInjectionFileSystem& fs, const std::string& path) {
  auto r = LayerReader::Open(fs, path);
  if (!r.ok()) return r.status();
  std::vector<PageRecord> recs;
  return ReadAll(**r, &recs);
}

void ExpectCorruptionNamed(const Status& s, const std::string& path) {
  EXPECT_TRUE(s.is_data_loss()) << s.ToString();
  EXPECT_NE(s.message().find(path + " at offset "), std::string::npos) << s.message();
}

TEST(LayerFile, DeltaRoundTripAcrossBlocks) {
  FaultInjectionFileSystem fs(1);
  ASSERT_OK(fs.CreateDirs(kDir));
  auto recs = SortedDeltas(logservice::testing::TestSeed(1), 3000, 300, 1000, 5000);
  // One record bigger than a block target: it gets a block of its own.
  recs.insert(recs.begin() + 100, Delta(recs[99].page, 1000, recs[99].end_lsn, 99999, 200000));
  auto w = WriteLayerFile(fs, kDir, format::FileHeader{format::FileKind::kDelta, 5, 1000, 5000}, Ptrs(recs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->path, kDir + "/0000000000000005.delta");
  EXPECT_FALSE(*fs.Exists(w->path + ".tmp"));
  auto r = LayerReader::Open(fs, w->path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT((*r)->footer().block_count, 5u);
  EXPECT_EQ((*r)->size(), w->entry.size);
  EXPECT_EQ((*r)->footer_crc(), w->entry.footer_crc);
  std::vector<PageRecord> back;
  ASSERT_OK(ReadAll(**r, &back));
  ASSERT_EQ(back.size(), recs.size());
  for (std::size_t i = 0; i < recs.size(); ++i) ASSERT_EQ(back[i], recs[i]) << i;
}

TEST(LayerFile, ImageRoundTrip) {
  FaultInjectionFileSystem fs(2);
  ASSERT_OK(fs.CreateDirs(kDir));
  std::vector<PageRecord> imgs;
  for (std::uint32_t p = 0; p < 40; ++p) imgs.push_back(Image(PageId{1, p}, 400 + p, 500, testing::ToyPage{p, p}, 16384));
  auto w = WriteLayerFile(fs, kDir, format::FileHeader{format::FileKind::kImage, 6, 500, 500}, Ptrs(imgs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto r = LayerReader::Open(fs, w->path);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::vector<PageRecord> back;
  ASSERT_OK(ReadAll(**r, &back));
  ASSERT_EQ(back, imgs);
}

TEST(LayerFile, WriterRefusesMisorderedOrMisfitRecords) {
  FaultInjectionFileSystem fs(3);
  ASSERT_OK(fs.CreateDirs(kDir));
  const format::FileHeader h{format::FileKind::kDelta, 1, 100, 200};
  std::vector<PageRecord> v{Delta(PageId{1, 2}, 100, 150, 1, 0), Delta(PageId{1, 1}, 100, 150, 2, 0)};
  EXPECT_EQ(WriteLayerFile(fs, kDir, h, Ptrs(v)).status().code(), logservice::StatusCode::kInvalidArgument);
  v = {Delta(PageId{1, 1}, 100, 160, 1, 0), Delta(PageId{1, 1}, 100, 150, 2, 0)};
  EXPECT_EQ(WriteLayerFile(fs, kDir, h, Ptrs(v)).status().code(), logservice::StatusCode::kInvalidArgument);
  v = {Delta(PageId{1, 1}, 90, 150, 1, 0)};
  EXPECT_EQ(WriteLayerFile(fs, kDir, h, Ptrs(v)).status().code(), logservice::StatusCode::kInvalidArgument);
  v = {Image(PageId{1, 1}, 90, 200, {}, 1)};
  EXPECT_EQ(WriteLayerFile(fs, kDir, h, Ptrs(v)).status().code(), logservice::StatusCode::kInvalidArgument);
  auto names = fs.ListDir(kDir);
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty()) << "nothing written";
}

// A small file of each kind: every truncation and every bit flip.
class LayerDamage : public ::testing::TestWithParam<format::FileKind> {};

TEST_P(LayerDamage, EveryTruncationAndBitFlipIsRejected) {
  FaultInjectionFileSystem fs(4);
  ASSERT_OK(fs.CreateDirs(kDir));
  const bool delta = GetParam() == format::FileKind::kDelta;
  std::vector<PageRecord> recs;
  format::FileHeader h{GetParam(), 9, 100, 200};
  if (delta) {
    recs = SortedDeltas(7, 12, 20, 100, 200);
  } else {
    h.lsn_start = 200;
    for (std::uint32_t p = 0; p < 6; ++p) recs.push_back(Image(PageId{0, p}, 150, 200, testing::ToyPage{p, 1}, 8));
  }
  auto w = WriteLayerFile(fs, kDir, h, Ptrs(recs));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  const std::string good = *fs.FileContents(w->path);
  ASSERT_OK(OpenAndVerify(fs, w->path));

  for (std::size_t n = 0; n < good.size(); ++n) {
    ASSERT_OK(fs.OverwriteFile(w->path, good.substr(0, n)));
    ExpectCorruptionNamed(OpenAndVerify(fs, w->path), w->path);
  }
  for (std::size_t off = 0; off < good.size(); ++off) {
    for (int bit = 0; bit < 8; ++bit) {
      ASSERT_OK(fs.OverwriteFile(w->path, good));
      ASSERT_OK(fs.FlipBit(w->path, off, bit));
      const Status s = OpenAndVerify(fs, w->path);
      ASSERT_TRUE(s.is_data_loss()) << "flip of bit " << bit << " at " << off << " accepted: " << s.ToString();
      ASSERT_NE(s.message().find(w->path + " at offset "), std::string::npos) << s.message();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, LayerDamage, ::testing::Values(format::FileKind::kDelta, format::FileKind::kImage),
                         [](const auto& info) { return info.param == format::FileKind::kDelta ? "Delta" : "Image"; });

TEST(LayerFile, LargeFileSampledDamageIsRejected) {
  FaultInjectionFileSystem fs(5);
  ASSERT_OK(fs.CreateDirs(kDir));
  const std::uint64_t seed = logservice::testing::TestSeed(5);
  auto recs = SortedDeltas(seed, 2000, 200, 1000, 3000);
  auto w = WriteLayerFile(fs, kDir, format::FileHeader{format::FileKind::kDelta, 2, 1000, 3000}, Ptrs(recs));
  ASSERT_TRUE(w.ok());
  const std::string good = *fs.FileContents(w->path);
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 300; ++i) {
    ASSERT_OK(fs.OverwriteFile(w->path, good.substr(0, rng() % good.size())));
    ExpectCorruptionNamed(OpenAndVerify(fs, w->path), w->path);
    ASSERT_OK(fs.OverwriteFile(w->path, good));
    const std::size_t off = rng() % good.size();
    ASSERT_OK(fs.FlipBit(w->path, off, static_cast<int>(rng() % 8)));
    const Status s = OpenAndVerify(fs, w->path);
    ASSERT_TRUE(s.is_data_loss()) << "flip at " << off << " accepted";
  }
}

}  // namespace
}  // namespace strata::pageserver
