// The pipe protocol between pageserverd and its redo-apply helpers
// (`mysqld --strata-page-apply`; docs/design/page-server.md, section 5.2).
//
// Both ends include this header: the page server's InnoDbRedoHelper and the
// helper's main in storage/innobase/strata/page_apply.cc, which is compiled
// inside the server tree. So it depends on nothing but the standard library
// and byte_codec.h, and each side brings its own CRC-32C (the helper uses
// InnoDB's ut_crc32; both are Castagnoli, and HELLO proves it on start).
//
// A frame is a fixed header, then `payload_len` bytes:
//   u32 magic "SPAH", u16 version, u16 type, u64 request_id,
//   u32 payload_len, u32 crc32c(payload)
// little-endian. A reply carries its request's id and type + 1 (or kError).
// Either side that reads a bad magic, version, length or CRC stops: the
// helper exits, the page server kills and restarts it (never a guess).
//
// Payloads (ByteWriter/ByteReader fields, in order):
//   kHello    u32 page_size                  -> kReady  u32 page_size, u32 crc32c("123456789"), Str version
//   kSpaces   u32 n, n x {u32 space, u32 flags, u32 size_pages}        -> kSpacesOk (empty)
//   kParse    u64 from, u64 block_lsn, Bytes blocks
//             `blocks` are whole 512-byte log blocks starting at block_lsn
//             = from rounded down to 512; `from` is a mini-transaction
//             boundary                       -> kParsed u64 parsed_to, u64 scanned_to, u32 n, n x Record,
//                                                           u32 m, m x SpaceOp
//             SpaceOp = u8 kind, u32 space, u32 flags, u64 size, Str name, u64 lsn
//             (SpaceOpKind; lsn = its mini-transaction's end; in LSN order)
//   kApply    u32 n, n x {u32 space, u32 page, u8 has_base, Bytes base, u32 r, r x Record'}
//             Record' = Record without space and page; at most kMaxApplyPages pages
//                                            -> kApplied u32 n, n x {u8 ok, Str error, u64 page_lsn, u32 applied, Bytes image}
//   kPing                                    -> kPong
//   any request it cannot serve             -> kError Str message
// Record = u32 space, u32 page, u8 mlog_type, u64 start_lsn, u64 end_lsn, Bytes body
// (InnoDB's record type and body as recovery's hash stores them; the LSNs
// are recovery's: the record's own start, its mini-transaction's end).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "../../replication/byte_codec.h"

namespace strata::pageserver::helper {

constexpr std::uint32_t kMagic = 0x48415053u;  // "SPAH" little-endian
constexpr std::uint16_t kVersion = 1;
constexpr std::size_t kHeaderSize = 24;
// One APPLY batch is at most 64 pages of 64 KiB plus their records; one
// PARSE at most a few MiB of blocks. Anything larger is a broken peer.
constexpr std::uint32_t kMaxPayload = 64u << 20;
constexpr std::uint32_t kMaxPageSize = 65536;
constexpr std::uint32_t kMaxApplyPages = 64;
// What one PARSE carries at most: recovery's parse buffer grows to the log
// buffer's size (16 MiB by default) and no further; half of it leaves room
// for a mini-transaction that began in the previous request's bytes.
constexpr std::uint32_t kMaxParseBytes = 8u << 20;
constexpr std::size_t kLogBlockSize = 512;
// CRC-32C of the nine ASCII digits "123456789" (the standard check value).
constexpr std::uint32_t kCrcCheckValue = 0xE3069283u;

enum Type : std::uint16_t {
  kHello = 1,
  kReady = 2,
  kSpaces = 3,
  kSpacesOk = 4,
  kParse = 5,
  kParsed = 6,
  kApply = 7,
  kApplied = 8,
  kPing = 9,
  kPong = 10,
  kError = 99,
};

// Tablespace operations found while parsing (design note, section 6).
enum SpaceOpKind : std::uint8_t {
  kSpaceCreate = 1,  // MLOG_FILE_CREATE: flags (FSP_SPACE_FLAGS), name
  kSpaceExtend = 2,  // MLOG_FILE_EXTEND: size = the file's new size in bytes
  kSpaceDelete = 3,  // MLOG_FILE_DELETE: name
  kSpaceRename = 4,  // MLOG_FILE_RENAME: name = the new name
  kSpaceSize = 5,    // a write of FSP_SIZE on page 0: size = pages
};

struct FrameHeader {
  std::uint32_t magic = kMagic;
  std::uint16_t version = kVersion;
  std::uint16_t type = 0;
  std::uint64_t request_id = 0;
  std::uint32_t payload_len = 0;
  std::uint32_t crc = 0;
};

// The header's 24 bytes.
inline std::string EncodeHeader(const FrameHeader& h) {
  logservice::repl::ByteWriter w;
  w.U32(h.magic);
  w.U16(h.version);
  w.U16(h.type);
  w.U64(h.request_id);
  w.U32(h.payload_len);
  w.U32(h.crc);
  return std::move(w.out());
}

// False (and `why` set) for a header no well-behaved peer sends.
inline bool DecodeHeader(std::string_view in, FrameHeader* h, const char** why) {
  logservice::repl::ByteReader r(in.substr(0, kHeaderSize));
  if (in.size() < kHeaderSize || !r.U32(&h->magic) || !r.U16(&h->version) || !r.U16(&h->type) ||
      !r.U64(&h->request_id) || !r.U32(&h->payload_len) || !r.U32(&h->crc))
    return *why = "short frame header", false;
  if (h->magic != kMagic) return *why = "bad frame magic", false;
  if (h->version != kVersion) return *why = "unsupported protocol version", false;
  if (h->payload_len > kMaxPayload) return *why = "frame payload too large", false;
  return true;
}

}  // namespace strata::pageserver::helper
