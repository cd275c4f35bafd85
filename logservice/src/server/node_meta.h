// NodeMeta: what a log service node must remember durably besides the log:
// the promised epoch (and the writer that holds it), the seal (epoch + LSN at
// which the current writer's stream starts on this node), the writer's seal
// history and the peer list it announced, and whether the node is still
// rebuilding its log from a peer (docs/design/logservice-node-rebuild.md:
// a node that starts without node_meta may have lost acknowledged data, so
// it does not count toward any quorum until it is rebuilt; the flag is
// kept here so that a crash halfway through a rebuild does not make the
// node a member). And the tail register the last seal installed: the
// overwritable last partial block, one slot, newest wins. It lives here,
// next to the seal history that vouches for it, so that a seal can cut the
// log and install the recovered tail in one durable write
// (docs/design/logservice-seal-with-tail.md): the write is the commit point,
// the log is cut after it, and `seal_cut` lets a node that crashed in
// between cut again at start. The writer's later registers (one per
// commit) go into the log's journal with the group commit instead; at
// start the newer of the two counts if the journal's was written in the
// seal epoch and before any newer promise
// (docs/design/logservice-tail-in-journal.md).
//
// Durability: one small file replaced atomically (storage/durable_file.h:
// temp + fdatasync + rename + dir fsync, CRC32C). A node persists a promise
// and a seal BEFORE acknowledging it (a tail image too, in the journal), so a
// crashed-and-restarted node never forgets either. Versions 1 and 2 kept the register in a file of
// its own ("tail", still read: EncodeTail / DecodeTail); their history
// entries read with an unknown end. Not thread-safe: the node's worker
// thread owns it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codec.h"
#include "storage/file_system.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

inline constexpr Lsn kCertifyAfterNextSeal = ~Lsn{0};

struct NodeMeta {
  Epoch promised_epoch = 0;
  std::uint64_t writer_id = 0;
  Epoch seal_epoch = 0;
  Lsn seal_lsn = 0;
  std::uint32_t self_index = 0;
  std::vector<repl::SealEntry> history;
  std::vector<std::string> peers;
  // Rebuilding from a peer: not yet a member (counts toward no quorum).
  bool rebuilding = false;
  // This node has been a member (always true while !rebuilding): if it is
  // rebuilding now, it lost a log that held acknowledged bytes, so a cluster
  // whose nodes are all rebuilding is not a new one (repl::RecoveryVoters).
  bool was_member = false;
  // Highest certify LSN a writer sent with a seal in seal_epoch: the log
  // must reach it before a rebuilding node becomes a member again.
  // kCertifyAfterNextSeal: the node lost its log after that seal, so the
  // seal no longer bounds what it lost; the next seal sets it.
  Lsn certify_lsn = 0;
  // The tail register (invalid: none), and whether the blocks below its
  // block are its writer's stream (repl::NodeState::tail_anchored): set when
  // it is written, cleared when a seal's histories diverge below its block.
  repl::TailImage tail;
  bool tail_anchored = false;
  // Where the seal of seal_epoch cut the log (LogStore::TruncateAfter(seal_cut,
  // seal_epoch)); a log whose newest epoch is below seal_epoch was not cut yet.
  Lsn seal_cut = 0;
  // Retention pins (docs/design/page-server.md 7.4): a follower (a page
  // server) that has not yet stored what it read from the log keeps the
  // redo at or above its pin; a release never frees at or above the lowest.
  // Set and dropped by name (PinReq, logservicectl pin-set / pin-drop).
  std::vector<repl::Pin> pins;
  // Not stored: read from a version 1 or 2 file, whose tail register is in
  // the old "tail" file (the node moves it here at start).
  bool tail_in_file = false;
  bool operator==(const NodeMeta&) const = default;
};

std::string EncodeNodeMeta(const NodeMeta& m);
[[nodiscard]] Status DecodeNodeMeta(std::string_view in, NodeMeta* out);
std::string EncodeTail(const repl::TailImage& t);
[[nodiscard]] Status DecodeTail(std::string_view in, repl::TailImage* out);

// kNotFound -> fresh node (caller uses defaults).
Result<NodeMeta> LoadNodeMeta(FileSystem& fs, const std::string& dir);
[[nodiscard]] Status SaveNodeMeta(FileSystem& fs, const std::string& dir, const NodeMeta& m);
Result<repl::TailImage> LoadTail(FileSystem& fs, const std::string& dir);
[[nodiscard]] Status SaveTail(FileSystem& fs, const std::string& dir, const repl::TailImage& t);

}  // namespace strata::logservice::server
