// Fuzz target: every reader of on-disk bytes in the storage layer, the code
// that must never trust a torn or corrupt segment: ParseRecord (segment
// records) and recovery's PeekRecordHeader / ChecksOutWithPayloadLength /
// FindValidRecord, DecodeSegmentHeader and DecodeDurableFile (checkpoint,
// node meta, tail). Checked invariants: a parser never claims bytes beyond its
// input, and whatever it accepts re-encodes to exactly the bytes it read
// (so an accepted record is one a writer could have produced).
//
// libFuzzer (clang): configure the top level with -DCMAKE_CXX_COMPILER=clang++,
// build logstore_record_fuzz, run ./logstore_record_fuzz corpus/
// Any compiler: the same target linked with fuzz/standalone_fuzz_main.cc
// runs seeded, mutation-based rounds as the ctest logstore.RecordParserFuzz.
//
// The first input byte picks the reader; with bit 3 set the input's CRCs are
// recomputed first, so mutations reach the checks behind the CRC.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"
#include "disk_format.h"

using namespace strata::logservice;
using namespace strata::logservice::storage;

using strata::rdma::Crc32c;
using strata::rdma::GetFixed32;
using strata::rdma::PutFixed32;

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "record_parser_fuzz: invariant broken: %s\n", what);
  std::abort();
}

void FixRecordCrcs(std::string& b) {
  for (std::size_t off = 0; off + kRecordHeaderSize <= b.size();) {
    const std::uint32_t len = GetFixed32(b.data() + off + kRecPayloadLenOffset);
    if (len > b.size() - off - kRecordHeaderSize) break;
    std::uint32_t crc = Crc32c(0, b.data() + off + kRecTypeOffset, kRecordHeaderSize - kRecTypeOffset);
    crc = Crc32c(crc, b.data() + off + kRecordHeaderSize, len);
    PutFixed32(b.data() + off + kRecCrcOffset, crc);
    off += kRecordHeaderSize + len;
  }
}

// Recovery's judging readers on the same bytes: whatever they accept must be
// a record ParseRecord accepts at that very offset.
void Judges(std::string_view bytes) {
  RecordHeader h;
  std::string why;
  if (PeekRecordHeader(bytes, &h) && !ValidRecordShape(h, &why)) Fail("peeked a header of invalid shape");
  if (bytes.size() >= kRecordHeaderSize &&
      ChecksOutWithPayloadLength(bytes, static_cast<std::uint32_t>(bytes.size() - kRecordHeaderSize))) {
    std::string copy(bytes);
    PutFixed32(copy.data() + kRecPayloadLenOffset, static_cast<std::uint32_t>(bytes.size() - kRecordHeaderSize));
    std::string_view payload;
    if (ParseRecord(copy, &h, &payload, &why) != ParseResult::kOk) Fail("length check accepted a bad record");
  }
  const std::size_t at = FindValidRecord(bytes, 0);
  if (at == std::string_view::npos) return;
  if (at >= bytes.size()) Fail("scan found a record beyond the input");
  std::string_view payload;
  if (ParseRecord(bytes.substr(at), &h, &payload, &why) != ParseResult::kOk) Fail("scan found a bad record");
  for (std::size_t before = 0; before < at; ++before)
    if (ParseRecord(bytes.substr(before), &h, &payload, &why) == ParseResult::kOk) Fail("scan skipped a record");
}

void Records(std::string_view bytes) {
  Judges(bytes);
  while (!bytes.empty()) {
    RecordHeader h;
    std::string_view payload;
    std::string why;
    const ParseResult r = ParseRecord(bytes, &h, &payload, &why);
    if (r != ParseResult::kOk) {
      if (why.empty() && r == ParseResult::kBad) Fail("kBad without a reason");
      return;
    }
    const std::size_t used = kRecordHeaderSize + payload.size();
    if (used > bytes.size()) Fail("record beyond the input");
    if (payload.data() != bytes.data() + kRecordHeaderSize) Fail("payload not inside the record");
    std::string shape_why;
    if (!ValidRecordShape(h, &shape_why)) Fail("accepted a record of invalid shape");
    std::string again;
    EncodeRecord(h, payload, &again);
    if (again != bytes.substr(0, used)) Fail("accepted record does not re-encode to its bytes");
    bytes.remove_prefix(used);
  }
}

void Segment(std::string_view bytes, bool fix) {
  std::string b(bytes);
  if (fix && b.size() >= kSegmentHeaderSize) {
    PutFixed32(b.data() + kSegCrcOffset, Crc32c(0, b.data(), kSegCrcOffset));
  }
  SegmentHeader h;
  if (!DecodeSegmentHeader(b, &h).ok()) return;
  if (b.size() < kSegmentHeaderSize) Fail("segment header accepted from too few bytes");
  if (EncodeSegmentHeader(h) != b.substr(0, kSegmentHeaderSize)) Fail("segment header does not re-encode");
}

void Durable(std::string_view bytes, bool fix) {
  std::string b(bytes);
  if (fix && b.size() >= kDurableFileHeaderSize) {
    PutFixed32(b.data() + kDfPayloadLenOffset, static_cast<std::uint32_t>(b.size() - kDurableFileHeaderSize));
    std::uint32_t crc = Crc32c(0, b.data(), kDfCrcOffset);
    crc = Crc32c(crc, b.data() + kDurableFileHeaderSize, b.size() - kDurableFileHeaderSize);
    PutFixed32(b.data() + kDfCrcOffset, crc);
  }
  for (auto kind : {DurableFileKind::kCheckpoint, DurableFileKind::kNodeMeta, DurableFileKind::kTail}) {
    std::string_view payload;
    if (!DecodeDurableFile(b, kind, &payload).ok()) continue;
    if (payload.size() + kDurableFileHeaderSize != b.size()) Fail("durable file payload length");
    if (EncodeDurableFile(kind, payload) != b) Fail("durable file does not re-encode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool fix = (mode & 8) != 0;
  switch (mode % 3) {
    case 0:
      if (fix) FixRecordCrcs(bytes);
      Records(bytes);
      break;
    case 1: Segment(bytes, fix); break;
    case 2: Durable(bytes, fix); break;
  }
  return 0;
}

// Seed inputs for the standalone driver (libFuzzer takes a corpus directory):
// valid encodings of each format, so mutations start from real structure.
extern "C" void StrataFuzzSeeds(std::vector<std::string>* seeds) {
  std::string recs;
  EncodeRecord(RecordHeader{RecordType::kRedo, 5, 100, 105, 2}, "hello", &recs);
  EncodeRecord(RecordHeader{RecordType::kTruncate, 0, 50, 50, 3}, "", &recs);
  EncodeRecord(RecordHeader{RecordType::kRelease, 0, 40, 40, 3}, "", &recs);
  std::string page(8 + 16, 'p');
  EncodeRecord(RecordHeader{RecordType::kPageImage, static_cast<std::uint32_t>(page.size()), 60, 60, 3}, page, &recs);
  for (char mode : {'\x00', '\x08'}) seeds->push_back(std::string(1, mode) + recs);
  const std::string seg = EncodeSegmentHeader(SegmentHeader{SegmentKind::kRedo, 7, 4096});
  for (char mode : {'\x01', '\x09'}) seeds->push_back(std::string(1, mode) + seg + recs);
  const std::string ckpt = EncodeDurableFile(DurableFileKind::kCheckpoint, std::string(16, '\x01') + "meta");
  for (char mode : {'\x02', '\x0a'}) seeds->push_back(std::string(1, mode) + ckpt);
}
