// The page service's wire format (docs/design/page-server.md, section 8):
// what the compute (and pageserverctl, and seeding) sends to pageserverd.
// It rides inside rdma/ messages like the replication protocol
// (src/replication/wire.h): the transport authenticates the peer with the
// cluster's secret, frames and CRC-checks every payload. This layer still
// trusts nothing: every length is capped, unknown types, versions and codes
// are refused, and a message must be consumed exactly.
//
// Message = 24-byte header + body, little-endian (the header of every log
// service protocol, replication/message_header.h, without the epoch):
//    0 u32 magic "SPSV"   4 u8 version (kVersion)   5 u8 type (MsgType)
//    6 u16 code (Code; 0 in requests)   8 u64 request_id (a reply echoes it)
//   16 u32 body length   20 u32 reserved, 0
// Bodies ("bytes" = u32 length + data; "str" = u16 length + data); every
// reply body starts with  str error  (empty when code == kOk):
//   GetPageReq      u32 space, u32 page, u64 request_lsn, u64 not_modified_since
//   GetPageResp     PageResult
//   GetPagesReq     u64 request_lsn, u32 n (1..kMaxBatch), n*(u32 space, u32 page, u64 not_modified_since)
//   GetPagesResp    u32 n, n*PageResult (request order)
//   PageResult      u16 code, str error, u64 effective_lsn, u64 page_lsn, u8 flags (kNeverWritten),
//                   bytes image, u32 crc32c(image)
//   SpaceListReq    u64 lsn                SpaceListResp  u32 n, n*(u32 space, str name, u32 flags, u32 size_pages, u64 created_lsn)
//   SpaceSizeReq    u32 space, u64 lsn     SpaceSizeResp  u32 size_pages
//   SpaceExistsReq  u32 space, u64 lsn     SpaceExistsResp u8 exists, u64 created_lsn, u64 deleted_lsn
//   StatusReq       (nothing)              StatusResp     u32 n, n*(str key, u64 value)
//   PutImagesReq    u64 epoch, u64 lsn, u32 n, n*(u32 space, u32 page, bytes image)   PutImagesResp (nothing)
//   ErrorResp       (the error only): the answer to a message that could not be decoded, before the
//                   server closes the connection (request_id 0 when the header itself was bad)
#pragma once
#include <cstddef>
#include <cstdint>

#include "message_header.h"

namespace strata::pageserver::wire {

inline constexpr std::uint32_t kMagic = 0x56535053u;  // "SPSV" on the wire
inline constexpr std::uint8_t kVersion = 1;

// The header is the replication protocol's (replication/message_header.h)
// without the epoch.
inline constexpr std::size_t kHeaderSize = logservice::header::Size(/*with_epoch=*/false);
static_assert(kHeaderSize == 24 && logservice::header::BodyLengthOffset(false) == 16);

inline constexpr std::size_t kMaxPageSize = 64u << 10;  // InnoDB's largest page
inline constexpr std::size_t kMaxBatch = 64;            // GetPages
inline constexpr std::size_t kMaxPutImages = 64;
inline constexpr std::size_t kMaxError = 1024;
inline constexpr std::size_t kMaxName = 1024;
inline constexpr std::size_t kMaxSpaces = 4096;
inline constexpr std::size_t kMaxStatus = 64;
// Largest message: a full GetPages answer of 16 KiB pages fits the
// replication transport's bulk ring (repl::ReplicationTransportOptions).
inline constexpr std::size_t kMaxMessage = kHeaderSize + 4 + kMaxBatch * (16 * 1024 + kMaxError + 64);

enum class MsgType : std::uint8_t {
  kGetPageReq = 1, kGetPageResp,
  kGetPagesReq, kGetPagesResp,
  kSpaceListReq, kSpaceListResp,
  kSpaceSizeReq, kSpaceSizeResp,
  kSpaceExistsReq, kSpaceExistsResp,
  kStatusReq, kStatusResp,
  kPutImagesReq, kPutImagesResp,
  kErrorResp = 16,
};
inline constexpr std::uint8_t kLastType = static_cast<std::uint8_t>(MsgType::kErrorResp);
inline bool IsResponse(MsgType t) { return logservice::header::IsResponseType(static_cast<std::uint8_t>(t)); }
inline bool KnownType(std::uint8_t t) {
  return t >= 1 && (t <= static_cast<std::uint8_t>(MsgType::kPutImagesResp) || t == kLastType);
}

// Errors are named, never a guessed page (section 8).
enum class Code : std::uint16_t {
  kOk = 0,
  kInvalid = 1,        // malformed or out-of-contract request (not_modified_since > request_lsn, ...)
  kSpaceUnknown = 2,   // no such tablespace at the effective LSN
  kSpaceDeleted = 3,   // deleted at or before the effective LSN (the error names the LSN)
  kBeyondSize = 4,     // page number at or above the space's size at the effective LSN
  kBelowHorizon = 5,   // history below the GC horizon is gone and the page changed since
  kUnsupported = 6,    // e.g. an encrypted space
  kApplyFailed = 7,    // the redo-apply helper could not build the page
  kCorrupt = 8,        // a stored file or image failed its checks (which one)
  kUnavailable = 9,    // ingest has not reached not_modified_since within the wait, or shutting down
};
inline constexpr std::uint16_t kLastCode = 9;

inline constexpr logservice::header::Protocol kProtocol{"page service", kMagic, kVersion, /*with_epoch=*/false,
                                                        KnownType, kLastCode};

inline constexpr std::uint8_t kNeverWritten = 1;  // PageResult flags: no record or image ever touched it

}  // namespace strata::pageserver::wire
