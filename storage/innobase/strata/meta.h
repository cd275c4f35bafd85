// The two small formats of InnoDB's redo in the log service (no MySQL headers):
//
// 1. Metadata: the blob carried by the volume's checkpoint record. It holds
//    what the redo file headers hold in stock InnoDB (format, creator, flags,
//    log_uuid) plus the volume's identity. Layout, all integers little-endian:
//
//      off  size  field
//        0    10  magic "STRATAREDO"
//       10     2  version (kMetadataVersion)
//       12     4  log_format          (Log_format::CURRENT when written)
//       16     4  log_flags           (LOG_HEADER_FLAG_* bits)
//       20     4  log_uuid
//       24     8  initial_lsn         (first LSN of the volume)
//       32     8  created_at          (unix seconds)
//       40     1  bootstrap_complete  (0/1; set by the first normal start)
//       41     1  creator length C    (<= 32, like LOG_HEADER_CREATOR_END)
//       42     1  volume_uuid length U (<= 64)
//       43     1  created_by length S  (<= 64)
//       44   C+U+S creator, volume_uuid, created_by
//      ...     4  CRC-32 (IEEE) of every byte before it
//
// 2. Pointer: block 1 (bytes 512..1023) of #innodb_redo/#ib_redo0, which binds
//    a data directory to its volume. Written once at --initialize.
//
//      off  size  field
//        0     9  magic "STRATAPTR"
//        9     2  version (kPointerVersion)
//       11     4  log_uuid
//       15     8  initial_lsn
//       23     8  created_at
//       31     1  cluster_id length (<= 64)
//       32     1  volume length (<= 128)
//       33     1  volume_uuid length (<= 64)
//       34   ...  cluster_id, volume, volume_uuid
//      ...     4  CRC-32 of every byte before it (the rest of the block is 0)
//
// Parsers never trust their input: every length is checked against the
// buffer and its limit, then magic, version and CRC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace strata::redo {

constexpr std::uint16_t kMetadataVersion = 1;
constexpr std::uint16_t kPointerVersion = 1;
constexpr std::size_t kPointerBlockSize = 512;
// Block 0 of the pointer file is an InnoDB file header with this format
// number ("STRA"), above Log_format::CURRENT: stock servers refuse the
// directory ("Unknown redo log format") instead of recreating local redo.
constexpr std::uint32_t kPointerFileFormat = 0x53545241;
constexpr std::size_t kPointerFileSize = 64 * 1024;  // smallest log_check_file accepts

struct Metadata {
  std::uint32_t log_format = 0;
  std::uint32_t log_flags = 0;
  std::uint32_t log_uuid = 0;
  std::uint64_t initial_lsn = 0;
  std::uint64_t created_at = 0;
  bool bootstrap_complete = false;
  std::string creator;      // <= 32 bytes
  std::string volume_uuid;  // <= 64 bytes
  std::string created_by;   // <= 64 bytes (server_uuid of the initializer)

  bool operator==(const Metadata &) const = default;
};

struct Pointer {
  std::uint32_t log_uuid = 0;
  std::uint64_t initial_lsn = 0;
  std::uint64_t created_at = 0;
  std::string cluster_id;   // <= 64 bytes
  std::string volume;       // <= 128 bytes
  std::string volume_uuid;  // <= 64 bytes

  bool operator==(const Pointer &) const = default;
};

// Both return false (and leave *out unspecified) on any malformed input;
// *why says what was wrong.
std::string serialize_metadata(const Metadata &m);
bool parse_metadata(std::string_view bytes, Metadata *out, std::string *why);

// Fills exactly kPointerBlockSize bytes; false if a field is too long.
bool serialize_pointer(const Pointer &p, unsigned char *block);
bool parse_pointer(const unsigned char *block, std::size_t size, Pointer *out, std::string *why);

std::uint32_t crc32_ieee(const void *data, std::size_t len, std::uint32_t crc = 0);

// A random UUID string (36 chars) from /dev/urandom (falls back to the clock).
std::string new_uuid();

}  // namespace strata::redo
