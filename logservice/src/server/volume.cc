// Volume record and the drop / create steps; see volume.h.
#include "volume.h"

#include <algorithm>

#include "durable_file.h"
#include "node_meta.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice::server {
namespace {

void Put32(std::string* o, std::uint32_t v) { rdma::AppendLe(o, v, 4); }
void Put64(std::string* o, std::uint64_t v) { rdma::AppendLe(o, v, 8); }
std::uint64_t GetN(std::string_view* in, int bytes) {
  const std::uint64_t x = rdma::LoadLe(in->data(), bytes);
  in->remove_prefix(bytes);
  return x;
}

// The volume's files in a data directory (volume.h). A store directory keeps
// existing (empty); the stores recreate their first segment on open.
constexpr const char* kVolumeDirs[] = {"redo", "pages"};
constexpr const char* kVolumeFiles[] = {"checkpoint", "checkpoint.tmp", "tail", "tail.tmp"};

}  // namespace

std::string EncodeVolumeRecord(const VolumeRecord& r) {
  std::string o;
  Put32(&o, kVolumeRecordVersion);
  Put32(&o, static_cast<std::uint32_t>(r.state));
  Put64(&o, r.changed_at);
  Put32(&o, static_cast<std::uint32_t>(r.cluster_id.size()));
  o += r.cluster_id;
  return o;
}

Status DecodeVolumeRecord(std::string_view in, VolumeRecord* out) {
  if (in.size() < kVolumeRecordFixedBytes) return Status::Corruption("volume record: truncated");
  VolumeRecord r;
  const std::uint64_t version = GetN(&in, 4);
  if (version != kVolumeRecordVersion)
    return Status::Corruption("volume record: version " + std::to_string(version) + ", this node reads " +
                              std::to_string(kVolumeRecordVersion));
  const std::uint64_t state = GetN(&in, 4);
  if (state != static_cast<std::uint32_t>(VolumeState::kPresent) &&
      state != static_cast<std::uint32_t>(VolumeState::kDropped))
    return Status::Corruption("volume record: unknown state " + std::to_string(state));
  r.state = static_cast<VolumeState>(state);
  r.changed_at = GetN(&in, 8);
  const std::uint64_t n = GetN(&in, 4);
  if (n > kMaxVolumeClusterId || n != in.size()) return Status::Corruption("volume record: bad cluster id length");
  r.cluster_id.assign(in.data(), n);
  *out = std::move(r);
  return Status::Ok();
}

Result<VolumeRecord> LoadVolumeRecord(FileSystem& fs, const std::string& dir) {
  auto bytes = storage::ReadDurableFile(fs, dir, kVolumeRecordName, storage::DurableFileKind::kVolume);
  if (!bytes.ok()) return bytes.status();
  VolumeRecord r;
  STRATA_RETURN_IF_ERROR(DecodeVolumeRecord(*bytes, &r));
  return r;
}

Status SaveVolumeRecord(FileSystem& fs, const std::string& dir, const VolumeRecord& r) {
  if (r.cluster_id.size() > kMaxVolumeClusterId) return Status::InvalidArgument("cluster id too long");
  return storage::WriteDurableFile(fs, dir, kVolumeRecordName, storage::DurableFileKind::kVolume,
                                   EncodeVolumeRecord(r));
}

Result<bool> VolumePresent(FileSystem& fs, const std::string& dir) {
  auto r = LoadVolumeRecord(fs, dir);
  if (r.ok()) return r->state == VolumeState::kPresent;
  if (r.status().is_not_found()) return true;
  return r.status();
}

Status RemoveVolumeFiles(FileSystem& fs, const std::string& dir) {
  for (const char* sub : kVolumeDirs) {
    const std::string path = JoinPath(dir, sub);
    auto names = fs.ListDir(path);
    if (!names.ok()) {
      if (names.status().is_not_found()) continue;
      return names.status();
    }
    for (const auto& name : *names) {
      Status s = fs.Remove(JoinPath(path, name));
      if (!s.ok() && !s.is_not_found()) return s;
    }
    STRATA_RETURN_IF_ERROR(fs.SyncDir(path));
  }
  for (const char* name : kVolumeFiles) {
    Status s = fs.Remove(JoinPath(dir, name));
    if (!s.ok() && !s.is_not_found()) return s;
  }
  return fs.SyncDir(dir);
}

Status DropVolume(FileSystem& fs, const std::string& dir, const std::string& cluster_id, std::uint64_t now) {
  NodeMeta meta;
  auto old = LoadNodeMeta(fs, dir);
  if (old.ok()) meta = *old;
  else if (!old.status().is_not_found()) return old.status();
  // Every epoch this node has seen is at most the promised one (appends,
  // seals and gap fills all carry a promised epoch); seal and history are
  // checked too so a damaged promise cannot lower the floor.
  Epoch floor = std::max(meta.promised_epoch, meta.seal_epoch);
  for (const auto& h : meta.history) floor = std::max(floor, h.epoch);
  // Everything else goes back to its default: the node holds, and vouches
  // for, an empty volume, like a node that was never written to.
  NodeMeta fenced;
  fenced.promised_epoch = floor + 1;
  fenced.peers = meta.peers;
  fenced.self_index = meta.self_index;
  STRATA_RETURN_IF_ERROR(SaveNodeMeta(fs, dir, fenced));
  STRATA_RETURN_IF_ERROR(SaveVolumeRecord(fs, dir, VolumeRecord{VolumeState::kDropped, now, cluster_id}));
  return RemoveVolumeFiles(fs, dir);
}

Status CreateVolume(FileSystem& fs, const std::string& dir, const std::string& cluster_id, std::uint64_t now) {
  // A crash in the middle of a drop may have left files behind.
  STRATA_RETURN_IF_ERROR(RemoveVolumeFiles(fs, dir));
  return SaveVolumeRecord(fs, dir, VolumeRecord{VolumeState::kPresent, now, cluster_id});
}

}  // namespace strata::logservice::server
