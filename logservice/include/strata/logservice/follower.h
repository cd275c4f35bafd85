// LogFollower: the log service's follower mode (docs/design/page-server.md
// 7.1), beside LogClient's kWriter and kReadOnly. A follower (pageserverd)
// reads the redo the writer has acknowledged as it grows, and keeps it from
// being released with a retention pin (7.4). It never takes part in the
// writer's protocol: no epoch, no promise, no seal, no recovery.
//
// What Follow returns is final: every node answers only below
// min(its durable end, the writer's acknowledged frontier it was told), and
// what a write quorum acknowledged is kept by every later writer's recovery,
// so no seal cuts it. (Exception, by contract: ClusterConfig::seal_at, where
// InnoDB's own recovery cuts acknowledged bytes of a torn mini-transaction;
// the page server stops at complete mini-transactions for that reason.) The
// partial last block is returned apart, as a tail image that may grow.
//
// Threads: thread-compatible (one caller at a time); Follow blocks up to
// `wait`. Nodes are tried in the configured order: the first (pageserverd's
// co-located node) while it answers, the next ones when it does not.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/logservice/client.h"

namespace strata::logservice::client {

struct FollowBatch {
  Lsn from = 0;
  std::string bytes;    // [from, from + bytes.size()): acknowledged, immutable
  Lsn frontier = 0;     // the answering node's acknowledged frontier (>= from + bytes.size())
  Lsn released = 0;     // where the answering node's log starts
  // The acknowledged partial last block, when bytes end at its block
  // (tail_block == from + bytes.size()); its bytes [tail_block,
  // tail_data_end) may be rewritten as the block grows: read it again.
  Lsn tail_block = 0, tail_data_end = 0;
  std::string tail_image;
  std::string node;     // the address that answered
  Lsn end() const { return from + bytes.size(); }
};

struct PinInfo {
  std::string name;
  Lsn lsn = 0;
  bool operator==(const PinInfo&) const = default;
};

class LogFollower {
 public:
  // Uses nodes, transport, cluster_id, secret, write_quorum (for pins),
  // op_timeout, log, runtime and network of `config`; mode is ignored.
  // Connects lazily: Open fails only on a bad configuration.
  static ClientResult<std::unique_ptr<LogFollower>> Open(ClusterConfig config);
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // Acknowledged redo from `from`, at most max_bytes. Returns as soon as a
  // node has bytes at `from`, or a tail whose data end is above
  // `have_tail_end`; otherwise polls until `wait` passes and returns an
  // empty batch. kNotFound: every node that answered has released `from`;
  // kUnavailable: no node answered (the reasons, by node).
  ClientResult<FollowBatch> Follow(Lsn from, std::size_t max_bytes,
                                   std::chrono::milliseconds wait = std::chrono::milliseconds(100),
                                   Lsn have_tail_end = 0);

  // Retention pins on every node: a node frees no redo at or above its
  // lowest pin. Ok once W nodes stored it durably (the message names the
  // others); set again to move it, as the follower's stored LSN advances.
  ClientStatus SetPin(const std::string& name, Lsn lsn);
  ClientStatus DropPin(const std::string& name);
  // The pins of node `index` (0-based, as configured).
  ClientResult<std::vector<PinInfo>> ListPins(std::size_t index);

  struct Impl;

 private:
  explicit LogFollower(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::logservice::client
