// The on-disk formats of the logservice storage layer, all in one place.
// Documented in docs/logservice-storage.md; change both together, and bump
// kFormatVersion for any change a version-1 reader would misread.
//
// All integers little-endian. Every byte that is read back is covered by a
// CRC32C; readers trust no length before checking it against the limits
// below and the bytes actually present.
//
// 1. Segment files "<sequence as 16 hex digits>.seg", in a directory of their
//    own (one for redo, one for pages). Sequence numbers are consecutive;
//    only the newest segment is ever appended to, older ones are sealed
//    (fdatasync'ed before the next one is created). A segment is:
//      SegmentHeader, then records back to back, no padding.
// 2. Records: RecordHeader + payload. Types:
//      kRedo       redo bytes [start_lsn, end_lsn), end - start == payload_len
//      kTruncate   TruncateAfter(start_lsn): drop data at LSN >= start_lsn
//                  (redo) or > start_lsn (pages); fence epoch in `epoch`;
//                  start == end, no payload
//      kRelease    ReleaseBelow(start_lsn); start == end, no payload
//      kPageImage  page image at LSN start_lsn (== end_lsn); payload is
//                  u32 space_id, u32 page_no, image bytes
//      kTail       the tail register (redo only, segment format 2): the
//                  partial last block at start_lsn, whose bytes up to
//                  end_lsn are data; payload is the block image
//                  (0 < end - start <= payload_len), epoch its writer's
//    Recovery replays records in file order; the order is the history.
// 3. Durable small files (the checkpoint): DurableFileHeader + payload,
//    replaced atomically (temp + fdatasync + rename + fsync dir).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice::storage {

inline constexpr std::uint32_t kFormatVersion = 1;
// Segments: 2 added kTail records (docs/design/logservice-tail-in-journal.md);
// version 1 segments, which have none, are still read.
inline constexpr std::uint32_t kSegmentFormatVersion = 2;

// ---- 1. segment header -------------------------------------------------
inline constexpr std::uint64_t kSegmentMagic = 0x31474553'41525453ull;  // "STRASEG1" on disk
enum class SegmentKind : std::uint32_t { kRedo = 1, kPages = 2 };

inline constexpr std::size_t kSegMagicOffset = 0;      // u64 kSegmentMagic
inline constexpr std::size_t kSegVersionOffset = 8;    // u32 kSegmentFormatVersion
inline constexpr std::size_t kSegKindOffset = 12;      // u32 SegmentKind
inline constexpr std::size_t kSegSequenceOffset = 16;  // u64 == number in the file name
inline constexpr std::size_t kSegBaseLsnOffset = 24;   // u64 released LSN when the segment was created
inline constexpr std::size_t kSegReservedOffset = 32;  // u32 zero
inline constexpr std::size_t kSegCrcOffset = 36;       // u32 CRC32C of bytes [0, 36)
inline constexpr std::size_t kSegmentHeaderSize = 40;
static_assert(kSegCrcOffset + 4 == kSegmentHeaderSize);

struct SegmentHeader {
  SegmentKind kind = SegmentKind::kRedo;
  std::uint64_t sequence = 0;
  Lsn base_lsn = 0;
};

// ---- 2. record header ---------------------------------------------------
enum class RecordType : std::uint8_t { kRedo = 1, kTruncate = 2, kRelease = 3, kPageImage = 4, kTail = 5 };

inline constexpr std::size_t kRecCrcOffset = 0;         // u32 CRC32C of bytes [4, 36) + payload
inline constexpr std::size_t kRecTypeOffset = 4;        // u8 RecordType
inline constexpr std::size_t kRecReservedOffset = 5;    // 3 bytes, zero
inline constexpr std::size_t kRecPayloadLenOffset = 8;  // u32
inline constexpr std::size_t kRecStartLsnOffset = 12;   // u64
inline constexpr std::size_t kRecEndLsnOffset = 20;     // u64
inline constexpr std::size_t kRecEpochOffset = 28;      // u64
inline constexpr std::size_t kRecordHeaderSize = 36;
static_assert(kRecEpochOffset + 8 == kRecordHeaderSize);

inline constexpr std::size_t kPageKeySize = 8;  // u32 space_id + u32 page_no
inline constexpr std::size_t kMaxRecordPayloadOnDisk =
    kMaxRecordPayload > kPageKeySize + kMaxPageImage ? kMaxRecordPayload : kPageKeySize + kMaxPageImage;

