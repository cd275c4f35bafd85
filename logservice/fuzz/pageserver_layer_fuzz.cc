// Fuzz target: the page server's readers of on-disk bytes (src/pageserver/
// format.h): LayerReader over whole delta / image files (Open, ReadPage of
// every index entry, VerifyAll) and DecodeManifest. Checked invariants:
// nothing crashes or reads past its input; a file every check accepts is
// exactly the file WriteLayerFile writes for the records read back from it
// (so an accepted file is one a writer could have produced); an accepted
// manifest re-encodes to its bytes.
//
// libFuzzer (clang): build pageserver_layer_fuzz, run it on a corpus dir.
// Any compiler: pageserver_layer_fuzz_smoke runs seeded mutation rounds
// (rdma/fuzz/standalone_fuzz_main.cc) as the ctest pageserver.LayerFuzz.
//
// The first input byte picks the reader; with bit 3 set the CRCs in the
// input are recomputed first, so mutations reach the checks behind them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"
#include "format.h"
#include "layer_reader.h"
#include "layer_writer.h"
#include "storage/fault_injection_file_system.h"

using namespace strata::pageserver;
using strata::logservice::FaultInjectionFileSystem;
using strata::rdma::Crc32c;
using strata::rdma::GetFixed32;
using strata::rdma::GetFixed64;
using strata::rdma::PutFixed32;

namespace {

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "pageserver_layer_fuzz: invariant broken: %s\n", what);
  std::abort();
}

void FixLayerCrcs(std::string& b) {
  if (b.size() < format::kFileHeaderSize + format::kFooterSize) return;
  PutFixed32(&b[format::kHdrCrcOffset], Crc32c(0, b.data(), format::kHdrCrcOffset));
  char* f = &b[b.size() - format::kFooterSize];
  const std::uint64_t index_offset = GetFixed64(f + format::kFtrIndexOffsetOffset);
  const std::uint64_t footer_at = b.size() - format::kFooterSize;
  for (std::uint64_t off = format::kFileHeaderSize; off + format::kBlockHeaderSize <= std::min(index_offset, footer_at);) {
    const std::uint32_t len = GetFixed32(&b[off + format::kBlkPayloadLenOffset]);
    if (len > footer_at - off - format::kBlockHeaderSize) break;
    PutFixed32(&b[off], Crc32c(0, &b[off + 4], format::kBlockHeaderSize - 4 + len));
    off += format::kBlockHeaderSize + len;
  }
  if (index_offset <= footer_at)
    PutFixed32(f + format::kFtrIndexCrcOffset, Crc32c(std::string_view(b).substr(index_offset, footer_at - index_offset)));
  PutFixed32(f + format::kFtrCrcOffset, Crc32c(0, f, format::kFtrCrcOffset));
}

void Layer(const std::string& bytes) {
  FaultInjectionFileSystem fs(1);
  if (!fs.CreateDirs("/d").ok() || !fs.OverwriteFile("/d/in", bytes).ok()) Fail("in-memory file system");
  auto r = LayerReader::Open(fs, "/d/in");
  if (!r.ok()) {
    if (!r.status().is_data_loss()) Fail("a bad file reported as something other than corruption");
    return;
  }
  std::vector<PageRecord> recs;
  bool all_ok = true;
  for (const auto& e : (*r)->index()) {
    std::vector<PageRecord> page;
    const Status s = (*r)->ReadPage(e, &page);
    if (!s.ok()) {
      if (!s.is_data_loss()) Fail("ReadPage error other than corruption");
      all_ok = false;
      continue;
    }
    for (const auto& rec : page)
      if (!(rec.page == e.page) || rec.body.size() > format::kMaxRecordBody) Fail("ReadPage returned a foreign record");
    recs.insert(recs.end(), page.begin(), page.end());
  }
  if (!(*r)->VerifyAll().ok() || !all_ok) return;
  std::vector<const PageRecord*> ptrs;
  for (const auto& rec : recs) ptrs.push_back(&rec);
  auto w = WriteLayerFile(fs, "/d", (*r)->header(), ptrs);
  if (!w.ok()) Fail("records of an accepted file were refused by the writer");
  if (*fs.FileContents(w->path) != bytes) Fail("accepted file is not what the writer writes for its records");
}

void ManifestBytes(std::string b, bool fix) {
  (void)fix;
  format::Manifest m;
  if (!format::DecodeManifest(b, &m).ok()) return;
  if (format::EncodeManifest(m) != b) Fail("accepted manifest does not re-encode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::string bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode % 2 == 0) {
    if (mode & 8) FixLayerCrcs(bytes);
    Layer(bytes);
  } else {
    ManifestBytes(bytes, mode & 8);
  }
  return 0;
}

extern "C" void StrataFuzzSeeds(std::vector<std::string>* seeds) {
  FaultInjectionFileSystem fs(1);
  if (!fs.CreateDirs("/d").ok()) Fail("in-memory file system");
  std::vector<PageRecord> deltas, images;
  for (std::uint32_t i = 0; i < 6; ++i)
    deltas.push_back(PageRecord{{i / 2, i}, 100, 100 + i * 10, RecordKind::kDelta, std::string(5 + i, 'd')});
  for (std::uint32_t i = 0; i < 3; ++i)
    images.push_back(PageRecord{{1, i}, 150, 200, RecordKind::kImage, std::string(16, 'i')});
  auto write = [&](const format::FileHeader& h, const std::vector<PageRecord>& recs) {
    std::vector<const PageRecord*> ptrs;
    for (const auto& r : recs) ptrs.push_back(&r);
    auto w = WriteLayerFile(fs, "/d", h, ptrs);
    if (!w.ok()) Fail("seed");
    const std::string file = *fs.FileContents(w->path);
    for (char mode : {'\x00', '\x08'}) seeds->push_back(std::string(1, mode) + file);
  };
  write(format::FileHeader{format::FileKind::kDelta, 1, 100, 200}, deltas);
  write(format::FileHeader{format::FileKind::kImage, 2, 200, 200}, images);
  format::Manifest m;
  m.sequence = 3;
  m.next_file_id = 5;
  m.persisted_lsn = 200;
  m.gc_horizon = 100;
  m.files.push_back(format::ManifestFile{1, format::FileKind::kDelta, 7, 100, 200, 500});
  m.files.push_back(format::ManifestFile{2, format::FileKind::kImage, 9, 200, 200, 300});
  m.directory = "dir";
  seeds->push_back(std::string(1, '\x01') + format::EncodeManifest(m));
}
