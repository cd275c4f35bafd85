// Quorum rules of the replication protocol, as pure functions (no I/O, no
// clocks, no threads) so that tests can check them exhaustively.
//
// Vocabulary (docs/logservice-replication.md):
//   N nodes, write quorum W, read/promise quorum R = N - W + 1 (every R-set
//   meets every W-set, so a recovery that hears from R nodes sees every
//   byte a writer ever acknowledged, and a new writer's promise on R nodes
//   leaves no W-set for an older writer).
//   A node's "block stream" is its gap-free durable prefix (LogStore
//   durable_lsn). Its "last epoch" is the newest epoch of any byte or fence
//   it holds. The seal history lists, per writer epoch, the LSN at which that
//   writer sealed the stream when it took over.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "codec.h"

namespace strata::logservice::repl {

inline std::size_t ReadQuorum(std::size_t n, std::size_t w) { return n - w + 1; }

// What the writer knows about one node's acknowledgements in its epoch.
struct NodeAck {
  bool sealed = false;  // promised and sealed in the writer's epoch (else ignored)
  Lsn durable = 0;      // node's durable gap-free end, as last reported
  Lsn tail_block = 0;   // last acknowledged tail image: its block LSN ...
  Lsn tail_end = 0;     // ... and data end (0: none)
};

// The writer's durable frontier: the W-th highest durable end among sealed
// nodes (B), raised to the data end D of the current tail (block T) when
// T <= B and W sealed nodes, each durable up to T itself, acknowledged a
// tail (T, >= D). A node whose own blocks end below T (a gap it has not
// filled yet) does not count for the tail: it drops the register when a
// later tail arrives, and the blocks that then carry those bytes lie beyond
// its gap-free end, where a seal may cut them. Never above stream_end (the
// bytes the writer has produced).
Lsn QuorumFrontier(const std::vector<NodeAck>& nodes, std::size_t w, Lsn tail_block, Lsn tail_end);

// The epoch whose writer produced the byte at LSN end-1 of a stream sealed
// with `history` (entries in ascending epoch order): the newest entry that
// sealed below `end`. 0 for an empty prefix or history. Like Raft's "term of
// the last entry": a node sealed in epoch E that has not yet filled up to
// E's seal LSN holds no byte of E, and must not win recovery as if it did.
Epoch StreamEpochAt(const std::vector<SealEntry>& history, Lsn end);

// The newest writer of `history` whose whole recovered log (everything
// acknowledged before it took over: [0, entry.end)) lies within [0, end).
// A log that holds it holds all that writer vouched for, even without one
// byte of the writer's own: it ranks as that writer. Reaching only the
// writer's seal LSN is not enough when it also recovered a tail beyond it.
// 0 if none.
Epoch RecoveredEpochAt(const std::vector<SealEntry>& history, Lsn end);

// Recovery: the node whose log wins: the highest (rank, end of its log),
// ties to the first. A node's log is its block stream (durable), extended
// by its tail register (to the tail's data end) when the tail sits at its
// block end and its own history vouches for the tail's writer (as in
// ChooseTail) or the register is anchored (NodeState::tail_anchored), and
// the tail's writer is not older than the blocks' rank. The blocks' rank is
// the newest of the writer of the last byte (StreamEpochAt) and
// RecoveredEpochAt(history, durable); with the register, the tail's epoch.
// Counting the tail matters: a commit that lives only in the tail register
// (on W nodes) must win over a node holding the same blocks without it,
// whose history may not even contain the tail's writer (then ChooseTail,
// given that node's history, would drop the tail). Counting recovered logs
// matters: a writer that recovered an older writer's stream and got it
// acknowledged on W nodes leaves logs whose last byte is the older
// writer's; they must outrank a tail an even older, intermediate writer
// left on another node (docs/design/logservice-seal-with-tail.md).
// Returns the index, nullopt if empty.
std::optional<std::size_t> ChooseSource(const std::vector<NodeState>& states);

// Whether a tail written in `epoch` at block `end` belongs to the stream
// sealed with `history`: its writer is in the history and no later writer
// sealed below `end` (a later one would have rewritten that block).
bool TailBelongs(const std::vector<SealEntry>& history, Epoch epoch, Lsn end);

// The epoch of the source's own tail register if it counted in the source's
// rank (ChooseSource), else 0. A register can count without belonging to
// the source's history: an anchored one, whose writer a later, diverging
// seal dropped from the history while the node kept the register (it was
// behind) and its blocks below it (docs/design/logservice-seal-with-tail.md).
Epoch CountedRegisterEpoch(const NodeState& source);

// Recovery: the tail image that belongs after the winning stream (history,
// end): among tails with block_lsn == end whose writer's stream is the
// winning stream up to `end` (its epoch is in the history and no later seal
// lies below `end`, or it is `source_register`, the source's own counted
// register: CountedRegisterEpoch), the newest epoch, then the longest.
// Invalid if none.
TailImage ChooseTail(const std::vector<NodeState>& states, const std::vector<SealEntry>& history, Lsn end,
                     Epoch source_register = 0);

// Where a node must cut its log (holding [0, node_end), sealed with
// node_history) when a writer seals it with new_history: both histories agree
// on their first k entries; after that the node's bytes may come from writers
// the new stream does not contain (and the new stream's newest writer starts
// at its seal LSN), so the cut is the lowest seal LSN of either history's
// entries after k, capped at node_end.
Lsn SealPoint(const std::vector<SealEntry>& node_history, Lsn node_end, const std::vector<SealEntry>& new_history);

// ---- rebuilding nodes (docs/design/logservice-node-rebuild.md) ----
// A node that lost (or never had) its storage reports `rebuilding`: its log
// may lack bytes it once acknowledged, and its promise may have been
// forgotten. It counts toward no quorum until it is a member again.

// Which of the promised nodes' states a recovery may compare: the members,
// if at least R of them answered. If all N nodes answered and every one is
// rebuilding, all of them: a fresh cluster (or a bootstrap whose writer
// died before the nodes became members), where no byte was ever
// acknowledged, since acknowledgements count only from members; any other
// way to get there lost every member's disk. Not when one of them was a
// member and lost its log (NodeState::was_member: a damaged log it moved
// aside, a redo/ directory lost with node_meta kept): acknowledged bytes
// existed, and may survive only in what was moved aside. Otherwise nullopt:
// too few members answered, and a recovery now could miss acknowledged bytes.
std::optional<std::vector<std::size_t>> RecoveryVoters(const std::vector<NodeState>& states, std::size_t n,
                                                       std::size_t r);

// Whether a rebuilding node sealed in seal_epoch holds everything its
// sealing writer may have acknowledged: its durable end reaches
// certify_lsn, or its tail register of that epoch does, sitting at or
// below its durable end.
bool ReachesCertifyLsn(Lsn durable, const TailImage& tail, Epoch seal_epoch, Lsn certify_lsn);

// Whether the peers' states let a rebuilding node become a member: it is
// sealed, every one of the `peers` other nodes answered, and none promised
// an epoch above the node's own promise. A promise above it may be one the
// node made and lost with its disk, to a writer that fenced the one that
// sealed it; at least R - 1 peers still hold it, and since the node does
// not know W it asks them all (R - 1 of N - 1 are certainly seen only by
// asking W of them, which is all of them for N = 3). A promise the node
// holds itself it has not forgotten, unless a peer holds the same epoch for
// another writer (`writer_id`: the one the node promised it to): the node
// may have promised that epoch to that writer before it lost its disk, and
// a second writer would now hold the same epoch (found by the simulator's
// soak, seed 780223869627: two writers sealed epoch 25). And every peer still rebuilding has
// been sealed at least in our seal epoch: in a new cluster, a node must not
// become a member while another has not even been sealed, or a writer that
// dies then leaves one member and nodes that can never be sealed (a
// recovery needs R members; only all N rebuilding count as a new cluster).
// Empty if so, else why not.
std::string WhyNotMember(Epoch seal_epoch, Epoch promised_epoch, std::uint64_t writer_id, std::size_t peers,
                         const std::vector<NodeState>& answers);

}  // namespace strata::logservice::repl
