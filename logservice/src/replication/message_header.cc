// The shared message header; the layout is documented in message_header.h.
#include "message_header.h"

#include "byte_codec.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice::header {

using repl::ByteWriter;
using rdma::LoadLe;

std::string Encode(const Protocol& protocol, const Fields& fields, std::string_view body) {
  ByteWriter w;
  w.out().reserve(Size(protocol.with_epoch) + body.size());
  w.U32(protocol.magic);
  w.U8(protocol.version);
  w.U8(fields.type);
  w.U16(fields.code);
  w.U64(fields.request_id);
  if (protocol.with_epoch) w.U64(fields.epoch);
  w.U32(static_cast<std::uint32_t>(body.size()));
  w.U32(0);
  w.out().append(body);
  return std::move(w.out());
}

Status Decode(const Protocol& protocol, std::string_view message, Fields* out) {
  const std::string name(protocol.name);
  const std::size_t size = Size(protocol.with_epoch);
  if (message.size() < size) return Status::InvalidArgument(name + " message shorter than its header");
  const char* p = message.data();
  if (LoadLe(p + kMagicOffset, 4) != protocol.magic)
    return Status::InvalidArgument("not a " + name + " message (bad magic)");
  if (LoadLe(p + kVersionOffset, 1) != protocol.version)
    return Status::InvalidArgument("unsupported " + name + " version " + std::to_string(LoadLe(p + kVersionOffset, 1)));
  Fields f;
  f.type = static_cast<std::uint8_t>(LoadLe(p + kTypeOffset, 1));
  if (!protocol.known_type(f.type))
    return Status::InvalidArgument("unknown " + name + " message type " + std::to_string(f.type));
  f.code = static_cast<std::uint16_t>(LoadLe(p + kCodeOffset, 2));
  if (f.code > protocol.last_code)
    return Status::InvalidArgument("unknown " + name + " reply code " + std::to_string(f.code));
  if (!IsResponseType(f.type) && f.code != 0) return Status::InvalidArgument("request with a reply code");
  if (LoadLe(p + ReservedOffset(protocol.with_epoch), 4) != 0)
    return Status::InvalidArgument("reserved header field not zero");
  if (LoadLe(p + BodyLengthOffset(protocol.with_epoch), 4) != message.size() - size)
    return Status::InvalidArgument("body length does not match the message size");
  f.request_id = LoadLe(p + kRequestIdOffset, 8);
  if (protocol.with_epoch) f.epoch = LoadLe(p + kEpochOffset, 8);
  *out = f;
  return Status::Ok();
}

}  // namespace strata::logservice::header
