// Frame codec: encode, validate and parse the frames of wire_format.h.
//
// Pure functions over byte spans: no I/O, no allocation, no state. Both
// backends and the fuzz target go through ValidateHeader/ParseFrame, so
// every byte from the network is length-checked, versioned and checksummed
// by the same code before anything acts on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "strata/rdma/status.h"
#include "wire_format.h"

namespace strata::rdma {

struct FrameHeader {
  uint32_t magic = wire::kMagic;
  uint8_t version = wire::kVersion;
  wire::FrameType type = wire::FrameType::kData;
  uint16_t flags = 0;
  uint32_t length = 0;
  uint32_t sequence = 0;
  uint32_t credits = 0;
  uint32_t bulk_freed = 0;
  uint32_t aux = 0;
  uint32_t checksum = 0;
};

// What this side accepts from its peer.
struct FrameLimits {
  uint32_t max_data_payload = 0;  // our max_message_size
  uint32_t bulk_ring_size = 0;    // our receive ring; 0 = bulk refused
  // Before the peer has authenticated: only CHALLENGE, AUTH, ACCEPT and
  // REFUSE (each at most a control frame) pass, so an unauthenticated peer
  // is refused at the header before it can make us buffer a payload.
  bool handshake_only = false;
};

void EncodeHeader(const FrameHeader& h, std::byte* out);      // writes kHeaderSize bytes
FrameHeader DecodeHeader(const std::byte* in);                // no checks
// Stamps the checksum into an encoded header: crc(payload) continued over
// the header with its checksum field zeroed.
void SealHeader(std::byte* header, uint32_t payload_crc);
uint32_t PayloadCrc(std::span<const std::byte> payload);

// Checks magic, version, type, flags and the per-type length/offset bounds.
// The message names the problem; it is what the connection logs on close.
Status ValidateHeader(const FrameHeader& h, const FrameLimits& limits);
Status VerifyChecksum(const std::byte* header, std::span<const std::byte> payload);

enum class ParseOutcome { kNeedMore, kFrame, kError };
struct ParsedFrame {
  FrameHeader header;
  std::span<const std::byte> payload;
  size_t consumed = 0;  // header + payload
};
// Parses the first frame of `buffer` (payload contiguous after the header).
// kNeedMore: buffer holds a valid prefix of a frame. kError: *error says why.
ParseOutcome ParseFrame(std::span<const std::byte> buffer, const FrameLimits& limits,
                        ParsedFrame* out, Status* error);

const char* FrameTypeName(wire::FrameType type);

}  // namespace strata::rdma
