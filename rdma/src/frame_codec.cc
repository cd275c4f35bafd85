// Frame codec implementation. See wire_format.h for the layout.
#include "frame_codec.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"

namespace strata::rdma {
namespace {

std::string Hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

}  // namespace

const char* FrameTypeName(wire::FrameType type) {
  using wire::FrameType;
  switch (type) {
    case FrameType::kChallenge: return "CHALLENGE";
    case FrameType::kAuth: return "AUTH";
    case FrameType::kAccept: return "ACCEPT";
    case FrameType::kRefuse: return "REFUSE";
    case FrameType::kData: return "DATA";
    case FrameType::kBulk: return "BULK";
    case FrameType::kCredit: return "CREDIT";
    case FrameType::kPing: return "PING";
    case FrameType::kPong: return "PONG";
    case FrameType::kClose: return "CLOSE";
  }
  return "UNKNOWN";
}

void EncodeHeader(const FrameHeader& h, std::byte* out) {
  using namespace wire::offset;
  PutFixed32(out + kMagic, h.magic);
  out[kVersion] = static_cast<std::byte>(h.version);
  out[kType] = static_cast<std::byte>(h.type);
  PutFixed16(out + kFlags, h.flags);
  PutFixed32(out + kLength, h.length);
  PutFixed32(out + kSequence, h.sequence);
  PutFixed32(out + kCredits, h.credits);
  PutFixed32(out + kBulkFreed, h.bulk_freed);
  PutFixed32(out + kAux, h.aux);
  PutFixed32(out + kChecksum, h.checksum);
}

FrameHeader DecodeHeader(const std::byte* in) {
  using namespace wire::offset;
  FrameHeader h;
  h.magic = GetFixed32(in + kMagic);
  h.version = static_cast<uint8_t>(in[kVersion]);
  h.type = static_cast<wire::FrameType>(in[kType]);
  h.flags = GetFixed16(in + kFlags);
  h.length = GetFixed32(in + kLength);
  h.sequence = GetFixed32(in + kSequence);
  h.credits = GetFixed32(in + kCredits);
  h.bulk_freed = GetFixed32(in + kBulkFreed);
  h.aux = GetFixed32(in + kAux);
  h.checksum = GetFixed32(in + kChecksum);
  return h;
}

uint32_t PayloadCrc(std::span<const std::byte> payload) {
  return Crc32c(0, payload.data(), payload.size());
}

static uint32_t HeaderCrc(const std::byte* header, uint32_t payload_crc) {
  std::byte copy[wire::kHeaderSize];
  std::memcpy(copy, header, wire::kHeaderSize);
  PutFixed32(copy + wire::offset::kChecksum, 0);
  return Crc32c(payload_crc, copy, wire::kHeaderSize);
}

void SealHeader(std::byte* header, uint32_t payload_crc) {
  PutFixed32(header + wire::offset::kChecksum, HeaderCrc(header, payload_crc));
}

Status VerifyChecksum(const std::byte* header, std::span<const std::byte> payload) {
  const uint32_t want = GetFixed32(header + wire::offset::kChecksum);
  const uint32_t got = HeaderCrc(header, PayloadCrc(payload));
  if (want != got) return ProtocolError("checksum mismatch (frame says " + Hex(want) + ", computed " + Hex(got) + ")");
  return Status::Ok();
}

Status ValidateHeader(const FrameHeader& h, const FrameLimits& limits) {
  using wire::FrameType;
  if (h.magic != wire::kMagic) return ProtocolError("bad magic " + Hex(h.magic) + " (want " + Hex(wire::kMagic) + ")");
  if (h.version != wire::kVersion)
    return ProtocolError("unsupported wire version " + std::to_string(h.version) + " (want " + std::to_string(wire::kVersion) + ")");
  const auto raw_type = static_cast<uint8_t>(h.type);
  if (raw_type == 0 || raw_type > wire::kMaxFrameType) return ProtocolError("unknown frame type " + std::to_string(raw_type));
  if (h.flags != 0) return ProtocolError("reserved flags set: " + Hex(h.flags));
  const char* name = FrameTypeName(h.type);
  auto exact = [&](uint32_t want) -> Status {
    if (h.length != want)
      return ProtocolError(std::string("bad ") + name + " length " + std::to_string(h.length) + " (want " + std::to_string(want) + ")");
    return Status::Ok();
  };
  auto at_most = [&](uint64_t limit) -> Status {
    if (h.length > limit)
      return ProtocolError(std::string("oversize ") + name + " frame: " + std::to_string(h.length) + " bytes > limit " + std::to_string(limit));
    return Status::Ok();
  };
  const bool handshake_type = h.type == FrameType::kChallenge || h.type == FrameType::kAuth ||
                              h.type == FrameType::kAccept || h.type == FrameType::kRefuse;
  if (limits.handshake_only && !handshake_type)
    return ProtocolError(std::string("unexpected ") + name +
                         " frame during the handshake (no payload is accepted before it)");
  if (h.type != FrameType::kBulk && h.aux != 0) return ProtocolError(std::string("aux set on ") + name + " frame");
  const bool is_message = h.type == FrameType::kData || h.type == FrameType::kBulk;
  if (!is_message && h.sequence != 0) return ProtocolError(std::string("sequence set on ") + name + " frame");
  switch (h.type) {
    case FrameType::kChallenge: return exact(wire::kChallengeSize);
    case FrameType::kAuth: return exact(wire::kAuthSize);
    case FrameType::kAccept: return exact(wire::kAcceptSize);
    case FrameType::kRefuse:
    case FrameType::kClose: return at_most(wire::kMaxReasonSize);
    case FrameType::kCredit:
    case FrameType::kPing:
    case FrameType::kPong: return exact(0);
    case FrameType::kData: return at_most(limits.max_data_payload);
    case FrameType::kBulk: {
      if (limits.bulk_ring_size == 0) return ProtocolError("BULK frame but bulk is disabled on this side");
      if (h.aux % wire::kBulkAlign != 0) return ProtocolError("misaligned BULK offset " + std::to_string(h.aux));
      const uint64_t end = uint64_t{h.aux} + wire::kHeaderSize + h.length;
      if (end > limits.bulk_ring_size)
        return ProtocolError("oversize BULK frame: offset " + std::to_string(h.aux) + " + " + std::to_string(h.length) +
                             " bytes exceeds ring of " + std::to_string(limits.bulk_ring_size));
      return Status::Ok();
    }
  }
  return ProtocolError("unknown frame type");
}

ParseOutcome ParseFrame(std::span<const std::byte> buffer, const FrameLimits& limits,
                        ParsedFrame* out, Status* error) {
  if (buffer.size() < wire::kHeaderSize) {
    // Reject garbage early: a prefix that cannot be our magic never will be.
    for (size_t i = 0; i < buffer.size() && i < 4; ++i) {
      if (buffer[i] != static_cast<std::byte>(wire::kMagic >> (8 * i))) {
        *error = ProtocolError("bad magic in frame prefix");
        return ParseOutcome::kError;
      }
    }
    return ParseOutcome::kNeedMore;
  }
  const FrameHeader h = DecodeHeader(buffer.data());
  if (Status s = ValidateHeader(h, limits); !s.ok()) {
    *error = std::move(s);
    return ParseOutcome::kError;
  }
  const size_t total = wire::kHeaderSize + size_t{h.length};
  if (buffer.size() < total) return ParseOutcome::kNeedMore;
  const auto payload = buffer.subspan(wire::kHeaderSize, h.length);
  if (Status s = VerifyChecksum(buffer.data(), payload); !s.ok()) {
    *error = std::move(s);
    return ParseOutcome::kError;
  }
  out->header = h;
  out->payload = payload;
  out->consumed = total;
  return ParseOutcome::kFrame;
}

}  // namespace strata::rdma