struct RecordHeader {
  RecordType type = RecordType::kRedo;
  std::uint32_t payload_len = 0;
  Lsn start_lsn = 0;
  Lsn end_lsn = 0;
  Epoch epoch = 0;
};

// ---- 3. durable small file ----------------------------------------------
inline constexpr std::uint32_t kDurableFileMagic = 0x31464453u;  // "SDF1" on disk
// kNodeMeta and kTail belong to the replication layer (src/server/node_meta.h):
// the promised epoch + seal history, and the per-epoch tail block register.
// kVolume is the node's volume record (present / dropped, src/server/volume.h).
// kPageServerManifest is the page server's manifest (src/pageserver/format.h).
enum class DurableFileKind : std::uint32_t {
  kCheckpoint = 1, kNodeMeta = 2, kTail = 3, kVolume = 4, kPageServerManifest = 5 };

inline constexpr std::size_t kDfMagicOffset = 0;       // u32 kDurableFileMagic
inline constexpr std::size_t kDfVersionOffset = 4;     // u32 kFormatVersion
inline constexpr std::size_t kDfKindOffset = 8;        // u32 DurableFileKind
inline constexpr std::size_t kDfPayloadLenOffset = 12; // u32
inline constexpr std::size_t kDfCrcOffset = 16;        // u32 CRC32C of bytes [0, 16) + payload
inline constexpr std::size_t kDurableFileHeaderSize = 20;
static_assert(kDfCrcOffset + 4 == kDurableFileHeaderSize);

// Checkpoint payload: u64 checkpoint_lsn, u64 epoch, metadata bytes.
inline constexpr std::size_t kCheckpointFixedSize = 16;
inline constexpr std::size_t kMaxDurableFilePayload = kCheckpointFixedSize + kMaxCheckpointMetadata;

// ---- codecs (disk_format.cc) --------------------------------------------
std::string SegmentFileName(std::uint64_t sequence);
bool ParseSegmentFileName(std::string_view name, std::uint64_t* sequence);

std::string EncodeSegmentHeader(const SegmentHeader& header);
// kCorruption (with the reason) unless `bytes` starts with a valid header.
Status DecodeSegmentHeader(std::string_view bytes, SegmentHeader* out);

// Appends header + payload to *dst. Requires a header that ValidRecordShape accepts.
void EncodeRecord(const RecordHeader& header, std::string_view payload, std::string* dst);

enum class ParseResult {
  kOk,
  kIncomplete,  // fewer bytes than the header or the payload needs (torn tail or EOF)
  kBad,         // bytes present but wrong: bad CRC, unknown type, bad lengths
};
// Parses one record at the start of `bytes`. On kOk, *payload points into
// `bytes` and the record occupies kRecordHeaderSize + payload->size() bytes.
// On failure *why says what was wrong.
ParseResult ParseRecord(std::string_view bytes, RecordHeader* header, std::string_view* payload,
                        std::string* why);
// Shape rules independent of the CRC (known type, lengths, LSN relations).
bool ValidRecordShape(const RecordHeader& header, std::string* why);

// Recovery's tools for judging bytes that ParseRecord refused (the rule that
// uses them is in segment_journal.cc):
// Decodes the header at the start of `bytes` without the CRC: true if all
// kRecordHeaderSize bytes are present, the reserved bytes are zero and the
// shape is valid. The payload may be missing or damaged.
bool PeekRecordHeader(std::string_view bytes, RecordHeader* header);
// True if the record at the start of `bytes`, its length field read as
// `payload_len` instead, passes every check of ParseRecord: a complete record
// whose length field alone was damaged.
bool ChecksOutWithPayloadLength(std::string_view bytes, std::uint32_t payload_len);
// The first offset >= from at which ParseRecord accepts a record (CRC and
// all), trying every byte offset so that a damaged length cannot hide what
// follows it; std::string_view::npos if there is none.
std::size_t FindValidRecord(std::string_view bytes, std::size_t from);

std::string EncodeDurableFile(DurableFileKind kind, std::string_view payload);
Status DecodeDurableFile(std::string_view bytes, DurableFileKind kind, std::string_view* payload);

}  // namespace strata::logservice::storage
