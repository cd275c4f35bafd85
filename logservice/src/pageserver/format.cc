// Encoders and checking decoders for the page server's on-disk formats; the
// layouts and the rules are in format.h. Decoders look only at the bytes
// they are given and report the first thing wrong; callers add the file
// name and offset.
#include "format.h"

#include <cstdio>

#include "coding.h"
#include "strata/rdma/crc32c.h"

namespace strata::pageserver::format {

using rdma::Crc32c;
using logservice::storage::GetFixed32;
using logservice::storage::GetFixed64;
using logservice::storage::PutFixed32;
using logservice::storage::PutFixed64;

namespace {

bool AllZero(const char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

Status Bad(std::string what) { return Status::Corruption(std::move(what)); }

}  // namespace

std::string LayerFileName(std::uint64_t file_id, FileKind kind) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%016llx.%s", static_cast<unsigned long long>(file_id),
                kind == FileKind::kDelta ? "delta" : "image");
  return buf;
}

bool ParseLayerFileName(std::string_view name, std::uint64_t* file_id, FileKind* kind) {
  if (name.size() != 22 || name[16] != '.') return false;
  const std::string_view ext = name.substr(17);
  if (ext == "delta") {
    *kind = FileKind::kDelta;
  } else if (ext == "image") {
    *kind = FileKind::kImage;
  } else {
    return false;
  }
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 16; ++i) {
    const char c = name[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;
    v = (v << 4) | static_cast<std::uint64_t>(d);
  }
  *file_id = v;
  return true;
}

// ---- file header -------------------------------------------------------------

std::string EncodeFileHeader(const FileHeader& h) {
  std::string out(kFileHeaderSize, '\0');
  PutFixed64(&out[kHdrMagicOffset], kLayerMagic);
  PutFixed32(&out[kHdrVersionOffset], kLayerFormatVersion);
  PutFixed32(&out[kHdrKindOffset], static_cast<std::uint32_t>(h.kind));
  PutFixed64(&out[kHdrFileIdOffset], h.file_id);
  PutFixed64(&out[kHdrLsnStartOffset], h.lsn_start);
  PutFixed64(&out[kHdrLsnEndOffset], h.lsn_end);
  PutFixed32(&out[kHdrCrcOffset], Crc32c(0, out.data(), kHdrCrcOffset));
  return out;
}

Status DecodeFileHeader(std::string_view bytes, FileHeader* out) {
  if (bytes.size() < kFileHeaderSize) return Bad("file header: " + std::to_string(bytes.size()) + " bytes, need 64");
  const char* p = bytes.data();
  if (GetFixed64(p + kHdrMagicOffset) != kLayerMagic) return Bad("file header: bad magic");
  if (GetFixed32(p + kHdrCrcOffset) != Crc32c(0, p, kHdrCrcOffset)) return Bad("file header: CRC mismatch");
  const std::uint32_t version = GetFixed32(p + kHdrVersionOffset);
  if (version != kLayerFormatVersion) return Bad("file header: unknown version " + std::to_string(version));
  const std::uint32_t kind = GetFixed32(p + kHdrKindOffset);
  if (kind != static_cast<std::uint32_t>(FileKind::kDelta) && kind != static_cast<std::uint32_t>(FileKind::kImage))
    return Bad("file header: unknown kind " + std::to_string(kind));
  if (!AllZero(p + kHdrReservedOffset, kHdrCrcOffset - kHdrReservedOffset))
    return Bad("file header: reserved bytes not zero");
  FileHeader h;
  h.kind = static_cast<FileKind>(kind);
  h.file_id = GetFixed64(p + kHdrFileIdOffset);
  h.lsn_start = GetFixed64(p + kHdrLsnStartOffset);
  h.lsn_end = GetFixed64(p + kHdrLsnEndOffset);
  if (h.lsn_start > h.lsn_end) return Bad("file header: lsn_start above lsn_end");
  if (h.kind == FileKind::kImage && h.lsn_start != h.lsn_end)
    return Bad("file header: image file with an LSN range");
  *out = h;
  return Status::Ok();
}

// ---- records ---------------------------------------------------------------------

