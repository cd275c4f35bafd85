// strata::redo: what the `// strata` hooks in InnoDB's log code call when
// innodb_log_service_addresses is set ("remote mode"). With it empty,
// enabled() is false, every hook takes the upstream path, and nothing here
// runs. Design, hook points H1..H15 and the reasons: see
// docs/design/innodb-redo-to-logservice.md in the Strata repository.
//
// Threads and ordering (the same as upstream's, the facade adds none):
//   - validate_params(): once, in innodb_init_params(), before any redo I/O.
//   - sys_init(), recovery_begin(), read(), read_block(), start_writer():
//     start-up, single threaded (srv_is_being_started).
//   - how_much_to_write(), write_blocks(): the log writer (or a user thread
//     with innodb_log_writer_threads=OFF), under log.writer_mutex.
//   - wait_durable(): the log flusher (or a user thread), under
//     log.flusher_mutex. On return everything up to `lsn` is durable in the
//     volume; only then does upstream publish flushed_to_disk_lsn.
//   - write_checkpoint(), persist_flags(): under log.writer_mutex and
//     log.m_files_mutex (log_files_next_checkpoint / log_update_flags).
//   - governor_tick(): the files governor, under log.m_files_mutex.
//   - show_status(): any session.
// A volume error on the write path is fatal (ib::fatal), as a failed redo
// write is in stock InnoDB; a fenced volume is fatal with its own message.
#pragma once
#include <string>

#include "log0types.h"
#include "univ.i"
#include "ut0ut.h"

class THD;
struct SHOW_VAR;

namespace strata::redo {

/* Configuration: the innodb_log_service_* system variables (sysvars.ic). */
extern char *cfg_addresses;
extern ulong cfg_transport;  // 0 auto, 1 tcp, 2 rdma
extern uint cfg_write_quorum;
extern char *cfg_volume;
extern char *cfg_cluster_id;
extern char *cfg_secret_file;
extern char *cfg_secret;
extern unsigned long long cfg_max_inflight;
extern uint cfg_stall_timeout;

extern bool g_enabled;

/** @return true iff InnoDB's redo goes to the log service (remote mode). */
inline bool enabled() { return g_enabled; }

/** Checks the innodb_log_service_* options and sets enabled().
@return false (after logging why) if the server must not start */
bool validate_params();

/** H4: log_sys_init() for remote mode: creates the volume (--initialize) or
binds to it through the pointer file #innodb_redo/#ib_redo0 and reads the
format, flags and log_uuid from its checkpoint record. */
dberr_t sys_init(log_t &log, bool expect_no_files, lsn_t flushed_lsn,
                 lsn_t &new_files_lsn);

/** H1: how many bytes of [buffer, buffer + buffer_size) to write now;
sets write_from_log_buffer like compute_how_much_to_write() does. */
size_t how_much_to_write(size_t buffer_size, bool &write_from_log_buffer);

/** H1: ships the prepared blocks [start_lsn, start_lsn + size): complete
blocks are appended, a partial last block (end_lsn % 512 != 0) goes to the
tail slot. Feeds the redo log archiver like write_blocks() does. */
dberr_t write_blocks(log_t &log, byte *buf, size_t size, lsn_t start_lsn,
                     lsn_t end_lsn);

/** H2: waits until everything up to lsn is durable in the volume. */
void wait_durable(log_t &log, lsn_t lsn);

/** Commit anatomy (docs/benchmarks/commit-anatomy-*.md): a thread's wait in
log_write_up_to(..., flush_to_disk = true) for redo up to end_lsn to become
durable, whichever way it goes (the log flusher publishes it, or, with
innodb_log_writer_threads=OFF, the default below 5 vCPUs without the binlog,
the thread writes and waits itself). Declared once in log_write_up_to (the
hook in log0write.cc); measures only when enabled(), flush_to_disk and
flushed_to_disk_lsn < end_lsn on entry; on destruction adds the time, the
wait loops of `stats` and the thread's context switches to the
Innodb_log_service_commit_wait_* counters (relaxed atomics). */
class Commit_wait {
 public:
  Commit_wait(const log_t &log, lsn_t end_lsn, bool flush_to_disk,
              const Wait_stats &stats);
  ~Commit_wait();
  Commit_wait(const Commit_wait &) = delete;
  Commit_wait &operator=(const Commit_wait &) = delete;

 private:
  const Wait_stats &m_stats;
  uint64_t m_start_ns = 0; /* 0: not measured */
  uint64_t m_switches = 0;
};

/** H3: writes the checkpoint record {lsn, epoch, metadata}. */
dberr_t write_checkpoint(log_t &log, lsn_t lsn);

/** H8: log flags go into the checkpoint record's metadata. */
dberr_t persist_flags(log_t &log, Log_flags flags);

/** H10: fences older writers, finds the checkpoint and the end of the log.
@param[out] checkpoint_lsn  where recovery starts */
dberr_t recovery_begin(log_t &log, lsn_t flushed_lsn, lsn_t &checkpoint_lsn);

/** H9: recv_read_log_seg() for remote mode: reads whole blocks from
start_lsn into buf, up to end_lsn or the end of the log.
@return the LSN reached (start_lsn at the end of the log), 0 on error */
lsn_t read(log_t &log, byte *buf, lsn_t start_lsn, lsn_t end_lsn);

/** H5: reads the block at block_lsn (zeros past the end of the log). */
dberr_t read_block(log_t &log, lsn_t block_lsn, byte *block);

/** H6: after recovery (and at --initialize): makes the trimmed block at
write_lsn the volume's tail, cuts what a crashed writer left after it. */
dberr_t start_writer(log_t &log);

/** H7: one files-governor iteration: releases volume space below the
oldest LSN any redo consumer still needs. */
void governor_tick(log_t &log);

/** H11: closes the volume (log_sys_close). */
void shutdown();

/** innodb_log_service_max_inflight changed by SET GLOBAL: the running
client's window changes at once (a write waiting for room re-checks). */
void set_max_inflight(unsigned long long bytes);

/** The cluster id and secret the log service is reached with; the page
service (page_service.cc) uses the same. Valid after validate_params(). */
std::string service_cluster_id();
std::string service_secret();
/** SHOW STATUS: the Innodb_log_service_* variables (empty unless enabled). */
int show_status(THD *thd, SHOW_VAR *var, char *buff);

}  // namespace strata::redo
