// The message header of every log service protocol: the replication
// protocol (wire.h) and the page service (pageserver/service/page_wire.h)
// put the same header before their bodies, so it is written and checked
// here once. Little-endian:
//
//    0 u32 magic (the protocol's)   4 u8 version   5 u8 type   6 u16 code (0 in requests)
//    8 u64 request_id (a response echoes its request's)
//   16 u64 epoch (only in protocols that carry one: replication)
//   then u32 body length, u32 reserved (0): the header's last 8 bytes.
//
// Types are odd for requests and even for responses. A decoder trusts
// nothing: wrong magic, another version, an unknown type or code, a code on
// a request, a non-zero reserved field and a body length other than what
// follows the header are all refused, with a message that says which.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "strata/logservice/status.h"

namespace strata::logservice::header {

inline constexpr std::size_t kMagicOffset = 0;
inline constexpr std::size_t kVersionOffset = 4;
inline constexpr std::size_t kTypeOffset = 5;
inline constexpr std::size_t kCodeOffset = 6;
inline constexpr std::size_t kRequestIdOffset = 8;
inline constexpr std::size_t kEpochOffset = 16;  // with_epoch only
constexpr std::size_t Size(bool with_epoch) { return with_epoch ? 32 : 24; }
constexpr std::size_t BodyLengthOffset(bool with_epoch) { return Size(with_epoch) - 8; }
constexpr std::size_t ReservedOffset(bool with_epoch) { return Size(with_epoch) - 4; }
static_assert(kRequestIdOffset % 8 == 0 && kEpochOffset % 8 == 0);

inline bool IsResponseType(std::uint8_t type) { return type % 2 == 0; }

// What tells one protocol's header from another's.
struct Protocol {
  std::string_view name;  // in error messages: "unsupported <name> version 9"
  std::uint32_t magic;
  std::uint8_t version;
  bool with_epoch;
  bool (*known_type)(std::uint8_t type);
  std::uint16_t last_code;
};

struct Fields {
  std::uint8_t type = 0;
  std::uint16_t code = 0;
  std::uint64_t request_id = 0;
  std::uint64_t epoch = 0;  // with_epoch only
};

// The header for `fields` followed by `body`.
std::string Encode(const Protocol& protocol, const Fields& fields, std::string_view body);
// Checks the header of `message` (see above); on success *out holds its
// fields and the body is message.substr(Size(protocol.with_epoch)).
Status Decode(const Protocol& protocol, std::string_view message, Fields* out);

}  // namespace strata::logservice::header