void EncodeRecord(const PageRecord& r, std::string* dst) {
  char h[kRecordHeaderSize] = {};
  PutFixed32(h + kRecSpaceOffset, r.page.space_id);
  PutFixed32(h + kRecPageOffset, r.page.page_no);
  PutFixed64(h + kRecStartLsnOffset, r.start_lsn);
  PutFixed64(h + kRecEndLsnOffset, r.end_lsn);
  h[kRecKindOffset] = static_cast<char>(r.kind == RecordKind::kDelta ? kRecKindDelta : kRecKindImage);
  PutFixed32(h + kRecBodyLenOffset, static_cast<std::uint32_t>(r.body.size()));
  dst->append(h, kRecordHeaderSize);
  dst->append(r.body);
}

Status DecodeRecord(std::string_view bytes, PageRecord* out, std::size_t* used) {
  if (bytes.size() < kRecordHeaderSize) return Bad("record: header cut short");
  const char* p = bytes.data();
  const std::uint8_t kind = static_cast<std::uint8_t>(p[kRecKindOffset]);
  if (kind != kRecKindDelta && kind != kRecKindImage) return Bad("record: unknown kind " + std::to_string(kind));
  if (!AllZero(p + kRecReservedOffset, kRecBodyLenOffset - kRecReservedOffset))
    return Bad("record: reserved bytes not zero");
  const std::uint32_t len = GetFixed32(p + kRecBodyLenOffset);
  if (len > kMaxRecordBody) return Bad("record: body length " + std::to_string(len) + " above the limit");
  if (len > bytes.size() - kRecordHeaderSize) return Bad("record: body runs past its block");
  PageRecord r;
  r.page = PageId{GetFixed32(p + kRecSpaceOffset), GetFixed32(p + kRecPageOffset)};
  r.start_lsn = GetFixed64(p + kRecStartLsnOffset);
  r.end_lsn = GetFixed64(p + kRecEndLsnOffset);
  r.kind = kind == kRecKindDelta ? RecordKind::kDelta : RecordKind::kImage;
  if (r.start_lsn > r.end_lsn) return Bad("record: start_lsn above end_lsn");
  if (r.kind == RecordKind::kImage && len == 0) return Bad("record: empty image");
  r.body.assign(p + kRecordHeaderSize, len);
  *out = std::move(r);
  *used = kRecordHeaderSize + len;
  return Status::Ok();
}

// ---- blocks ------------------------------------------------------------------------

std::string EncodeBlock(std::string_view payload, std::uint32_t record_count) {
  std::string out(kBlockHeaderSize, '\0');
  PutFixed32(&out[kBlkPayloadLenOffset], static_cast<std::uint32_t>(payload.size()));
  PutFixed32(&out[kBlkRecordCountOffset], record_count);
  out.append(payload);
  PutFixed32(&out[kBlkCrcOffset], Crc32c(0, out.data() + kBlkPayloadLenOffset,
                                               out.size() - kBlkPayloadLenOffset));
  return out;
}

Status DecodeBlockHeader(std::string_view bytes, std::uint32_t* payload_len, std::uint32_t* record_count) {
  if (bytes.size() < kBlockHeaderSize) return Bad("block: header cut short");
  const std::uint32_t len = GetFixed32(bytes.data() + kBlkPayloadLenOffset);
  const std::uint32_t count = GetFixed32(bytes.data() + kBlkRecordCountOffset);
  if (len == 0 || len > kMaxBlockPayload) return Bad("block: payload length " + std::to_string(len) + " out of range");
  if (count == 0 || count > len / kRecordHeaderSize) return Bad("block: record count " + std::to_string(count) + " impossible");
  *payload_len = len;
  *record_count = count;
  return Status::Ok();
}

Status CheckBlockCrc(std::string_view block) {
  if (block.size() < kBlockHeaderSize) return Bad("block: header cut short");
  const std::uint32_t crc = Crc32c(0, block.data() + kBlkPayloadLenOffset, block.size() - kBlkPayloadLenOffset);
  if (crc != GetFixed32(block.data() + kBlkCrcOffset)) return Bad("block: CRC mismatch");
  return Status::Ok();
}

// ---- index ---------------------------------------------------------------------------

void EncodeIndexEntry(const IndexEntry& e, std::string* dst) {
  char b[kIndexEntrySize] = {};
  PutFixed32(b + kIdxSpaceOffset, e.page.space_id);
  PutFixed32(b + kIdxPageOffset, e.page.page_no);
  PutFixed64(b + kIdxBlockOffset, e.block_offset);
  PutFixed32(b + kIdxRecordCountOffset, e.record_count);
  PutFixed64(b + kIdxBodyBytesOffset, e.body_bytes);
  PutFixed64(b + kIdxMinEndOffset, e.min_end_lsn);
  PutFixed64(b + kIdxMaxEndOffset, e.max_end_lsn);
  dst->append(b, kIndexEntrySize);
}

