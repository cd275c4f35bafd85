// Moving a damaged redo log aside, so that the node can rebuild it from its
// peers instead of staying down (issue 29, hole 3: "fail-stop that segment,
// say so, and heal it from peers").
//
// Why the whole log and not the damaged segment: a node's log is one
// gap-free stream; a hole in its middle is a state no other code path has,
// while "node_meta kept, redo/ gone" is the rebuild path every multi-node
// test and the simulator already drive (docs/design/logservice-node-rebuild.md).
// The node keeps its promises (node_meta), turns rebuilding (counts toward
// no quorum), copies the log from a peer from the peer's released LSN, and
// becomes a member again under the same rules as a node whose disk was
// replaced. The cost is copying the retained log (bounded by the distance
// to InnoDB's checkpoint), paid only when a disk rots.
//
// Why aside and not deleted: the damaged copy is evidence, and if every
// node lost its log at once (a bug, not rot) it may be the only copy of
// acknowledged redo: an operator can check and restore it. Writers then
// refuse to take the cluster for a new one (NodeState::was_member). At most
// kMaxQuarantinedLogs copies are kept: a disk that keeps rotting is refused,
// naming the copies, rather than filling up.
#pragma once
#include <string>
#include <vector>

#include "storage/file_system.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

inline constexpr int kMaxQuarantinedLogs = 3;

// Renames <data_dir>/redo to the first free <data_dir>/redo.damaged-N
// (N = 1..kMaxQuarantinedLogs), makes the rename durable (directory
// fsync), then writes `reason` into the moved directory's DAMAGED file.
// Returns the new path. kCorruption, changing nothing, when
// kMaxQuarantinedLogs copies exist already (the message carries `reason`
// and names them); kNotFound when there is no redo directory.
Result<std::string> QuarantineLog(FileSystem& fs, const std::string& data_dir, const std::string& reason);

// The quarantined copies present in data_dir, oldest first.
Result<std::vector<std::string>> QuarantinedLogs(FileSystem& fs, const std::string& data_dir);

}  // namespace strata::logservice::server
