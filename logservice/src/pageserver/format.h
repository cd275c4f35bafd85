// The page server's on-disk formats, all in one place (design:
// docs/design/page-server.md, section 7.2 and "Stage 2 storage choices").
// Change this header and the note together; bump the version of a layout
// for any change a reader of the old version would misread.
//
// All integers little-endian. Every byte that is read back is covered by a
// CRC32C (rdma/include/strata/rdma/crc32c.h); readers check every length
// against the limits below and against the bytes actually present before
// using it, and report a damaged file as kCorruption with its path and the
// offset of the damaged part. Nothing damaged is ever skipped.
//
// 1. Layer files, one kind per file, immutable once renamed into place:
//      "<file id as 16 hex digits>.delta"  delta file: records of the LSN
//          range [lsn_start, lsn_end): every record r has
//          lsn_start <= r.start_lsn <= r.end_lsn <= lsn_end, kind kDelta
//      "<file id as 16 hex digits>.image"  image file: one image per page at
//          one version (lsn_start == lsn_end == version), kind kImage;
//          r.end_lsn is the version, r.start_lsn the page's own LSN
//          (FIL_PAGE_LSN, <= version), given by whoever made the image
//    Layout:
//      FileHeader | Block* | IndexEntry* | Footer
//    Records are sorted by (space, page, end_lsn); records of one page with
//    equal end_lsn (one mini-transaction) keep the order they were ingested
//    in, which is the order they must be applied in. A block holds whole
//    records: a block is closed before the record that would take its
//    payload past kBlockTarget, so a record bigger than that gets a block
//    of its own. The index has one entry per page, sorted strictly by
//    (space, page), pointing at the first block holding that page's records.
//    The footer, at the very end, locates the index.
// 2. The manifest: a durable file (logservice/src/storage/durable_file.h,
//    DurableFileKind::kPageServerManifest) named "MANIFEST", replaced
//    atomically; the store's only commit point. Its payload is
//    ManifestHeader | FileEntry* | directory snapshot bytes.
//
// Records are opaque bytes to this layer (InnoDB redo records of one page,
// or a page image); it never parses them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/logservice/status.h"
#include "pageserver/store.h"

