// Encode/decode of replication messages (format: wire.h). Pure functions, no
// I/O, no allocation beyond the caps in wire.h. Decode rejects anything that
// is not exactly one well-formed message of a known type and version.
#pragma once
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"
#include "wire.h"

namespace strata::logservice::repl {

// An entry's end when it is not known (read from a node_meta written before
// entries recorded it): never reached, so such an entry ranks no log.
inline constexpr Lsn kUnknownEnd = std::numeric_limits<Lsn>::max();

// The writer of `epoch` sealed the stream at `lsn`; the log it recovered
// (everything acknowledged before it took over) ended at `end`: its
// recovered tail's data end, or `lsn` without a tail. end >= lsn.
struct SealEntry {
  Epoch epoch = 0;
  Lsn lsn = 0;
  Lsn end = kUnknownEnd;
  bool operator==(const SealEntry&) const = default;
};

struct TailImage {  // the overwritable last partial block
  Epoch epoch = 0;
  Lsn block_lsn = 0;
  Lsn data_end = 0;  // block_lsn < data_end <= block_lsn + image.size() when valid
  std::string image;
  bool valid() const { return data_end > block_lsn; }
  bool operator==(const TailImage&) const = default;
};

struct NodeState {
  std::string node_id;
  Epoch promised_epoch = 0;
  std::uint64_t writer_id = 0;
  Epoch seal_epoch = 0;
  Lsn seal_lsn = 0;
  Epoch last_epoch = 0;  // newest epoch of any stored byte or fence
  Lsn released = 0, durable = 0, complete = 0, highest = 0;
  TailImage tail;
  // The blocks below the tail register's block are the stream of the
  // register's writer: no seal since the register was written diverged
  // below its block. Such a register counts in recovery even when a later
  // seal's history no longer lists its writer (quorum.h, ChooseSource).
  bool tail_anchored = false;
  std::vector<SealEntry> history;
  std::vector<std::uint64_t> counters;  // indexed by wire::NodeCounter
  // Lost (or never had) its storage and is not yet rebuilt from a peer: its
  // log must not vote in recovery nor its acks count toward a write quorum.
  bool rebuilding = false;
  // Has been a member: a rebuilding node with this set lost a log that held
  // acknowledged bytes (a damaged log it moved aside, or a lost redo/
  // directory with node_meta kept), so it is not a node of a new cluster.
  bool was_member = false;
  bool operator==(const NodeState&) const = default;
};

struct WireRange {
  Lsn start = 0;
  Epoch epoch = 0;
  std::string bytes;
  bool operator==(const WireRange&) const = default;
};

// A retention pin (wire.h PinReq): the node keeps redo at or above lsn.
struct Pin {
  std::string name;
  Lsn lsn = 0;
  bool operator==(const Pin&) const = default;
};

// One message. Only the fields of its type are encoded (see wire.h); each
// field has one meaning, whatever position the wire gives it.
struct Frame {
  wire::MsgType type = wire::MsgType::kStatusReq;
  wire::ReplyCode code = wire::ReplyCode::kOk;
  std::uint64_t request_id = 0;
  Epoch epoch = 0;
  std::string error;  // responses
  std::uint64_t writer_id = 0;  // PromiseReq
  // The message's first LSN: seal_lsn (SealReq), start_lsn (AppendReq),
  // block_lsn (Tail*), from_lsn (ReadReq, FollowReq), the checkpoint's or
  // page's LSN, durable_lsn (AppendResp, ReadResp), frontier (FollowResp),
  // acked_lsn (HintReq), the release LSN (Release*), the pin's LSN (PinReq).
  Lsn lsn = 0;
  Lsn commit_lsn = 0;        // SealReq, AppendReq: the writer's quorum frontier
  Lsn certify_lsn = 0;       // SealReq
  std::uint32_t self_index = 0;  // SealReq: the receiver's index in peers
  std::uint32_t append_flags = 0;  // AppendReq: wire::kAppend*
  Lsn complete_lsn = 0;      // AppendResp
  Lsn data_end = 0;          // TailReq, TailResp
  Lsn durable_lsn = 0;       // TailResp
  std::uint32_t max_bytes = 0;  // ReadReq, FollowReq
  Epoch seal_epoch = 0;      // ReadReq: 0, or the epoch the node must be sealed at
  Epoch checkpoint_epoch = 0;  // CkptGetResp
  std::uint32_t space = 0, page = 0;  // PagePutReq, PageGetReq
  Lsn released = 0;          // FollowResp
  wire::PinOp pin_op = wire::PinOp::kList;  // PinReq
  bool found = false;
  std::string data;  // redo, tail image, metadata, page image
  std::vector<SealEntry> history;
  std::vector<std::string> peers;
  std::vector<WireRange> ranges;
  NodeState state;
  // SealReq: the recovered tail the node installs with the seal (block =
  // seal LSN, epoch = the seal's); invalid when the recovered log has none.
  // AppendReq with kAppendCarriesTail: the register after the redo (epoch =
  // the header's). AppendResp: the register the node holds (no image);
  // invalid when the request carried none.
  TailImage tail;
  // PinReq: the pin's name (pins[0]); PinResp: the node's pins.
  std::vector<Pin> pins;
};

std::string Encode(const Frame& f);
[[nodiscard]] Status Decode(std::span<const std::byte> bytes, Frame* out);
[[nodiscard]] Status Decode(std::string_view bytes, Frame* out);

std::string_view MsgTypeName(wire::MsgType t);
std::string_view ReplyCodeName(wire::ReplyCode c);

}  // namespace strata::logservice::repl
