// CheckpointStore: one durable file "checkpoint" (format in disk_format.h,
// replace protocol in durable_file.h).
#include "storage/checkpoint_store.h"

#include "durable_file.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice {

namespace {
constexpr char kCheckpointFileName[] = "checkpoint";
}

CheckpointStore::CheckpointStore(std::shared_ptr<FileSystem> fs, std::string dir)
    : fs_(std::move(fs)), dir_(std::move(dir)) {}

Status CheckpointStore::Write(const Checkpoint& checkpoint) {
  if (checkpoint.metadata.size() > kMaxCheckpointMetadata)
    return Status::InvalidArgument("checkpoint metadata of " + std::to_string(checkpoint.metadata.size()) +
                                   " bytes (at most " + std::to_string(kMaxCheckpointMetadata) + ")");
  std::string payload(storage::kCheckpointFixedSize, '\0');
  rdma::PutFixed64(&payload[0], checkpoint.checkpoint_lsn);
  rdma::PutFixed64(&payload[8], checkpoint.epoch);
  payload.append(checkpoint.metadata);
  std::lock_guard<std::mutex> lock(mu_);
  return storage::WriteDurableFile(*fs_, dir_, kCheckpointFileName, storage::DurableFileKind::kCheckpoint, payload);
}

Result<Checkpoint> CheckpointStore::Read() const {
  std::lock_guard<std::mutex> lock(mu_);
  auto payload = storage::ReadDurableFile(*fs_, dir_, kCheckpointFileName, storage::DurableFileKind::kCheckpoint);
  if (!payload.ok()) return payload.status();
  if (payload->size() < storage::kCheckpointFixedSize)
    return Status::Corruption(JoinPath(dir_, kCheckpointFileName) + ": payload too short for a checkpoint");
  Checkpoint out;
  out.checkpoint_lsn = rdma::GetFixed64(payload->data());
  out.epoch = rdma::GetFixed64(payload->data() + 8);
  out.metadata = payload->substr(storage::kCheckpointFixedSize);
  return out;
}

}  // namespace strata::logservice
