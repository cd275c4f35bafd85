// Codecs of the page server's on-disk formats (src/pageserver/format.h):
// round trips, file names, and the decoders' refusals.
#include <gtest/gtest.h>

#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"
#include "format.h"
#include "test_support.h"

namespace strata::pageserver::format {
namespace {

using rdma::Crc32c;

using rdma::PutFixed32;
using rdma::PutFixed64;

TEST(PageServerFormat, FileNamesRoundTrip) {
  std::uint64_t id = 0;
  FileKind kind;
  EXPECT_EQ(LayerFileName(0x1a, FileKind::kDelta), "000000000000001a.delta");
  ASSERT_TRUE(ParseLayerFileName(LayerFileName(0xdeadbeef, FileKind::kImage), &id, &kind));
  EXPECT_EQ(id, 0xdeadbeefu);
  EXPECT_EQ(kind, FileKind::kImage);
  for (const char* bad : {"MANIFEST", "000000000000001a.delta.tmp", "000000000000001A.delta", "00000000000001a.delta",
                          "000000000000001a.other", "000000000000001a_delta"})
    EXPECT_FALSE(ParseLayerFileName(bad, &id, &kind)) << bad;
}

TEST(PageServerFormat, HeaderRoundTripAndRefusals) {
  const FileHeader h{FileKind::kDelta, 7, 100, 200};
  const std::string b = EncodeFileHeader(h);
  ASSERT_EQ(b.size(), kFileHeaderSize);
  FileHeader out;
  ASSERT_OK(DecodeFileHeader(b, &out));
  EXPECT_EQ(out.file_id, 7u);
  EXPECT_EQ(out.lsn_start, 100u);
  EXPECT_EQ(out.lsn_end, 200u);
  EXPECT_TRUE(DecodeFileHeader(b.substr(0, 63), &out).is_data_loss());
  // Shape checks behind a valid CRC.
  auto resealed = [](std::string x) {
    PutFixed32(&x[kHdrCrcOffset], Crc32c(0, x.data(), kHdrCrcOffset));
    return x;
  };
  std::string bad = b;
  PutFixed32(&bad[kHdrKindOffset], 3);
  EXPECT_TRUE(DecodeFileHeader(resealed(bad), &out).is_data_loss());
  bad = b;
  PutFixed64(&bad[kHdrLsnStartOffset], 300);
  EXPECT_TRUE(DecodeFileHeader(resealed(bad), &out).is_data_loss());
  bad = b;
  bad[kHdrReservedOffset + 3] = 1;
  EXPECT_TRUE(DecodeFileHeader(resealed(bad), &out).is_data_loss());
  bad = EncodeFileHeader(FileHeader{FileKind::kImage, 7, 100, 200});
  EXPECT_TRUE(DecodeFileHeader(bad, &out).is_data_loss()) << "an image file lives at one LSN";
}

TEST(PageServerFormat, RecordRoundTripAndLimits) {
  PageRecord r{PageId{3, 9}, 10, 20, RecordKind::kDelta, "body"};
  std::string b;
  EncodeRecord(r, &b);
  PageRecord out;
  std::size_t used = 0;
  ASSERT_OK(DecodeRecord(b, &out, &used));
  EXPECT_EQ(out, r);
  EXPECT_EQ(used, b.size());
  EXPECT_TRUE(DecodeRecord(b.substr(0, b.size() - 1), &out, &used).is_data_loss());
  std::string huge = b;
  PutFixed32(&huge[kRecBodyLenOffset], kMaxRecordBody + 1);
  EXPECT_TRUE(DecodeRecord(huge, &out, &used).is_data_loss());
  std::string backwards = b;
  PutFixed64(&backwards[kRecStartLsnOffset], 21);
  EXPECT_TRUE(DecodeRecord(backwards, &out, &used).is_data_loss());
  std::string empty_image;
  EncodeRecord(PageRecord{PageId{1, 1}, 5, 5, RecordKind::kImage, ""}, &empty_image);
  EXPECT_TRUE(DecodeRecord(empty_image, &out, &used).is_data_loss());
}

TEST(PageServerFormat, ManifestRoundTripAndRefusals) {
  Manifest m;
  m.sequence = 5;
  m.next_file_id = 10;
  m.persisted_lsn = 900;
  m.materialized_lsn = 800;
  m.gc_horizon = 700;
  m.pin_lsn = 650;
  m.files.push_back(ManifestFile{3, FileKind::kDelta, 0xabcd, 100, 900, 4096});
  m.files.push_back(ManifestFile{9, FileKind::kImage, 0x1234, 950, 950, 200});
  m.directory = "spaces";
  Manifest out;
  ASSERT_OK(DecodeManifest(EncodeManifest(m), &out));
  EXPECT_EQ(out, m);
  auto refused = [&](Manifest x) { return DecodeManifest(EncodeManifest(x), &out).is_data_loss(); };
  Manifest x = m;
  x.gc_horizon = 901;
  EXPECT_TRUE(refused(x));
  x = m;
  x.files[1].file_id = 10;  // not below next_file_id
  EXPECT_TRUE(refused(x));
  x = m;
  x.files[0].lsn_end = 901;  // a delta file above persisted_lsn
  EXPECT_TRUE(refused(x));
  x = m;
  std::swap(x.files[0], x.files[1]);
  EXPECT_TRUE(refused(x));
  const std::string b = EncodeManifest(m);
  EXPECT_TRUE(DecodeManifest(b.substr(0, b.size() - 1), &out).is_data_loss());
  EXPECT_TRUE(DecodeManifest(b + "x", &out).is_data_loss());
}

}  // namespace
}  // namespace strata::pageserver::format