Status DecodeIndexEntry(std::string_view bytes, IndexEntry* out) {
  if (bytes.size() < kIndexEntrySize) return Bad("index entry cut short");
  const char* p = bytes.data();
  if (GetFixed32(p + kIdxReservedOffset) != 0) return Bad("index entry: reserved bytes not zero");
  IndexEntry e;
  e.page = PageId{GetFixed32(p + kIdxSpaceOffset), GetFixed32(p + kIdxPageOffset)};
  e.block_offset = GetFixed64(p + kIdxBlockOffset);
  e.record_count = GetFixed32(p + kIdxRecordCountOffset);
  e.body_bytes = GetFixed64(p + kIdxBodyBytesOffset);
  e.min_end_lsn = GetFixed64(p + kIdxMinEndOffset);
  e.max_end_lsn = GetFixed64(p + kIdxMaxEndOffset);
  if (e.record_count == 0) return Bad("index entry: no records");
  if (e.min_end_lsn > e.max_end_lsn) return Bad("index entry: min end LSN above max");
  if (e.body_bytes > static_cast<std::uint64_t>(e.record_count) * kMaxRecordBody)
    return Bad("index entry: body bytes above the limit");
  *out = e;
  return Status::Ok();
}

// ---- footer --------------------------------------------------------------------------

std::string EncodeFooter(const Footer& f) {
  std::string out(kFooterSize, '\0');
  PutFixed64(&out[kFtrIndexOffsetOffset], f.index_offset);
  PutFixed64(&out[kFtrIndexCountOffset], f.index_count);
  PutFixed64(&out[kFtrBlockCountOffset], f.block_count);
  PutFixed64(&out[kFtrRecordCountOffset], f.record_count);
  PutFixed32(&out[kFtrIndexCrcOffset], f.index_crc);
  PutFixed32(&out[kFtrVersionOffset], kLayerFormatVersion);
  PutFixed64(&out[kFtrMagicOffset], kFooterMagic);
  PutFixed32(&out[kFtrCrcOffset], Crc32c(0, out.data(), kFtrCrcOffset));
  return out;
}

Status DecodeFooter(std::string_view bytes, Footer* out) {
  if (bytes.size() != kFooterSize) return Bad("footer: " + std::to_string(bytes.size()) + " bytes, need 56");
  const char* p = bytes.data();
  if (GetFixed64(p + kFtrMagicOffset) != kFooterMagic) return Bad("footer: bad magic");
  if (GetFixed32(p + kFtrCrcOffset) != Crc32c(0, p, kFtrCrcOffset)) return Bad("footer: CRC mismatch");
  if (GetFixed32(p + kFtrVersionOffset) != kLayerFormatVersion) return Bad("footer: unknown version");
  if (GetFixed32(p + kFtrReservedOffset) != 0) return Bad("footer: reserved bytes not zero");
  Footer f;
  f.index_offset = GetFixed64(p + kFtrIndexOffsetOffset);
  f.index_count = GetFixed64(p + kFtrIndexCountOffset);
  f.block_count = GetFixed64(p + kFtrBlockCountOffset);
  f.record_count = GetFixed64(p + kFtrRecordCountOffset);
  f.index_crc = GetFixed32(p + kFtrIndexCrcOffset);
  if (f.index_offset < kFileHeaderSize) return Bad("footer: index offset inside the header");
  if ((f.index_count == 0) != (f.block_count == 0) || (f.block_count == 0) != (f.record_count == 0))
    return Bad("footer: counts disagree about emptiness");
  if (f.index_count > f.record_count || f.block_count > f.record_count)
    return Bad("footer: more index entries or blocks than records");
  *out = f;
  return Status::Ok();
}

// ---- manifest ------------------------------------------------------------------------

