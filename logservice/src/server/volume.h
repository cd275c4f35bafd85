// Volume: the one redo volume a log service node holds, and how it is
// dropped and created again (logservicectl drop-volume / create-volume,
// through the admin API; NodeHost runs them).
//
// What the volume is, in the node's data directory:
//   redo/        the redo stream (LogStore segments)
//   pages/       stage-1 page images (PageStore segments)
//   checkpoint   the writer's checkpoint record (InnoDB keeps its volume
//                identity there: volume_uuid, log_uuid, bootstrap_complete)
//   tail         the tail register (the partial last block)
// and what survives a drop:
//   node_meta    the fencing state: promised epoch (a drop raises it), writer,
//                seal and seal history (a drop clears them), peers
//   volume       this record: present or dropped, the cluster id, when
// A node that has no `volume` record holds a present volume (a fresh data
// directory gets its empty volume at first start, as before this record).
//
// Why a second `mysqld --initialize` needs this: a failed --initialize
// leaves its checkpoint record and redo in the volume; the next one either
// finds a finished bootstrap and refuses, or must cut the stream back to
// LSN 0, which a writer cannot do (it can only seal at the durable end).
// Only dropping the volume, on every node, empties it.
//
// Drop, on a stopped node (NodeHost stops it first), each step durable before
// the next:
//   1. node_meta: promised epoch = one above every epoch the node has seen,
//      writer id 0, seal and history cleared. Every writer of the old volume
//      is now fenced (its requests are kStaleEpoch; it cannot re-promise its
//      epoch), and the next writer's epoch is above all old data's;
//   2. the record says dropped;
//   3. the volume's files are removed; redo/ and pages/ stay, empty. A node
//      whose node_meta outlived its redo/ directory has lost its log and
//      rebuilds from its peers before it counts toward a quorum; a dropped
//      node's log is empty on purpose, on every node, and it counts.
// A crash after 2 leaves a dropped record: the next start removes the files
// again (RemoveVolumeFiles is idempotent) and does not serve. A crash before
// 2 leaves the old volume, fenced. Create: the record says present; the node
// starts on empty stores, and the next writer's stream starts at LSN 0.
//
// Contract: none of this is thread-safe; the caller owns the data directory
// (the node is stopped). Errors are returned, never thrown.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "storage/file_system.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

// On disk: a DurableFile (kind kVolume, CRC32C, atomic replace) whose payload
// is u32 version, u32 state, u64 changed_at (Unix seconds), u32 length +
// cluster id bytes; little-endian.
inline constexpr char kVolumeRecordName[] = "volume";
inline constexpr std::uint32_t kVolumeRecordVersion = 1;
inline constexpr std::size_t kVolumeRecordFixedBytes = 4 + 4 + 8 + 4;
inline constexpr std::size_t kMaxVolumeClusterId = 256;

enum class VolumeState : std::uint32_t { kPresent = 1, kDropped = 2 };

struct VolumeRecord {
  VolumeState state = VolumeState::kPresent;
  std::uint64_t changed_at = 0;  // Unix seconds of the last create / drop
  std::string cluster_id;        // the node's cluster id at that moment
  bool operator==(const VolumeRecord&) const = default;
};

std::string EncodeVolumeRecord(const VolumeRecord& r);
[[nodiscard]] Status DecodeVolumeRecord(std::string_view in, VolumeRecord* out);
// kNotFound: no record (the volume is present, see above).
Result<VolumeRecord> LoadVolumeRecord(FileSystem& fs, const std::string& dir);
[[nodiscard]] Status SaveVolumeRecord(FileSystem& fs, const std::string& dir, const VolumeRecord& r);

// True unless the record says dropped.
Result<bool> VolumePresent(FileSystem& fs, const std::string& dir);

// Steps 1-3 above. `now` is Unix seconds (a parameter so tests control it).
[[nodiscard]] Status DropVolume(FileSystem& fs, const std::string& dir, const std::string& cluster_id,
                                std::uint64_t now);
// Step 3 alone: removes whatever of redo/, pages/, checkpoint and tail exists.
[[nodiscard]] Status RemoveVolumeFiles(FileSystem& fs, const std::string& dir);
// Marks the volume present (removing leftovers of a drop first).
[[nodiscard]] Status CreateVolume(FileSystem& fs, const std::string& dir, const std::string& cluster_id,
                                  std::uint64_t now);

}  // namespace strata::logservice::server
