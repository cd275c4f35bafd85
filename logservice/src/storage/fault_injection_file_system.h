// FaultInjectionFileSystem: an in-memory FileSystem that knows what a crash
// keeps, for crash-consistency and error-path tests. Library target
// strata_logstore_testing; never linked into the daemon.
//
// Model (stricter than ext4/xfs, so passing here means passing there):
//   - each file has its current bytes and its durable bytes (as of the last
//     Sync); each directory entry is durable only after SyncDir(parent);
//   - SimulateCrash() kills every open handle (further calls fail with EIO)
//     and rolls the state back to what was durable. In kTornUnsynced mode a
//     random prefix of each file's unsynced changes survives (from the first
//     byte that differs from the durable bytes: appends, or writes over
//     space Preallocate filled), and the last surviving byte may be garbage
//     (a torn sector); in kProcessOnly mode everything written survives (the
//     kernel kept the page cache);
//   - Preallocate writes its pattern past a handle's Size() as unsynced
//     bytes; appends then overwrite them in place;
//   - directories themselves are always durable (CreateDirs is synchronous,
//     and so is renaming a directory with everything below it).
// Faults: a space limit (appends write what fits, then fail with ENOSPC),
// per-operation error injection, and "crash after N mutations", after which
// every call fails with EIO as if the process had died there. All randomness
// comes from the seed given to the constructor.
// Thread-safe: one mutex around everything.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <vector>
#include <string>

#include "storage/file_system.h"

namespace strata::logservice {

class FaultInjectionFileSystem : public FileSystem {
 public:
  enum class CrashMode { kDropUnsynced, kTornUnsynced, kProcessOnly };
  enum class Op { kAppend, kTruncate, kSync, kSyncDir, kRename, kRemove, kOpenWritable, kRead };

  explicit FaultInjectionFileSystem(std::uint64_t seed);
  ~FaultInjectionFileSystem() override;

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override;
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override;
  Result<std::vector<std::string>> ListDir(const std::string& dir) override;
  Status CreateDirs(const std::string& dir) override;
  Status SyncDir(const std::string& dir) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Result<bool> Exists(const std::string& path) override;

  // --- crashes ---
  void SimulateCrash(CrashMode mode = CrashMode::kDropUnsynced);
  // After `n` more mutating calls (Append, Truncate, Sync, SyncDir, Rename,
  // Remove, OpenWritable) succeed, the next one "dies": an Append writes a
  // random prefix of its data, and it and every later call fail with EIO
  // until SimulateCrash(). Negative n disarms.
  void CrashAfterMutations(int n);
  bool crash_point_reached() const;
  std::uint64_t mutation_count() const;

  // --- errors ---
  // The call of kind `op` after `skip` successful ones fails with `err`
  // (e.g. ENOSPC, EIO), `times` times in a row.
  void FailOp(Op op, int err, int skip = 0, int times = 1);
  // Total bytes all files may hold; an Append that does not fit writes what
  // fits and fails with ENOSPC. nullopt = unlimited.
  void SetSpaceLimit(std::optional<std::uint64_t> bytes);
  std::uint64_t used_bytes() const;

  // --- inspection and tampering (for tests) ---
  std::uint64_t sync_count() const;  // successful WritableFile::Sync calls
  Result<std::string> FileContents(const std::string& path) const;
  Status OverwriteFile(const std::string& path, std::string contents);  // durable at once
  Status FlipBit(const std::string& path, std::uint64_t offset, int bit);  // durable at once

 private:
  struct Inode;
  class WritableImpl;
  class ReadableImpl;
  friend class WritableImpl;
  friend class ReadableImpl;

  Status CheckAlive(std::uint64_t generation) const;            // mu_ held
  Status MaybeInjectFailure(Op op, const std::string& path);    // mu_ held
  Status CountMutation(Op op, const std::string& path);         // mu_ held
  Status RenameDirLocked(const std::string& from, const std::string& to);  // mu_ held
  std::uint64_t UsedBytesLocked() const;

  mutable std::mutex mu_;
  std::mt19937_64 rng_;
  std::uint64_t generation_ = 1;  // bumped by SimulateCrash; stale handles fail
  std::map<std::string, std::shared_ptr<Inode>> live_;     // what calls see
  std::map<std::string, std::shared_ptr<Inode>> durable_;  // what a crash keeps
  std::set<std::string> dirs_;
  struct Injection { Op op; int err; int skip; int times; };
  std::vector<Injection> injections_;
  std::optional<std::uint64_t> space_limit_;
  int mutations_until_crash_ = -1;
  bool dead_ = false;  // the crash point was reached
  std::uint64_t mutation_count_ = 0;
  std::uint64_t sync_count_ = 0;
};

}  // namespace strata::logservice
