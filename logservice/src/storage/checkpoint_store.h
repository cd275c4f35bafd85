// CheckpointStore: InnoDB's checkpoint LSN and its small metadata blob, kept
// durably in one file replaced atomically (write "<name>.tmp", fdatasync,
// rename over "<name>", fsync the directory). The file carries a format
// version and a CRC32C; a crash at any point leaves either the old or the new
// checkpoint readable, never a mix. Thread-safe (one mutex); Write blocks for
// two fsyncs.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "storage/file_system.h"
#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::logservice {

struct Checkpoint {
  Lsn checkpoint_lsn = 0;
  Epoch epoch = 0;       // epoch of the writer that took the checkpoint
  std::string metadata;  // opaque to us; at most kMaxCheckpointMetadata bytes
  bool operator==(const Checkpoint&) const = default;
};

class CheckpointStore {
 public:
  // `dir` must exist. Nothing is read until Read().
  CheckpointStore(std::shared_ptr<FileSystem> fs, std::string dir);

  // Durable when it returns OK. On error the previous checkpoint is still the
  // one Read() returns (kNoSpace is retryable).
  Status Write(const Checkpoint& checkpoint);
  // kNotFound if no checkpoint was ever written; kCorruption if the file
  // fails its checks (it is never half-written, so this means damage).
  Result<Checkpoint> Read() const;

 private:
  std::shared_ptr<FileSystem> fs_;
  std::string dir_;
  mutable std::mutex mu_;
};

}  // namespace strata::logservice