std::string EncodeManifest(const Manifest& m) {
  std::string out(kManifestHeaderSize, '\0');
  PutFixed32(&out[kManVersionOffset], kManifestFormatVersion);
  PutFixed32(&out[kManFileCountOffset], static_cast<std::uint32_t>(m.files.size()));
  PutFixed64(&out[kManSequenceOffset], m.sequence);
  PutFixed64(&out[kManNextFileIdOffset], m.next_file_id);
  PutFixed64(&out[kManPersistedOffset], m.persisted_lsn);
  PutFixed64(&out[kManMaterializedOffset], m.materialized_lsn);
  PutFixed64(&out[kManHorizonOffset], m.gc_horizon);
  PutFixed64(&out[kManPinOffset], m.pin_lsn);
  PutFixed32(&out[kManDirectoryLenOffset], static_cast<std::uint32_t>(m.directory.size()));
  for (const ManifestFile& f : m.files) {
    char b[kManifestFileEntrySize] = {};
    PutFixed64(b + kManFileIdOffset, f.file_id);
    PutFixed32(b + kManFileKindOffset, static_cast<std::uint32_t>(f.kind));
    PutFixed32(b + kManFileFooterCrcOffset, f.footer_crc);
    PutFixed64(b + kManFileLsnStartOffset, f.lsn_start);
    PutFixed64(b + kManFileLsnEndOffset, f.lsn_end);
    PutFixed64(b + kManFileSizeOffset, f.size);
    out.append(b, kManifestFileEntrySize);
  }
  out.append(m.directory);
  return out;
}

Status DecodeManifest(std::string_view bytes, Manifest* out) {
  if (bytes.size() < kManifestHeaderSize) return Bad("manifest: header cut short");
  const char* p = bytes.data();
  if (GetFixed32(p + kManVersionOffset) != kManifestFormatVersion) return Bad("manifest: unknown version");
  if (GetFixed32(p + kManReservedOffset) != 0) return Bad("manifest: reserved bytes not zero");
  const std::uint32_t files = GetFixed32(p + kManFileCountOffset);
  const std::uint32_t dir_len = GetFixed32(p + kManDirectoryLenOffset);
  if (files > kMaxManifestFiles) return Bad("manifest: " + std::to_string(files) + " files, above the limit");
  if (dir_len > kMaxDirectorySnapshot) return Bad("manifest: directory snapshot above the limit");
  if (bytes.size() != kManifestHeaderSize + std::size_t{files} * kManifestFileEntrySize + dir_len)
    return Bad("manifest: size does not match its counts");
  Manifest m;
  m.sequence = GetFixed64(p + kManSequenceOffset);
  m.next_file_id = GetFixed64(p + kManNextFileIdOffset);
  m.persisted_lsn = GetFixed64(p + kManPersistedOffset);
  m.materialized_lsn = GetFixed64(p + kManMaterializedOffset);
  m.gc_horizon = GetFixed64(p + kManHorizonOffset);
  m.pin_lsn = GetFixed64(p + kManPinOffset);
  if (m.materialized_lsn > m.persisted_lsn || m.gc_horizon > m.persisted_lsn)
    return Bad("manifest: materialized LSN or GC horizon above persisted LSN");
  const char* e = p + kManifestHeaderSize;
  for (std::uint32_t i = 0; i < files; ++i, e += kManifestFileEntrySize) {
    ManifestFile f;
    f.file_id = GetFixed64(e + kManFileIdOffset);
    const std::uint32_t kind = GetFixed32(e + kManFileKindOffset);
    if (kind != static_cast<std::uint32_t>(FileKind::kDelta) && kind != static_cast<std::uint32_t>(FileKind::kImage))
      return Bad("manifest: file entry " + std::to_string(i) + " of unknown kind");
    f.kind = static_cast<FileKind>(kind);
    f.footer_crc = GetFixed32(e + kManFileFooterCrcOffset);
    f.lsn_start = GetFixed64(e + kManFileLsnStartOffset);
    f.lsn_end = GetFixed64(e + kManFileLsnEndOffset);
    f.size = GetFixed64(e + kManFileSizeOffset);
    if (f.file_id == 0 || f.file_id >= m.next_file_id)
      return Bad("manifest: file id " + std::to_string(f.file_id) + " outside [1, next_file_id)");
    if (!m.files.empty() && f.file_id <= m.files.back().file_id) return Bad("manifest: file ids not ascending");
    if (f.lsn_start > f.lsn_end || (f.kind == FileKind::kImage && f.lsn_start != f.lsn_end))
      return Bad("manifest: file " + std::to_string(f.file_id) + " has a bad LSN range");
    if (f.kind == FileKind::kDelta && f.lsn_end > m.persisted_lsn)
      return Bad("manifest: delta file " + std::to_string(f.file_id) + " ends above persisted LSN");
    if (f.size < kFileHeaderSize + kFooterSize) return Bad("manifest: file " + std::to_string(f.file_id) + " too small");
    m.files.push_back(f);
  }
  m.directory.assign(e, dir_len);
  *out = std::move(m);
  return Status::Ok();
}

}  // namespace strata::pageserver::format
