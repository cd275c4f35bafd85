// FileSystem: the only way the storage layer touches the disk.
//
// Production uses PosixFileSystem(); tests use FaultInjectionFileSystem
// (fault_injection_file_system.h), which models exactly what survives a crash
// and fails chosen calls. Paths are plain strings joined with '/'.
//
// Durability model the storage layer relies on (and the fake enforces):
//   - appended bytes survive a crash only after WritableFile::Sync();
//   - a created, renamed or removed directory entry survives only after
//     FileSystem::SyncDir() on its parent directory;
//   - a failed Append may leave a prefix of its data in the file; Size()
//     then includes that prefix and the caller must Truncate() it away.
// Thread-safety: a FileSystem is thread-safe. A WritableFile is used by one
// thread at a time, except that Sync() may run concurrently with Append() (as
// fdatasync may); a ReadableFile is safe for concurrent ReadAt().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/logservice/status.h"

namespace strata::logservice {

class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Reads up to n bytes at offset into *out (replacing its contents). A short
  // result means end of file.
  virtual Status ReadAt(std::uint64_t offset, std::size_t n, std::string* out) const = 0;
  virtual Result<std::uint64_t> Size() const = 0;
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends at the current end. On error a prefix may have been written.
  virtual Status Append(std::string_view data) = 0;
  // Cuts the file to `size` bytes (used to undo a failed Append and to cut a torn tail).
  virtual Status Truncate(std::uint64_t size) = 0;
  // fdatasync: everything appended or truncated so far survives a crash.
  virtual Status Sync() = 0;
  // Bytes in the file as this handle knows it (includes a failed Append's prefix).
  virtual std::uint64_t Size() const = 0;
  // Fills the file past Size() up to `upto` with `pattern` (the byte at
  // file offset o is pattern[o % pattern.size()]), so that appends there
  // overwrite blocks that exist and are initialised: their fdatasync then
  // has no file size or extent change to commit, only data (ext4 on these
  // machines: about 130 us against 205 us per small append). Size() and
  // where Append writes are unchanged; readers see the pattern past it;
  // Truncate drops it. Durable with the next Sync. On error part of the
  // pattern may remain past Size(). Default (the test and space-limited
  // file systems): nothing.
  virtual Status Preallocate(std::uint64_t /*upto*/, std::string_view /*pattern*/) { return Status::Ok(); }
};

enum class OpenMode {
  kCreateNew,         // fail (kIoError, EEXIST) if the file exists
  kCreateOrTruncate,  // create, or empty an existing file
  kOpenExisting,      // append to an existing file (kNotFound if missing)
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) = 0;
  virtual Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) = 0;
  // Names (not paths) of the entries of dir, unsorted, without "." and "..".
  virtual Result<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  // Creates dir (and missing parents); OK if it exists. Makes the new entries durable.
  virtual Status CreateDirs(const std::string& dir) = 0;
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  virtual Result<bool> Exists(const std::string& path) = 0;
};

// The real thing: open/pwrite/fdatasync/rename/unlink on the local disk.
std::shared_ptr<FileSystem> PosixFileSystem();

// `base`, as if the files under `root` lived on a disk of `limit_bytes`: once
// they would exceed it, WritableFile::Append fails with ENOSPC (kNoSpace)
// and writes nothing, as on a full disk; removing or truncating files gives
// the space back. Counts the files already under `root` at creation; does
// not count directory entries or metadata. logserviced's disk_limit_bytes
// (bounded disk use per node; also how multi-process tests fill a node's
// disk without filling the machine's).
std::shared_ptr<FileSystem> SpaceLimitedFileSystem(std::shared_ptr<FileSystem> base, const std::string& root,
                                                   std::uint64_t limit_bytes);

std::string JoinPath(const std::string& dir, const std::string& name);

}  // namespace strata::logservice
