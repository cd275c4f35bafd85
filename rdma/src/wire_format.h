// The rdma/ wire format: every byte either backend puts on the wire.
//
// A connection is a sequence of frames. Each frame is a 32-byte header plus
// `length` payload bytes. All integers are little-endian. Over TCP, frames
// follow each other on the byte stream; over verbs, each SEND carries exactly
// one frame and each bulk frame is RDMA-WRITTEN (header included) into the
// peer's bulk ring at byte offset `aux`, announced by immediate data == aux.
//
//   off size field
//     0    4 magic      kMagic ("STRM")
//     4    1 version    kVersion; a peer with another version is refused
//     5    1 type       FrameType
//     6    2 flags      reserved, must be 0
//     8    4 length     payload bytes (limits below, per type)
//    12    4 sequence   DATA/BULK: 1,2,3... per direction (wraps); else 0
//    16    4 credits    receive credits handed back to the frame's receiver
//    20    4 bulk_freed bulk frames whose ring space the receiver released
//    24    4 aux        BULK: ring offset of this frame; else 0
//    28    4 checksum   CRC32C: crc(payload), then continued over the header
//                       with this field zero (so credits can be stamped late)
//
// Session: server sends CHALLENGE; client answers AUTH; server answers
// ACCEPT (or REFUSE + close). Only then are DATA/BULK/CREDIT/PING/PONG/CLOSE
// allowed. DATA and BULK each consume one credit; CREDIT/PING/PONG/CLOSE are
// free. Anything else closes the connection with a logged reason.
// A server over its cap of pending handshakes sends REFUSE (kBusyReason)
// instead of CHALLENGE and closes; the client reports kUnavailable.
// A REFUSE of a failed AUTH carries kAuthRefusedReason and nothing else:
// never the cluster id or anything derived from the secret (which check
// failed is in the server's log only), so a stranger learns nothing by
// probing.
#pragma once

#include <cstddef>
#include <cstdint>

namespace strata::rdma::wire {

inline constexpr uint32_t kMagic = 0x4D525453;  // bytes 'S' 'T' 'R' 'M'
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderSize = 32;

enum class FrameType : uint8_t {
  kChallenge = 1,  // S->C  ChallengePayload
  kAuth = 2,       // C->S  AuthPayload
  kAccept = 3,     // S->C  AcceptPayload
  kRefuse = 4,     // S->C  reason text, then the server closes
  kData = 5,       // message payload (<= negotiated max_message_size)
  kBulk = 6,       // message payload through the bulk ring
  kCredit = 7,     // no payload; carries credits/bulk_freed only
  kPing = 8,       // no payload
  kPong = 9,       // no payload
  kClose = 10,     // optional reason text; sender closes after it
};
inline constexpr uint8_t kMaxFrameType = 10;

namespace offset {
inline constexpr size_t kMagic = 0, kVersion = 4, kType = 5, kFlags = 6, kLength = 8,
                        kSequence = 12, kCredits = 16, kBulkFreed = 20, kAux = 24, kChecksum = 28;
}
static_assert(offset::kChecksum + 4 == kHeaderSize, "header fields must fill 32 bytes");

// Handshake payloads (fixed size; all fields little-endian).
inline constexpr size_t kNonceSize = 32;
inline constexpr size_t kMacSize = 32;          // HMAC-SHA256
inline constexpr size_t kClusterIdSize = 64;    // zero-padded
// Parameters each side advertises (in AUTH and ACCEPT):
//   u32 receive_credits, u32 max_message_size, u32 bulk_ring_size,
//   u32 bulk_rkey (verbs; 0 on TCP), u64 bulk_ring_addr (verbs; 0 on TCP)
inline constexpr size_t kParamsSize = 24;
inline constexpr size_t kChallengeSize = kNonceSize;
// AUTH = cluster_id | client_nonce | params | mac
inline constexpr size_t kAuthSize = kClusterIdSize + kNonceSize + kParamsSize + kMacSize;
// ACCEPT = params | mac
inline constexpr size_t kAcceptSize = kParamsSize + kMacSize;
inline constexpr size_t kMaxReasonSize = 256;  // REFUSE / CLOSE text
// The only REFUSE texts a server sends to an unauthenticated peer.
inline constexpr char kAuthRefusedReason[] = "authentication failed";
inline constexpr char kBusyReason[] = "server busy: too many pending handshakes, retry later";
static_assert(sizeof(kBusyReason) - 1 <= kMaxReasonSize && sizeof(kAuthRefusedReason) - 1 <= kMaxReasonSize);
static_assert(kChallengeSize == 32 && kAuthSize == 152 && kAcceptSize == 56, "handshake sizes are wire format");

// Largest payload of any non-DATA, non-BULK frame.
inline constexpr size_t kMaxControlPayload = kAuthSize > kMaxReasonSize ? kAuthSize : kMaxReasonSize;
// Hard cap on a DATA payload whatever the options say (sanity bound).
inline constexpr uint32_t kMaxMessageLimit = 64u << 20;
// Bulk frames start on this alignment inside the ring.
inline constexpr uint32_t kBulkAlign = 64;

// MAC domain-separation labels, so a client proof cannot be replayed as a
// server proof.
inline constexpr char kClientLabel[] = "strata-rdma/1 client";
inline constexpr char kServerLabel[] = "strata-rdma/1 server";

}  // namespace strata::rdma::wire
