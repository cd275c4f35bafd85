// The on-disk codecs: round trips, and every rejection path of each reader.
#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"
#include "disk_format.h"
#include "test_support.h"

namespace strata::logservice::storage {
namespace {

using rdma::Crc32c;
using rdma::GetFixed32;
using rdma::PutFixed32;
using rdma::PutFixed64;

std::string OneRecord(RecordHeader h, std::string_view payload) {
  std::string out;
  EncodeRecord(h, payload, &out);
  return out;
}

TEST(DiskFormat, SegmentFileNames) {
  EXPECT_EQ(SegmentFileName(1), "0000000000000001.seg");
  EXPECT_EQ(SegmentFileName(0xabcdef), "0000000000abcdef.seg");
  std::uint64_t seq = 0;
  EXPECT_TRUE(ParseSegmentFileName("0000000000abcdef.seg", &seq));
  EXPECT_EQ(seq, 0xabcdefu);
  for (const char* bad : {"0000000000abcdef.se", "000000000abcdef.seg", "0000000000ABCDEF.seg",
                          "0000000000abcdeg.seg", "0000000000abcdef.seg.tmp", "checkpoint"})
    EXPECT_FALSE(ParseSegmentFileName(bad, &seq)) << bad;
}

TEST(DiskFormat, SegmentHeaderRoundTripAndRejections) {
  SegmentHeader in{SegmentKind::kPages, 42, 123456789};
  std::string bytes = EncodeSegmentHeader(in);
  ASSERT_EQ(bytes.size(), kSegmentHeaderSize);
  SegmentHeader out;
  ASSERT_OK(DecodeSegmentHeader(bytes, &out));
  EXPECT_EQ(out.kind, in.kind);
  EXPECT_EQ(out.sequence, 42u);
  EXPECT_EQ(out.base_lsn, 123456789u);

  EXPECT_TRUE(DecodeSegmentHeader(bytes.substr(0, kSegmentHeaderSize - 1), &out).is_data_loss());
  for (std::size_t i = 0; i < kSegmentHeaderSize; ++i) {  // every single-bit flip is caught
    std::string bad = bytes;
    bad[i] ^= 0x10;
    EXPECT_TRUE(DecodeSegmentHeader(bad, &out).is_data_loss()) << "byte " << i;
  }
  // Valid CRC but a future version / unknown kind / reserved bits: refused.
  auto resigned = [](std::string b) {
    PutFixed32(&b[kSegCrcOffset], Crc32c(0, b.data(), kSegCrcOffset));
    return b;
  };
  std::string v2 = bytes;
  PutFixed32(&v2[kSegVersionOffset], kSegmentFormatVersion + 1);
  EXPECT_NE(DecodeSegmentHeader(resigned(v2), &out).message().find("version"), std::string::npos);
  std::string kind = bytes;
  PutFixed32(&kind[kSegKindOffset], 7);
  EXPECT_TRUE(DecodeSegmentHeader(resigned(kind), &out).is_data_loss());
  std::string reserved = bytes;
  reserved[kSegReservedOffset] = 1;
  EXPECT_TRUE(DecodeSegmentHeader(resigned(reserved), &out).is_data_loss());
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_TRUE(DecodeSegmentHeader(resigned(magic), &out).is_data_loss());
}

TEST(DiskFormat, RecordRoundTripForEveryType) {
  const std::string redo = "some redo bytes";
  std::string page_payload(kPageKeySize, '\0');
  page_payload += "image";
  struct Case { RecordHeader h; std::string payload; };
  std::vector<Case> cases = {
      {{RecordType::kRedo, 0, 100, 100 + redo.size(), 3}, redo},
      {{RecordType::kTruncate, 0, 500, 500, 4}, ""},
      {{RecordType::kRelease, 0, 50, 50, 0}, ""},
      {{RecordType::kPageImage, 0, 77, 77, 0}, page_payload},
  };
  std::string all;
  for (auto& c : cases) EncodeRecord(c.h, c.payload, &all);
  std::string_view rest = all;
  for (auto& c : cases) {
    RecordHeader h;
    std::string_view payload;
    std::string why;
    ASSERT_EQ(ParseRecord(rest, &h, &payload, &why), ParseResult::kOk) << why;
    EXPECT_EQ(h.type, c.h.type);
    EXPECT_EQ(h.start_lsn, c.h.start_lsn);
    EXPECT_EQ(h.end_lsn, c.h.end_lsn);
    EXPECT_EQ(h.epoch, c.h.epoch);
    EXPECT_EQ(payload, c.payload);
    rest.remove_prefix(kRecordHeaderSize + payload.size());
  }
  EXPECT_TRUE(rest.empty());
}

TEST(DiskFormat, RecordReaderRejectsEveryDamage) {
  const std::string payload = "0123456789abcdef";
  const std::string good = OneRecord({RecordType::kRedo, 0, 1000, 1016, 9}, payload);
  RecordHeader h;
  std::string_view out;
  std::string why;
  // Torn: every strict prefix is incomplete, never OK.
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_EQ(ParseRecord(good.substr(0, n), &h, &out, &why), ParseResult::kIncomplete) << n;
  // Any single bit flip anywhere: never OK (CRC or shape check).
  for (std::size_t i = 0; i < good.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      EXPECT_NE(ParseRecord(bad, &h, &out, &why), ParseResult::kOk) << "byte " << i << " bit " << bit;
    }
  }
  // All zeros (a hole from a lost write) is not a record.
  EXPECT_EQ(ParseRecord(std::string(64, '\0'), &h, &out, &why), ParseResult::kBad);
}

TEST(DiskFormat, RecordShapeRules) {
  std::string why;
  EXPECT_FALSE(ValidRecordShape({RecordType::kRedo, 0, 10, 10, 1}, &why));            // empty redo
  EXPECT_FALSE(ValidRecordShape({RecordType::kRedo, 5, 10, 16, 1}, &why));            // range != length
  EXPECT_FALSE(ValidRecordShape({RecordType::kRedo, 5, 10, 5, 1}, &why));             // end < start
  EXPECT_FALSE(ValidRecordShape({RecordType::kRedo, kMaxRecordPayload + 1, 0, kMaxRecordPayload + 1, 1}, &why));
  EXPECT_FALSE(ValidRecordShape({RecordType::kTruncate, 1, 10, 10, 1}, &why));        // control with payload
  EXPECT_FALSE(ValidRecordShape({RecordType::kRelease, 0, 10, 11, 1}, &why));         // control with range
  EXPECT_FALSE(ValidRecordShape({RecordType::kPageImage, kPageKeySize, 1, 1, 0}, &why));  // no image
  EXPECT_FALSE(ValidRecordShape({static_cast<RecordType>(9), 0, 0, 0, 0}, &why));
  EXPECT_TRUE(ValidRecordShape({RecordType::kRedo, 6, 10, 16, 1}, &why));
}

// The readers recovery uses to judge bytes ParseRecord refused.
TEST(DiskFormat, RecoveryJudgesDamageWithPeekLengthAndScan) {
  const std::string first = OneRecord({RecordType::kRedo, 0, 100, 105, 1}, "hello");
  const std::string second = OneRecord({RecordType::kRedo, 0, 105, 111, 1}, "world!");
  RecordHeader h;
  // Peek reads a header whose payload is missing or damaged, not a short or malformed one.
  ASSERT_TRUE(PeekRecordHeader(first.substr(0, kRecordHeaderSize), &h));
  EXPECT_EQ(h.start_lsn, 100u);
  EXPECT_EQ(h.payload_len, 5u);
  std::string bad_payload = first;
  bad_payload.back() ^= 1;
  EXPECT_TRUE(PeekRecordHeader(bad_payload, &h));
  EXPECT_FALSE(PeekRecordHeader(first.substr(0, kRecordHeaderSize - 1), &h));
  EXPECT_FALSE(PeekRecordHeader(std::string(kRecordHeaderSize, '\0'), &h)) << "type 0";
  std::string reserved = first;
  reserved[kRecReservedOffset] = 1;
  EXPECT_FALSE(PeekRecordHeader(reserved, &h));

  // A page image whose length field alone rotted checks out with its true length.
  std::string page_payload(kPageKeySize, '\0');
  page_payload += "image";
  std::string page = OneRecord({RecordType::kPageImage, 0, 7, 7, 1}, page_payload);
  const auto true_len = static_cast<std::uint32_t>(page_payload.size());
  page[kRecPayloadLenOffset + 1] ^= 1;
  std::string_view out;
  std::string why;
  EXPECT_EQ(ParseRecord(page, &h, &out, &why), ParseResult::kIncomplete) << "looks cut short by EOF";
  EXPECT_TRUE(ChecksOutWithPayloadLength(page, true_len));
  EXPECT_FALSE(ChecksOutWithPayloadLength(page, true_len - 1));
  EXPECT_FALSE(ChecksOutWithPayloadLength(page, true_len + 1)) << "beyond the bytes present";
  EXPECT_FALSE(ChecksOutWithPayloadLength(first.substr(0, 10), 0));

  // The scan tries every offset: it finds a record after damage, and after
  // a length field that claims to swallow it.
  std::string file = std::string(3, 'x') + bad_payload + second;
  EXPECT_EQ(FindValidRecord(file, 0), 3 + first.size());
  EXPECT_EQ(FindValidRecord(file, 3 + first.size() + 1), std::string_view::npos);
  std::string swallowing = first + second;
  swallowing[kRecPayloadLenOffset + 2] ^= 1;
  EXPECT_EQ(FindValidRecord(swallowing, 1), first.size());
  EXPECT_EQ(FindValidRecord(std::string(4096, '\0'), 0), std::string_view::npos);
  EXPECT_EQ(FindValidRecord(first, first.size()), std::string_view::npos);
  EXPECT_EQ(FindValidRecord(first, 1000), std::string_view::npos) << "from beyond the end";
}

TEST(DiskFormat, DurableFileRoundTripAndRejections) {
  const std::string payload = "checkpoint payload";
  std::string good = EncodeDurableFile(DurableFileKind::kCheckpoint, payload);
  std::string_view out;
  ASSERT_OK(DecodeDurableFile(good, DurableFileKind::kCheckpoint, &out));
  EXPECT_EQ(out, payload);
  for (std::size_t n = 0; n < good.size(); ++n)
    EXPECT_TRUE(DecodeDurableFile(good.substr(0, n), DurableFileKind::kCheckpoint, &out).is_data_loss()) << n;
  EXPECT_TRUE(DecodeDurableFile(good + "x", DurableFileKind::kCheckpoint, &out).is_data_loss());
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] ^= 0x01;
    EXPECT_TRUE(DecodeDurableFile(bad, DurableFileKind::kCheckpoint, &out).is_data_loss()) << i;
  }
  std::string huge = good;
  PutFixed32(&huge[kDfPayloadLenOffset], 0xffffffffu);
  EXPECT_TRUE(DecodeDurableFile(huge, DurableFileKind::kCheckpoint, &out).is_data_loss());
}