namespace strata::pageserver::format {

using logservice::Status;

// ---- limits (every length read from disk is checked against these) -------
inline constexpr std::size_t kMaxRecordBody = 1u << 20;  // > 64 KiB, InnoDB's largest page
inline constexpr std::size_t kBlockTarget = 64u << 10;
inline constexpr std::size_t kRecordHeaderSize = 32;
inline constexpr std::size_t kMaxBlockPayload = kBlockTarget + kRecordHeaderSize + kMaxRecordBody;
inline constexpr std::size_t kMaxDirectorySnapshot = 512u << 10;
inline constexpr std::size_t kMaxManifestFiles = 8192;

// ---- 1a. file header (at offset 0) ----------------------------------------
inline constexpr std::uint64_t kLayerMagic = 0x31594C50'41525453ull;  // "STRAPLY1" on disk
inline constexpr std::uint32_t kLayerFormatVersion = 1;
enum class FileKind : std::uint32_t { kDelta = 1, kImage = 2 };

inline constexpr std::size_t kHdrMagicOffset = 0;      // u64 kLayerMagic
inline constexpr std::size_t kHdrVersionOffset = 8;    // u32 kLayerFormatVersion
inline constexpr std::size_t kHdrKindOffset = 12;      // u32 FileKind
inline constexpr std::size_t kHdrFileIdOffset = 16;    // u64 == the number in the file name
inline constexpr std::size_t kHdrLsnStartOffset = 24;  // u64
inline constexpr std::size_t kHdrLsnEndOffset = 32;    // u64
inline constexpr std::size_t kHdrReservedOffset = 40;  // 20 bytes, zero
inline constexpr std::size_t kHdrCrcOffset = 60;       // u32 CRC32C of bytes [0, 60)
inline constexpr std::size_t kFileHeaderSize = 64;
static_assert(kHdrCrcOffset + 4 == kFileHeaderSize);

struct FileHeader {
  FileKind kind = FileKind::kDelta;
  std::uint64_t file_id = 0;
  Lsn lsn_start = 0;
  Lsn lsn_end = 0;
};

// ---- 1b. block: BlockHeader + payload (records back to back) --------------
inline constexpr std::size_t kBlkCrcOffset = 0;           // u32 CRC32C of bytes [4, 12) + payload
inline constexpr std::size_t kBlkPayloadLenOffset = 4;    // u32, 1..kMaxBlockPayload
inline constexpr std::size_t kBlkRecordCountOffset = 8;   // u32, >= 1
inline constexpr std::size_t kBlockHeaderSize = 12;
static_assert(kBlkRecordCountOffset + 4 == kBlockHeaderSize);

// ---- 1c. record (inside a block payload) ----------------------------------
enum : std::uint8_t { kRecKindDelta = 1, kRecKindImage = 2 };
inline constexpr std::size_t kRecSpaceOffset = 0;      // u32
inline constexpr std::size_t kRecPageOffset = 4;       // u32
inline constexpr std::size_t kRecStartLsnOffset = 8;   // u64 (image: page LSN)
inline constexpr std::size_t kRecEndLsnOffset = 16;    // u64 (image: version)
inline constexpr std::size_t kRecKindOffset = 24;      // u8 kRecKindDelta | kRecKindImage
inline constexpr std::size_t kRecReservedOffset = 25;  // 3 bytes, zero
inline constexpr std::size_t kRecBodyLenOffset = 28;   // u32, <= kMaxRecordBody (image: >= 1)
static_assert(kRecBodyLenOffset + 4 == kRecordHeaderSize);

// ---- 1d. index entry (one per page, after the last block) ----------------
inline constexpr std::size_t kIdxSpaceOffset = 0;        // u32
inline constexpr std::size_t kIdxPageOffset = 4;         // u32
inline constexpr std::size_t kIdxBlockOffset = 8;        // u64 file offset of the first block with this page
inline constexpr std::size_t kIdxRecordCountOffset = 16; // u32, >= 1 (image file: exactly 1)
inline constexpr std::size_t kIdxReservedOffset = 20;    // u32 zero
inline constexpr std::size_t kIdxBodyBytesOffset = 24;   // u64 sum of the page's record body lengths
inline constexpr std::size_t kIdxMinEndOffset = 32;      // u64 smallest end_lsn of the page's records
inline constexpr std::size_t kIdxMaxEndOffset = 40;      // u64 largest end_lsn of the page's records
inline constexpr std::size_t kIndexEntrySize = 48;
static_assert(kIdxMaxEndOffset + 8 == kIndexEntrySize);

struct IndexEntry {
  PageId page;
  std::uint64_t block_offset = 0;
  std::uint32_t record_count = 0;
  std::uint64_t body_bytes = 0;
  Lsn min_end_lsn = 0;
  Lsn max_end_lsn = 0;
};

// ---- 1e. footer (the last kFooterSize bytes) ------------------------------
inline constexpr std::uint64_t kFooterMagic = 0x31544F46'41525453ull;  // "STRAFOT1" on disk
inline constexpr std::size_t kFtrIndexOffsetOffset = 0;   // u64 == end of the last block
inline constexpr std::size_t kFtrIndexCountOffset = 8;    // u64 entries
inline constexpr std::size_t kFtrBlockCountOffset = 16;   // u64
inline constexpr std::size_t kFtrRecordCountOffset = 24;  // u64 == sum of the entries' record counts
inline constexpr std::size_t kFtrIndexCrcOffset = 32;     // u32 CRC32C of the index bytes
inline constexpr std::size_t kFtrVersionOffset = 36;      // u32 kLayerFormatVersion
inline constexpr std::size_t kFtrMagicOffset = 40;        // u64 kFooterMagic
inline constexpr std::size_t kFtrReservedOffset = 48;     // u32 zero
inline constexpr std::size_t kFtrCrcOffset = 52;          // u32 CRC32C of bytes [0, 52)
inline constexpr std::size_t kFooterSize = 56;
static_assert(kFtrCrcOffset + 4 == kFooterSize);

struct Footer {
  std::uint64_t index_offset = 0;
  std::uint64_t index_count = 0;
  std::uint64_t block_count = 0;
  std::uint64_t record_count = 0;
  std::uint32_t index_crc = 0;
};

// ---- 2. manifest payload ----------------------------------------------------
inline constexpr std::uint32_t kManifestFormatVersion = 1;
inline constexpr std::size_t kManVersionOffset = 0;          // u32 kManifestFormatVersion
inline constexpr std::size_t kManFileCountOffset = 4;        // u32 <= kMaxManifestFiles
inline constexpr std::size_t kManSequenceOffset = 8;         // u64 +1 per commit
inline constexpr std::size_t kManNextFileIdOffset = 16;      // u64 > every listed file id
inline constexpr std::size_t kManPersistedOffset = 24;       // u64 persisted_lsn
inline constexpr std::size_t kManMaterializedOffset = 32;    // u64 materialized_lsn <= persisted_lsn
inline constexpr std::size_t kManHorizonOffset = 40;         // u64 gc_horizon <= persisted_lsn
inline constexpr std::size_t kManPinOffset = 48;             // u64 retention pin last sent
inline constexpr std::size_t kManDirectoryLenOffset = 56;    // u32 <= kMaxDirectorySnapshot
inline constexpr std::size_t kManReservedOffset = 60;        // u32 zero
inline constexpr std::size_t kManifestHeaderSize = 64;
static_assert(kManReservedOffset + 4 == kManifestHeaderSize);

inline constexpr std::size_t kManFileIdOffset = 0;       // u64
inline constexpr std::size_t kManFileKindOffset = 8;     // u32 FileKind
inline constexpr std::size_t kManFileFooterCrcOffset = 12;  // u32 the file's footer CRC (which file, exactly)
inline constexpr std::size_t kManFileLsnStartOffset = 16;   // u64
inline constexpr std::size_t kManFileLsnEndOffset = 24;     // u64
inline constexpr std::size_t kManFileSizeOffset = 32;       // u64 bytes
inline constexpr std::size_t kManifestFileEntrySize = 40;
static_assert(kManFileSizeOffset + 8 == kManifestFileEntrySize);

struct ManifestFile {
  std::uint64_t file_id = 0;
  FileKind kind = FileKind::kDelta;
  std::uint32_t footer_crc = 0;
  Lsn lsn_start = 0;
  Lsn lsn_end = 0;
  std::uint64_t size = 0;
  bool operator==(const ManifestFile&) const = default;
};

struct Manifest {
  std::uint64_t sequence = 0;
  std::uint64_t next_file_id = 1;
  Lsn persisted_lsn = 0;
  Lsn materialized_lsn = 0;
  Lsn gc_horizon = 0;
  Lsn pin_lsn = 0;
  std::vector<ManifestFile> files;  // sorted by file id
  std::string directory;            // tablespace directory snapshot at persisted_lsn, opaque here
  bool operator==(const Manifest&) const = default;
};

inline constexpr char kManifestName[] = "MANIFEST";

// ---- codecs (format.cc) ------------------------------------------------------
std::string LayerFileName(std::uint64_t file_id, FileKind kind);
// True for "<16 hex>.delta" / "<16 hex>.image".
bool ParseLayerFileName(std::string_view name, std::uint64_t* file_id, FileKind* kind);

std::string EncodeFileHeader(const FileHeader& h);
Status DecodeFileHeader(std::string_view bytes, FileHeader* out);  // kCorruption with the reason

// Appends one record (header + body) to *dst.
void EncodeRecord(const PageRecord& r, std::string* dst);
// Parses the record at the start of `bytes`; *used is its encoded size.
Status DecodeRecord(std::string_view bytes, PageRecord* out, std::size_t* used);

std::string EncodeBlock(std::string_view payload, std::uint32_t record_count);
// Checks the block header at the start of `bytes` (the header only).
Status DecodeBlockHeader(std::string_view bytes, std::uint32_t* payload_len, std::uint32_t* record_count);
// CRC of a complete block (header + payload).
Status CheckBlockCrc(std::string_view block);

void EncodeIndexEntry(const IndexEntry& e, std::string* dst);
Status DecodeIndexEntry(std::string_view bytes, IndexEntry* out);

std::string EncodeFooter(const Footer& f);
Status DecodeFooter(std::string_view bytes, Footer* out);

std::string EncodeManifest(const Manifest& m);
Status DecodeManifest(std::string_view bytes, Manifest* out);

}  // namespace strata::pageserver::format
