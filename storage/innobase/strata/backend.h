// Where InnoDB's redo goes when innodb_log_service_addresses is set: the
// interface between the InnoDB-facing facade (redo.cc) and a redo volume.
// No MySQL headers here or in the implementations, so they build and test
// standalone (test/, GoogleTest). Design: docs/design/innodb-redo-to-logservice.md.
//
// The volume model (the same for every backend):
//   - A volume holds InnoDB's 512-byte log blocks addressed by LSN: block k
//     is LSN [512k, 512k+512). There are no file headers in the stream.
//   - Complete blocks are appended once, in LSN order (append()). The last,
//     partial block, which InnoDB rewrites as it grows, goes to one
//     overwritable tail slot (put_tail()); it counts only while its block LSN
//     is the end of the complete-block stream.
//   - durable_lsn() is the frontier below which every byte handed over has
//     been made durable (fdatasync; in the service: a write quorum).
//   - One checkpoint record {lsn, epoch, metadata} replaced atomically.
//   - acquire_writer() makes this process the only writer (fencing any older
//     one) and reports where the log ends.
//
// Threads: InnoDB calls append/put_tail under its writer mutex (one thread at
// a time), wait_durable from the flusher (or a user thread with
// innodb_log_writer_threads=OFF, again under the flusher mutex), checkpoints
// under the checkpointer mutex, read only during recovery. durable_lsn() may
// be read from any thread. Implementations must allow those to overlap.
//
// Errors are Status values; nothing throws. kFenced means another writer
// took the volume over: the caller must stop (InnoDB: ib::fatal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::redo {

constexpr std::size_t kBlockSize = 512;  // == OS_FILE_LOG_BLOCK_SIZE

enum class Code {
  kOk = 0,
  kNotFound,     // no checkpoint: the volume is empty
  kFenced,       // another writer holds the volume
  kUnavailable,  // the volume cannot be reached / locked right now
  kCorrupt,      // data read back failed a check (length, magic, checksum)
  kIoError,      // a system call failed (message names it and errno)
  kInvalid,      // the caller broke the contract
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }
  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string &message() const { return message_; }

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

struct Checkpoint {
  std::uint64_t lsn = 0;
  std::uint64_t epoch = 0;
  std::string metadata;  // meta.h: Metadata, serialized
};

struct WriterInfo {
  std::uint64_t epoch = 0;
  // End of the readable log: the byte after the last stored block (block
  // aligned; the tail block, if any, is included as a whole).
  std::uint64_t log_end = 0;
};

// One node of the volume as the writer sees it (SHOW STATUS, the
// information_schema nodes table).
struct NodeHealth {
  std::string address;
  bool connected = false;
  bool in_quorum = false;      // connected and sealed in the writer's epoch
  std::uint64_t acked_lsn = 0;  // durable on this node, as last reported
  std::string last_error;
};

struct Health {
  std::size_t write_quorum = 1;
  std::size_t nodes_up = 0;  // nodes that count towards the write quorum
  bool fenced = false;
  std::string reason;        // why redo cannot become durable; empty when it can
  std::vector<NodeHealth> nodes;
};

// The client's write-path counters since it opened (mirrors
// strata::logservice::client::WriteStats, which this header must not
// include): sums in nanoseconds; durable_hist bucket b counts groups made
// durable in [2^b, 2^(b+1)) us. All zero for a backend without a client.
struct ClientWriteStats {
  static constexpr int kBuckets = 20;
  std::uint64_t appends = 0, tails = 0, window_wait_ns = 0, posts = 0, post_ns = 0;
  std::uint64_t first_acks = 0, first_ack_ns = 0, second_acks = 0, second_ack_ns = 0;
  std::uint64_t durable_groups = 0, durable_ns = 0;
  std::uint64_t durable_hist[kBuckets] = {};
  std::uint64_t waits = 0, wait_ns = 0, wait_wakeups = 0, wake_ns = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "dir:///path/volume" or "3 nodes a,b,c, volume v": for messages.
  virtual std::string describe() const = 0;

  // Connects (creating an empty volume when `create`). No fencing yet.
  virtual Status open(bool create) = 0;

  // Fences older writers and reports the end of the log. Once per start.
  virtual Status acquire_writer(WriterInfo *out) = 0;

  // kNotFound on an empty volume.
  virtual Status read_checkpoint(Checkpoint *out) = 0;
  // Durable on return; refused (kFenced) if another writer took over.
  virtual Status write_checkpoint(std::uint64_t lsn, std::string_view metadata) = 0;

  // Complete blocks [lsn, lsn + len): lsn and len multiples of kBlockSize.
  virtual Status append(std::uint64_t lsn, const void *blocks, std::size_t len) = 0;
  // The partial block at block_lsn (kBlockSize bytes) whose data ends at data_end.
  virtual Status put_tail(std::uint64_t block_lsn, const void *block, std::uint64_t data_end) = 0;
  // append(lsn, blocks, len) then put_tail(lsn + len, tail, data_end), for
  // a write that completed blocks and left a partial one; a backend that can
  // make both durable together (the log service: one message and one
  // fdatasync per node) overrides it.
  virtual Status append_with_tail(std::uint64_t lsn, const void *blocks, std::size_t len, const void *tail,
                                  std::uint64_t data_end) {
    if (Status s = append(lsn, blocks, len); !s.ok()) return s;
    return put_tail(lsn + len, tail, data_end);
  }
  // Returns once durable_lsn() >= lsn (everything handed over before the call).
  virtual Status wait_durable(std::uint64_t lsn) = 0;
  // Returns once everything handed over below `lsn` survives a crash of this
  // process, though maybe not of the machine holding it
  // (innodb_flush_log_at_trx_commit=2, as stock's write to the OS page
  // cache): in the service, a write quorum of nodes has it in their log
  // files (synced or not); in a directory, the write(2) returned.
  virtual Status wait_written(std::uint64_t lsn) = 0;
  virtual std::uint64_t durable_lsn() const = 0;
  // For status and monitoring; cheap enough to call per SHOW STATUS.
  virtual Health health() const = 0;
  // Write-path counters (commit anatomy); cheap, lock-free.
  virtual ClientWriteStats write_stats() const { return {}; }
  // innodb_log_service_max_inflight changed at run time (no-op where the
  // backend has no window).
  virtual void set_max_inflight(std::uint64_t /*bytes*/) {}
  // Whether appends ask for the early "written" reply that wait_written
  // counts (innodb_flush_log_at_trx_commit=2); wait_written still returns
  // without it, at the durable point.
  virtual void set_written_acks(bool /*on*/) {}

  // Drops every block at or after `lsn` (block aligned). Writer only.
  virtual Status truncate(std::uint64_t lsn) = 0;
  // Frees storage below `lsn` (never above the durable checkpoint). Best effort.
  virtual Status release(std::uint64_t lsn) = 0;

  // Reads whole blocks from `lsn` (block aligned) into buf, at most `len`
  // bytes; *got < len means the log ends there.
  virtual Status read(std::uint64_t lsn, void *buf, std::size_t len, std::size_t *got) = 0;
};

// dir://PATH: a single-node volume in a local directory (backend_dir.cc).
std::unique_ptr<Backend> make_dir_backend(std::string path);

}  // namespace strata::redo