// Each rejection path of the record and durable-file readers, reached on
// purpose (CRCs recomputed where the check sits behind the CRC), with the
// result kind and the reason it reports.
TEST(DiskFormat, EveryRejectionPathReportsItsReason) {
  RecordHeader h;
  std::string_view out;
  std::string why;
  const std::string good = OneRecord({RecordType::kRedo, 0, 1000, 1004, 9}, "abcd");
  auto parse = [&](const std::string& b) {
    why.clear();
    return ParseRecord(b, &h, &out, &why);
  };
  auto reseal = [](std::string b) {
    const std::uint32_t len = GetFixed32(&b[kRecPayloadLenOffset]);
    std::uint32_t crc = Crc32c(0, b.data() + kRecTypeOffset, kRecordHeaderSize - kRecTypeOffset);
    crc = Crc32c(crc, b.data() + kRecordHeaderSize, std::min<std::size_t>(len, b.size() - kRecordHeaderSize));
    PutFixed32(&b[kRecCrcOffset], crc);
    return b;
  };
  ASSERT_EQ(parse(good), ParseResult::kOk);
  EXPECT_EQ(parse(good.substr(0, kRecordHeaderSize - 1)), ParseResult::kIncomplete);
  EXPECT_EQ(why, "record header cut short");
  EXPECT_EQ(parse(good.substr(0, kRecordHeaderSize + 2)), ParseResult::kIncomplete);
  EXPECT_EQ(why, "record payload cut short");
  std::string b = good;
  b[kRecReservedOffset + 1] = 1;
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_EQ(why, "record reserved bytes set");
  b = good;
  b[kRecTypeOffset] = 9;
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_EQ(why, "unknown record type 9");
  b = good;
  PutFixed64(&b[kRecEndLsnOffset], 1005);
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_EQ(why, "redo record whose LSN range does not match its length");
  b = good;
  PutFixed32(&b[kRecPayloadLenOffset], 0);
  PutFixed64(&b[kRecEndLsnOffset], 1000);
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_NE(why.find("redo record with payload length 0"), std::string::npos) << why;
  // An oversize length is refused from the header alone, before any payload.
  b = good.substr(0, kRecordHeaderSize);
  PutFixed32(&b[kRecPayloadLenOffset], static_cast<std::uint32_t>(kMaxRecordPayload + 1));
  PutFixed64(&b[kRecEndLsnOffset], 1000 + kMaxRecordPayload + 1);
  EXPECT_EQ(parse(b), ParseResult::kBad);
  EXPECT_EQ(why, "redo record with payload length " + std::to_string(kMaxRecordPayload + 1));
  b = good;
  b[kRecTypeOffset] = static_cast<char>(RecordType::kTruncate);
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_EQ(why, "control record with a payload or an LSN range");
  b = good;
  b[kRecTypeOffset] = static_cast<char>(RecordType::kPageImage);
  EXPECT_EQ(parse(reseal(b)), ParseResult::kBad);
  EXPECT_EQ(why, "page record with bad length or LSN range");
  b = good;
  b.back() ^= 1;
  EXPECT_EQ(parse(b), ParseResult::kBad);
  EXPECT_EQ(why, "record CRC mismatch");

  // Durable files (checkpoint, node meta, tail).
  const std::string df = EncodeDurableFile(DurableFileKind::kCheckpoint, "payload!");
  auto dreseal = [](std::string d) {
    std::uint32_t crc = Crc32c(0, d.data(), kDfCrcOffset);
    crc = Crc32c(crc, d.data() + kDurableFileHeaderSize, d.size() - kDurableFileHeaderSize);
    PutFixed32(&d[kDfCrcOffset], crc);
    return d;
  };
  auto dmsg = [&](const std::string& d, DurableFileKind kind = DurableFileKind::kCheckpoint) {
    Status st = DecodeDurableFile(d, kind, &out);
    EXPECT_TRUE(st.is_data_loss()) << st.ToString();
    return st.message();
  };
  EXPECT_EQ(dmsg(df.substr(0, 10)), "durable file: only 10 bytes");
  EXPECT_NE(dmsg(df + "x").find("does not match file size"), std::string::npos);
  std::string d = df;
  d.back() ^= 1;
  EXPECT_EQ(dmsg(d), "durable file: CRC mismatch");
  d = df;
  d[kDfMagicOffset] = 'X';
  EXPECT_EQ(dmsg(dreseal(d)), "durable file: bad magic");
  d = df;
  PutFixed32(&d[kDfVersionOffset], kFormatVersion + 1);
  EXPECT_EQ(dmsg(dreseal(d)), "durable file: unsupported format version " + std::to_string(kFormatVersion + 1));
  EXPECT_EQ(dmsg(df, DurableFileKind::kNodeMeta), "durable file: wrong kind");
  EXPECT_EQ(dmsg(df, DurableFileKind::kTail), "durable file: wrong kind");

  // Segment headers: the reasons (the paths themselves are covered above).
  SegmentHeader sh;
  const std::string seg = EncodeSegmentHeader({SegmentKind::kRedo, 1, 0});
  EXPECT_EQ(DecodeSegmentHeader(seg.substr(0, 5), &sh).message(), "segment header: only 5 bytes");
  std::string s2 = seg;
  s2[kSegSequenceOffset] ^= 1;
  EXPECT_EQ(DecodeSegmentHeader(s2, &sh).message(), "segment header: CRC mismatch");
}

}  // namespace
}  // namespace strata::logservice::storage
