// Node: one log service node (what logserviced runs). Serves the replication
// protocol (src/replication/wire.h) over rdma/ and keeps the redo log, the
// tail register (in the log's journal; the seal's in node_meta), the
// checkpoint and stage-1 pages in its data directory.
//
// Threads and hand-offs:
//   - transport I/O thread: decodes each message (a malformed one closes the
//     connection with a logged reason) and queues it; never blocks;
//   - worker thread: executes requests one at a time, in arrival order
//     (so one writer's appends reach the LogStore in order). Append and
//     Tail only write to the page cache (a tail register is a journal
//     record after the blocks) and hand the ack to
//   - the sync thread: group commit. It takes every pending append and tail
//     ack, calls LogStore::Sync() once, publishes the tail registers, and
//     then acknowledges them all with the node's durable LSN (the end of its
//     gap-free fdatasync'ed prefix).
//     Nothing is acknowledged before it is on disk, and nothing after a
//     newer epoch was promised (the fence is checked again when the ack is
//     built, see below);
//   - the catch-up thread: when the node's gap-free prefix ends below what
//     it knows exists (the writer's seal LSN, the highest received range, the
//     writer's commit hint), it reads the missing bytes from a peer that is
//     sealed in the same epoch and appends them (gap filling). When that
//     peer has released the bytes (we are empty, or were away while the
//     cluster released past our end) it takes the peer's checkpoint and
//     starts our log at the peer's released LSN (rebuilding). It also makes
//     a rebuilding node a member again once that is safe (below);
//   All three are logservice::Thread's of NodeOptions::runtime and wait only
//   on its CondVars and clock (runtime.h), never holding another mutex while
//   they wait: the deterministic simulator (logservice/tests/sim/) runs them
//   as fibers on one OS thread, logserviced as std::threads.
//
// Fencing: requests carry the writer's epoch. A node promises an epoch (and
// persists the promise, fdatasync + rename) before acknowledging it and from
// then on refuses every request with an older epoch (kStaleEpoch). A writer
// must also Seal the node in its epoch (truncating whatever a previous writer
// left beyond the sealed stream) before its appends are accepted. The seal
// and the recovered tail it carries become the node's state in one durable
// node_meta write, before the log is cut: the cut may remove the blocks that
// carried the tail's bytes, and a node that crashes before the cut is done
// cuts again at start (docs/design/logservice-seal-with-tail.md). The check
// holds when a reply is built, not only when a request arrives: an append
// queued under epoch E is acknowledged only if E is still the promised
// (and sealed) epoch after its fdatasync; a promise of E+1 in between makes
// it a kStaleEpoch reply. A promise reply reports only fdatasync'ed bytes
// as durable. Every reply's header carries the node's promised epoch at
// the time it was built.
//
// Rebuilding (docs/design/logservice-node-rebuild.md): a node that starts
// without node_meta may have lost bytes it acknowledged and promises it
// made. It reports NodeState::rebuilding, and writers count neither its log
// in recovery nor its acknowledgements until it is a member again: sealed in
// epoch E, its log reaches the seal's certify LSN (all E's writer may have
// acknowledged) and every peer answers, none with a promise above the
// node's own (a lost copy of a newer writer's promise). The flag
// lives in node_meta, so a crash in the middle keeps the node rebuilding.
//
// Failure handling: storage errors are answered with kStoreError and logged;
// a store that needs recovery makes the node refuse writes until restarted.
// A damaged log (a record failing its CRC) is moved aside at start and
// rebuilt from peers (log_quarantine.h); damage found while running (a read,
// the scrub thread) stops acknowledgements and asks the owner to restart
// the node, which then does the same.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "codec.h"
#include "storage/file_system.h"
#include "runtime/network.h"
#include "runtime/runtime.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

struct NodeOptions {
  std::string node_id = "node";
  std::string listen = "tcp://127.0.0.1:0";
  std::string data_dir;
  std::vector<std::string> peers;  // initial peer list; a writer's Seal replaces it
  std::string cluster_id = "strata";
  std::string secret;
  std::uint64_t segment_bytes = 64ull << 20;
  // If non-zero, the node's files may use at most this many bytes; beyond
  // it writes fail as on a full disk (kNoSpace: the node stops
  // acknowledging, logs event=store_error, and resumes once space is freed).
  std::uint64_t disk_limit_bytes = 0;
  // Every file the node touches goes through this; null: the local disk
  // (PosixFileSystem). Tests pass a wrapper that fails or holds chosen calls
  // (e.g. the group commit's fdatasync) to reach a state deterministically.
  std::shared_ptr<FileSystem> fs;
  // Threads, waits and the clock (runtime.h); null: SystemRuntime(). The
  // simulator (logservice/tests/sim/) runs the node on its own.
  std::shared_ptr<Runtime> runtime;
  // How the node listens and reaches its peers (network.h); null: an
  // rdma::Transport with cluster_id and secret. Must run on `runtime`. The
  // node drops its references at Stop(); when the last one goes, the
  // network closes the node's connections (as a Transport does).
  std::shared_ptr<Network> network;
  // One structured line per event ("event=... key=value ..."); thread-safe.
  std::function<void(std::string_view level, std::string_view line)> log;

  // A damaged log (a record failing its CRC, found by Start's recovery, a
  // read or the scrub; see log_quarantine.h). kRebuild: Start moves it aside
  // and rebuilds from peers; at run time the node stops acknowledging and
  // calls on_log_damaged, whose owner (NodeHost) restarts it. kStop: Start
  // fails naming the damage, as before automatic healing (for an operator
  // who wants to inspect the disk first).
  enum class DamagedLog { kRebuild, kStop };
  DamagedLog damaged_log = DamagedLog::kRebuild;
  // Called once, from a node thread, when damage is found at run time; must
  // not block on the node (NodeHost hands it to its own thread).
  std::function<void(const std::string& reason)> on_log_damaged;
  // Scrub: every scrub_interval (0: never) read the whole retained log
  // [released, durable) back through its CRCs, at most scrub_bytes_per_second,
  // so rot in records nobody reads is found while the peers still hold them.
  std::chrono::milliseconds scrub_interval{0};
  std::uint64_t scrub_bytes_per_second = 64ull << 20;
  // Tests only (the simulator's --inject follow-unacknowledged): answer
  // followers up to the durable end, ignoring the writer's acknowledged
  // frontier, to show that the simulator's follower check catches it.
  bool testing_follow_to_durable = false;
};

class Node {
 public:
  static Result<std::unique_ptr<Node>> Start(NodeOptions options);
  ~Node();  // Stop()
  // The bound listen address, with the real port.
  std::string address() const;
  // Stops accepting, finishes queued work, syncs, joins threads. Idempotent.
  void Stop();
  // Snapshot of the node's state and counters (what StatusReq returns). Thread-safe.
  repl::NodeState State() const;

  struct Impl;

 private:
  explicit Node(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::logservice::server
