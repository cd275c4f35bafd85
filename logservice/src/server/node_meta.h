// NodeMeta: what a log service node must remember durably besides the log:
// the promised epoch (and the writer that holds it), the seal (epoch + LSN at
// which the current writer's stream starts on this node), the writer's seal
// history and the peer list it announced, and whether the node is still
// rebuilding its log from a peer (docs/design/logservice-node-rebuild.md:
// a node that starts without node_meta may have lost acknowledged data, so
// it does not count toward any quorum until it is rebuilt; the flag is
// kept here so that a crash halfway through a rebuild does not make the
// node a member). And the tail register: the
// overwritable last partial block, one slot, newest wins.
//
// Durability: both live in small files replaced atomically
// (storage/durable_file.h: temp + fdatasync + rename + dir fsync, CRC32C).
// A node persists a promise BEFORE acknowledging it and a tail image BEFORE
// acknowledging it, so a crashed-and-restarted node never forgets either.
// Not thread-safe: the node's worker thread owns them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "codec.h"
#include "strata/logservice/file_system.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

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
  // Highest certify LSN a writer sent with a seal in seal_epoch: the log
  // must reach it before a rebuilding node becomes a member again.
  Lsn certify_lsn = 0;
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
