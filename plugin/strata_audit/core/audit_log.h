// The audit log sink: stamps, orders, buffers and writes records.
//
// Threads and hand-offs:
// - Session threads call append(). In ASYNCHRONOUS and PERFORMANCE the
//   record is copied, not formatted (raw_record.h says why): its fields are
//   encoded with no shared state touched, then handed to a lock-free
//   RecordRing (record_ring.h explains the design and its memory ordering):
//   one compare-and-swap gives the record its id and its bytes, the time
//   (never going backwards, see stamp_time()) is taken for that id and
//   written into the copy, which goes into the ring and is published. Ids
//   and byte ranges are handed out in the same order and the writer
//   consumes in that order, so ids and timestamps increase in file order
//   and two records never interleave. No session waits for another on this
//   path.
// - The writer thread takes every published record from the oldest on (up
//   to the first one still being copied), formats them (the id is the
//   record's place in the ring) and writes the batch with one write under
//   file_mu_, then frees them. It sleeps up to kBatchWindow to let a batch
//   build up, and after each drain sleeps out one more window before it
//   goes idle; a session wakes it (mu_ + cv_data_) only when it sleeps idle
//   (nothing came for a whole window), when the buffer is a quarter full,
//   or when the writer sleeps waiting for exactly this record (its session
//   was preempted while copying it); checked with one atomic load of
//   writer_state_. Under steady load the writer so wakes once per window,
//   on its own timer, and sessions make no system call to wake it.
// - Full buffer: in ASYNCHRONOUS the session first drains the buffer
//   itself if nobody holds file_mu_ (Audit_log_session_drains): with many
//   more sessions than CPUs the writer thread can wait long for a CPU,
//   while the session is running already. Otherwise it waits for space
//   (Audit_log_write_waits; on cv_space_, registered in waiters_).
//   Whoever holds file_mu_ is the ring's one consumer (and formats).
//   PERFORMANCE drops the record (Audit_log_events_lost). A record longer
//   than the whole buffer is, in ASYNCHRONOUS, reserved by reference: the
//   session keeps its bytes and waits until the writer has written them
//   (counted as a wait), in order; in PERFORMANCE it is dropped.
// - SEMISYNCHRONOUS / SYNCHRONOUS: the session formats its record, then
//   stamps and writes it itself under mu_ then file_mu_; SYNCHRONOUS also
//   fdatasyncs each record.
// - Lock order: mu_ before file_mu_. reopen() and rotation take file_mu_.
// Failure handling: a failed write (full disk, I/O error) drops the records
// it carried (counted as lost and in Audit_log_write_errors), is reported
// once to the error log, and the next write tries again; recovery is
// reported too. The writer never retries in a loop, so in the
// non-synchronous strategies a full disk never blocks sessions beyond
// ASYNCHRONOUS's wait for space (the buffer drains as records are dropped).
// Durability: records are in the kernel once written; SYNCHRONOUS also
// makes each durable before append() returns. stop() drains the buffer.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "format.h"
#include "fs.h"
#include "log_file.h"
#include "raw_record.h"
#include "record.h"
#include "record_ring.h"

namespace strata_audit {

enum class Strategy : uint8_t {
  kAsynchronous,
  kPerformance,
  kSemisynchronous,
  kSynchronous
};

std::optional<Strategy> parse_strategy(std::string_view name);

// Where records go. SYSLOG sends each record (one line, without its '\n')
// as one syslog message; no file, no rotation.
enum class Handler : uint8_t { kFile, kSyslog };

struct Options {
  std::string path;
  Format format = Format::kJson;
  Strategy strategy = Strategy::kAsynchronous;
  size_t buffer_size = 1 << 20;
  uint64_t server_id = 0;
  uint64_t rotate_on_size = 0;  // 0: never rotate
  unsigned rotations = 0;       // rotated files kept; 0: all
  Handler handler = Handler::kFile;
  // SYSLOG: sends one record (no '\n'); nullptr: ::syslog() with
  // syslog_priority (facility | level), the line prefixed by syslog_ident
  // and ": " (the process-wide openlog() identity is left alone).
  std::function<void(std::string_view)> syslog_write;
  int syslog_priority = 0;
  std::string syslog_ident;
  Fs *fs = nullptr;                       // nullptr: posix_fs()
  std::function<int64_t()> clock_us;      // nullptr: system clock
  // Tests: called by the writer thread before each write, holding no lock
  // (a test blocks in it to stand for a writer that gets no CPU).
  std::function<void()> before_writer_drain;
  // Error log sink: (is_error, message). Called without locks held by
  // sessions, possibly from the writer thread.
  std::function<void(bool, const std::string &)> log;
};

struct Stats {
  std::atomic<uint64_t> events_written{0};
  std::atomic<uint64_t> events_lost{0};
  std::atomic<uint64_t> total_size{0};    // bytes written since start
  std::atomic<uint64_t> current_size{0};  // size of the current file
  std::atomic<uint64_t> write_waits{0};
  std::atomic<uint64_t> session_drains{0};  // full buffer written by a session
  std::atomic<uint64_t> write_errors{0};
  std::atomic<uint64_t> rotations_done{0};
  // Times a session woke the writer thread (each is a futex wake on the
  // session's path); under steady load the writer wakes on its own timer.
  std::atomic<uint64_t> writer_wakeups{0};
};

class AuditLog {
 public:
  // The longest a record waits in the buffer before the writer takes it
  // (the writer is woken earlier when the buffer is a quarter full).
  static constexpr std::chrono::milliseconds kBatchWindow{5};

