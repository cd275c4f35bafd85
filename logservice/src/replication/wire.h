// The replication protocol's wire format: every message between the writer
// (client library), the log service nodes (logserviced) and logservicectl.
//
// It rides inside rdma/ messages, which already authenticate the peer
// (HMAC handshake on cluster id + secret), frame, order and CRC32C-check every
// payload. This layer still never trusts a payload: every length is checked
// against the caps below, unknown types/versions are rejected, and a message
// must be consumed exactly (no trailing bytes).
//
// Message = 32-byte header + body, little-endian (the header every log
// service protocol shares, message_header.h, with the epoch):
//
//    0 u32 magic "SLRP"    4 u8 version (kWireVersion)    5 u8 type (MsgType)
//    6 u16 code (ReplyCode; 0 in requests)
//    8 u64 request_id (a response echoes its request's id)
//   16 u64 epoch (requests: the sender's epoch; responses: the node's promised epoch
//      when the reply was built, on every response type; a writer that sees one
//      above its own is fenced and counts nothing from that reply)
//   24 u32 body length    28 u32 reserved, 0
//
// Bodies (u64/u32/u16/u8 fixed; "bytes" = u32 length + data; "str" = u16 length + data):
//   every response body starts with   str error   (empty when code == kOk)
//   PromiseReq   u64 writer_id
//   history      u32 n, n*(u64 epoch, u64 seal_lsn, u64 end): per writer takeover, where it sealed the stream
//                and where the log it recovered ended (its tail's data end, or seal_lsn; end >= seal_lsn;
//                docs/design/logservice-seal-with-tail.md)
//   SealReq      u64 seal_lsn, u64 commit_lsn (writer's quorum frontier: catch up to it), u32 self_index, history,
//                u32 m, m*str peer address, u64 certify_lsn (end of all the writer may have acknowledged or
//                recovered, tail included: a rebuilding node becomes a member once it holds that much;
//                docs/design/logservice-node-rebuild.md),
//                u64 tail_data_end, bytes tail_image: the recovered tail, installed with the seal in one
//                durable write (block = seal_lsn, epoch = the header's; data end 0 and no image: none;
//                else seal_lsn < tail_data_end <= seal_lsn + image size)
//   AppendReq    u64 start_lsn, u64 commit_lsn (writer's quorum frontier, a catch-up hint), bytes redo,
//                u8 flags (kAppendWantsWrittenAck: reply once written too, before the fdatasync;
//                kAppendCarriesTail: the tail register follows, as a TailReq right after it would carry it),
//                [u64 tail_block_lsn (= start_lsn + redo size), u64 tail_data_end, bytes tail_image]
//   AppendResp   u64 durable_lsn, u64 complete_lsn, u8 has_tail,
//                [u64 tail_block_lsn, u64 tail_data_end: the register the node holds, as in TailResp]
//   TailReq      u64 block_lsn, u64 data_end, bytes image
//   TailResp     u64 block_lsn, u64 data_end, u64 durable_lsn
//   ReadReq      u64 from_lsn, u32 max_bytes, u64 seal_epoch (0: any; else the server must be sealed at it)
//   ReadResp     u64 durable_lsn, u32 n, n*(u64 start, u64 epoch, bytes)
//   CkptSetReq   u64 lsn, bytes metadata              CkptSetResp  (nothing)
//   CkptGetReq   (nothing)                            CkptGetResp  u8 found, u64 lsn, u64 epoch, bytes metadata
//   PagePutReq   u32 space, u32 page, u64 lsn, bytes image        PagePutResp (nothing)
//   PageGetReq   u32 space, u32 page, u64 lsn     PageGetResp  u8 found, u64 lsn, bytes image
//   StatusReq    (nothing)
//   FollowReq    u64 from_lsn, u32 max_bytes (a follower: docs/design/page-server.md 7.1; no epoch needed)
//   FollowResp   u64 frontier (min(node durable, writer's acknowledged hint): no byte at or above it is
//                returned), u64 released, u32 n, n*(u64 start, u64 epoch, bytes) (all below frontier),
//                u64 tail_block, u64 tail_data_end, bytes tail_image (the sealed epoch's tail register,
//                only when its block is the frontier and its data end is acknowledged; data end 0: none)
//   HintReq      u64 acked_lsn (the writer's quorum frontier, tail included), sent when no append carries it
//   HintResp     (nothing)
//   PinReq       u8 op (PinOp), str name, u64 lsn    PinResp  u32 n, n*(str name, u64 lsn): the pins after op
//   PromiseResp, SealResp, StatusResp: NodeState =
//                str node_id, u64 promised_epoch, u64 writer_id, u64 seal_epoch, u64 seal_lsn,
//                u64 last_epoch, u64 released, u64 durable, u64 complete, u64 highest,
//                u64 tail_epoch, u64 tail_block_lsn, u64 tail_data_end, bytes tail_image,
//                u8 tail_anchored (1: the blocks below the register's block are its writer's stream),
//                history,
//                u32 k, k*u64 counters (NodeCounter order; unknown extra counters are ignored),
//                u8 rebuilding (1: the node lost or never had its storage and does not count toward any quorum),
//                u8 was_member (1: the node has been a member; rebuilding too: it lost a log that held acknowledged
//                bytes, so a cluster of rebuilding nodes that includes it is not new)
#pragma once
#include <cstddef>
#include <cstdint>