  explicit AuditLog(Options opts);
  ~AuditLog();
  AuditLog(const AuditLog &) = delete;
  AuditLog &operator=(const AuditLog &) = delete;

  // Opens the file (removing a torn tail left by a crash), continues the
  // record ids found in it, and starts the writer. Error: errno, *error set.
  [[nodiscard]] int start(std::string *error);
  // Drains the buffer, stops the writer, syncs and closes the file.
  void stop();

  void append(const Record &r);

  // Closes and reopens the file (external rotation). Returns errno.
  int reopen();
  void set_rotation(uint64_t rotate_on_size, unsigned rotations);
  // Waits until everything appended before the call has been handed to the
  // kernel (or dropped on a write error).
  void flush_buffer();

  const Stats &stats() const { return stats_; }
  uint64_t last_record_id() const;

 private:
  enum WriterState : int { kBusy, kBatchSleep, kIdleSleep, kAwaitRecord };

  // Writes and frees the published records from the oldest on, as the
  // ring's consumer; false if there were none (the oldest is still being
  // copied). drain_if_idle() does it only if file_mu_ is free.
  bool drain_locked(std::unique_lock<std::mutex> file_lock);
  bool drain_if_idle();

  bool asynchronous() const {
    return opts_.strategy == Strategy::kAsynchronous ||
           opts_.strategy == Strategy::kPerformance;
  }
  // The record's time: the clock, but never before a time already given to
  // a record with a smaller id (a clock stepping back).
  int64_t stamp_time();
  void append_sync(std::string_view head, std::string_view tail);
  void wake_writer();
  void writer_main();
  // Sleeps up to kBatchWindow (state kBatchSleep: sessions wake the writer
  // only for a quarter-full buffer), unless the buffer is that full
  // already, sessions wait for room, or stop() was called.
  void batch_sleep();
  // Formats the batch's encoded records into formatted_; file_mu_ held.
  void format_batch_locked(const RecordRing::Batch &b);
  // Writes bytes, n whole records; file_mu_ must be held.
  void write_locked(std::string_view bytes, uint64_t n, bool sync);
  void report(bool error, const std::string &msg);
  // Reports a mode the last open of file_ changed; file_mu_ held.
  void report_tightened_locked();

  Options opts_;
  Stats stats_;
  std::string log_start_;  // set by start(), then read-only

  // ASYNCHRONOUS / PERFORMANCE: sessions and the writer, no lock.
  RecordRing ring_;
  std::atomic<int64_t> last_time_us_{0};
  std::atomic<int> writer_state_{kBusy};
  std::atomic<uint64_t> awaited_id_{0};  // kAwaitRecord: the record's id
  std::atomic<int> waiters_{0};  // sessions waiting on cv_space_
  std::atomic<bool> stop_{false};

  // Sleeping and waking, and the synchronous strategies.
  mutable std::mutex mu_;
  std::condition_variable cv_data_;   // the writer sleeps
  std::condition_variable cv_space_;  // sessions wait for the writer
  bool running_ = false;
  uint64_t sync_next_id_ = 1;  // SEMISYNCHRONOUS / SYNCHRONOUS
  std::string scratch_;        // SEMISYNCHRONOUS / SYNCHRONOUS

  std::mutex file_mu_;  // guards file_, io_error_, rotation settings and:
  std::string formatted_;    // the batch being written
  std::string straddling_;   // a record wrapping around the ring's end
  LogFile file_;
  bool io_error_ = false;
  uint64_t errors_in_episode_ = 0;
  uint64_t rotate_on_size_;
  unsigned rotations_;

  std::thread writer_;
};

// The record id at the start of a line written by any of our formats
// ("record":"N_..., RECORD="N_..., "Name","N_...), or 0 if none.
uint64_t parse_record_id(std::string_view line);

// The id of the last record of an open file (0 if it has none), whatever
// the record's length. Error: errno, *what set.
[[nodiscard]] int last_record_id_in(LogFile *file, uint64_t *id,
                                    std::string *what);

}  // namespace strata_audit