#include "message_header.h"

namespace strata::logservice::wire {

inline constexpr std::uint32_t kMagic = 0x50524C53u;  // "SLRP" on the wire
// 2: SealReq certify_lsn and NodeState rebuilding (node rebuild from a peer).
// 3: history entries carry the recovered end; SealReq carries the recovered tail;
//    NodeState carries tail_anchored.
// 4: NodeState carries was_member (a node that moved a damaged log aside);
//    AppendReq carries flags (the written reply only when the writer asks).
// 5: AppendReq may carry the tail register and AppendResp answers for it
//    (one message, one journal write and one fdatasync per commit per node);
//    FollowReq/Resp (followers such as pageserverd), HintReq/Resp (the writer's
//    acknowledged frontier when no append carries it), PinReq/Resp (retention pins).
inline constexpr std::uint8_t kWireVersion = 5;

// The header (message_header.h, shared with the page service), with the epoch.
using header::kCodeOffset;
using header::kEpochOffset;
using header::kMagicOffset;
using header::kRequestIdOffset;
using header::kTypeOffset;
using header::kVersionOffset;
inline constexpr std::size_t kHeaderSize = header::Size(/*with_epoch=*/true);
inline constexpr std::size_t kBodyLengthOffset = header::BodyLengthOffset(true);
inline constexpr std::size_t kReservedOffset = header::ReservedOffset(true);
static_assert(kHeaderSize == 32 && kBodyLengthOffset == 24 && kReservedOffset == 28);

// Caps (a decoder allocates nothing larger).
inline constexpr std::size_t kMaxRedoChunk = 256u << 10;      // one AppendReq / one ReadResp range
// AppendReq flags (Frame::append_flags). Written replies serve
// innodb_flush_log_at_trx_commit=2 only; under =1 they are a message per
// append per node that nobody waits for.
inline constexpr std::uint32_t kAppendWantsWrittenAck = 1;
// The tail block's register rides on the append whose redo ends where the
// block starts: a commit that crossed a block boundary is one request, not
// an AppendReq and a TailReq the node might sync in two batches.
inline constexpr std::uint32_t kAppendCarriesTail = 2;
inline constexpr std::size_t kMaxReadBytes = 1u << 20;        // all ranges of one ReadResp
inline constexpr std::size_t kMaxTailImage = 64u << 10;
inline constexpr std::size_t kMaxMetadata = 1u << 20;         // == kMaxCheckpointMetadata
inline constexpr std::size_t kMaxPageImage = 1u << 20;        // == storage kMaxPageImage
inline constexpr std::size_t kMaxError = 1024;
inline constexpr std::size_t kMaxHistory = 4096;
inline constexpr std::size_t kMaxPeers = 16;
inline constexpr std::size_t kMaxAddress = 256;
inline constexpr std::size_t kMaxNodeId = 64;
inline constexpr std::size_t kMaxCounters = 64;
inline constexpr std::size_t kMaxRanges = 1024;
inline constexpr std::size_t kMaxPins = 64;
inline constexpr std::size_t kMaxPinName = 64;
// Largest encoded message (a ReadResp or PagePut with headroom); the
// transport's bulk ring must hold it (send_path.h: messages larger than a
// receive slot go by SendBulk).
inline constexpr std::size_t kMaxMessage = kHeaderSize + kMaxReadBytes + 64 * 1024 + kMaxRanges * 20;

enum class MsgType : std::uint8_t {
  kPromiseReq = 1, kPromiseResp,
  kSealReq, kSealResp,
  kAppendReq, kAppendResp,
  kTailReq, kTailResp,
  kReadReq, kReadResp,
  kCkptSetReq, kCkptSetResp,
  kCkptGetReq, kCkptGetResp,
  kPagePutReq, kPagePutResp,
  kPageGetReq, kPageGetResp,
  kStatusReq, kStatusResp,
  kReleaseReq, kReleaseResp,  // free log below lsn (capped by the node at its checkpoint and lowest pin)
  kFollowReq, kFollowResp,    // a follower reads acknowledged redo (never at or above the frontier)
  kHintReq, kHintResp,        // the writer's acknowledged frontier, when no append carries it
  kPinReq, kPinResp,          // retention pins: list / set / drop
};
enum class PinOp : std::uint8_t { kList = 0, kSet = 1, kDrop = 2 };
inline constexpr std::uint8_t kLastPinOp = 2;
inline constexpr std::uint8_t kFirstType = 1;
inline constexpr std::uint8_t kLastType = static_cast<std::uint8_t>(MsgType::kPinResp);
static_assert(kLastType == 28);
inline bool IsResponse(MsgType t) { return header::IsResponseType(static_cast<std::uint8_t>(t)); }

enum class ReplyCode : std::uint16_t {
  kOk = 0,
  kStaleEpoch = 1,   // the request's epoch is below the node's promise: the sender is fenced
  kNotSealed = 2,    // epoch not promised/sealed on this node yet: send Promise + Seal first
  kInvalid = 3,      // malformed or out-of-contract request
  kNotFound = 4,
  kStoreError = 5,   // the node's storage failed (message says how)
  kConflict = 6,
  kWrongSeal = 7,    // ReadReq: the node is not sealed at the requested epoch
};
inline constexpr std::uint16_t kLastReplyCode = 7;

inline bool KnownType(std::uint8_t t) { return t >= kFirstType && t <= kLastType; }
inline constexpr header::Protocol kProtocol{"replication protocol", kMagic, kWireVersion, /*with_epoch=*/true, KnownType,
                                            kLastReplyCode};

// StatusResp counters, in wire order.
// The stage clocks after kSeals (sums in nanoseconds, from the node's
// runtime clock) break a write's time in the node into its parts: received
// (transport I/O thread) -> dequeued by the worker (queue) -> written to the
// log file (write) -> picked up by the sync thread (sync_queue) -> fdatasync
// (sync, per batch) -> durable reply sent (ack); *_total is received -> the
// durable reply sent. A TailReq: queue, then its handling (tail_save: the
// register's write into the log's journal; before the tail moved into the
// journal, a node_meta rewrite with two syncs and a rename), then the group
// commit's fdatasync as for appends, then the reply (tail_total).
enum class NodeCounter : std::uint8_t {
  kAppends, kAppendBytes, kFdatasyncs, kSegments, kDiskBytes, kStaleRefused,
  kGapFillBytes, kTailWrites, kReads, kPromises, kSeals,
  kAppendQueueNs, kAppendWriteNs, kSyncQueueNs, kSyncBatches, kSyncNs, kSyncAcks, kAppendAckNs, kAppendTotalNs,
  kTailRequests, kTailQueueNs, kTailSaveNs, kTailTotalNs,
  kScrubBytes,   // log bytes the scrub read back through their CRCs
  kScrubPasses,  // scrub passes over [released, durable) completed
  kCount
};
static_assert(static_cast<std::size_t>(NodeCounter::kCount) <= kMaxCounters);

// The counters' names in logservicectl status and the admin API.
inline constexpr const char* kNodeCounterNames[] = {
    "appends", "append_bytes", "fdatasyncs", "segments", "disk_bytes", "stale_refused", "gap_fill_bytes",
    "tail_writes", "reads", "promises", "seals", "append_queue_ns", "append_write_ns", "sync_queue_ns",
    "sync_batches", "sync_ns", "sync_acks", "append_ack_ns", "append_total_ns", "tail_requests", "tail_queue_ns",
    "tail_save_ns", "tail_total_ns", "scrub_bytes", "scrub_passes"};
static_assert(sizeof(kNodeCounterNames) / sizeof(kNodeCounterNames[0]) == static_cast<std::size_t>(NodeCounter::kCount));

}  // namespace strata::logservice::wire
