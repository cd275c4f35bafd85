/* Strata strong sync, source side: what the plugin's files share.

   Internal to plugin/strata_sync (not installed). The plugin's files, one
   job each:
   - strata_sync_source.cc: the plugin, its settings, the commit path (where
     and how long commits wait), the policy, the dump threads' hooks. Its
     top comment is the design: threads, hand-offs, ordering and safety.
   - strata_sync_ack_reader.cc: the ack reader thread and every read of a
     replica's acks (plain TCP, TLS read turns), and what an ack counts for.
   - strata_sync_status.cc: the status variables.
   - strata_sync_pfs_table.cc: performance_schema.strata_sync_replicas.
   - Pure logic, unit tested: strata_sync_ack_ledger.h (what counts as
     acknowledged, the quorum), strata_sync_waiters.h (the waiting commits),
     strata_sync_sessions.h, strata_sync_next_point.h,
     strata_sync_ack_stream.h, strata_sync_position.h,
     strata_sync_histogram.h, strata_sync_protocol.h,
     strata_sync_realtime.h.
   Everything below that is not a constant or a type is owned by
   strata_sync_source.cc, guarded as Source::m_mutex says. */
#ifndef STRATA_SYNC_SOURCE_H
#define STRATA_SYNC_SOURCE_H

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <vector>

#include <mysql/components/services/log_builtins.h>
#include <mysql/plugin.h>
#include "my_inttypes.h"
#include "my_sys.h"
#include "my_thread.h"
#include "mysql/psi/mysql_stage.h"
#include "mysqld_error.h"
#include "plugin/strata_sync/strata_sync_ack_ledger.h"
#include "plugin/strata_sync/strata_sync_ack_stream.h"
#include "plugin/strata_sync/strata_sync_histogram.h"
#include "plugin/strata_sync/strata_sync_next_point.h"
#include "plugin/strata_sync/strata_sync_position.h"
#include "plugin/strata_sync/strata_sync_protocol.h"
#include "plugin/strata_sync/strata_sync_realtime.h"
#include "plugin/strata_sync/strata_sync_sessions.h"
#include "plugin/strata_sync/strata_sync_waiters.h"
#include "sql/binlog.h"  // mysql_bin_log.get_binlog_end_pos()
#include "sql/current_thd.h"
#include "sql/mysqld.h"  // connection_events_loop_aborted
#include "sql/protocol_classic.h"
#include "sql/replication.h"
#include "sql/rpl_gtid.h"
#include "sql/sql_class.h"
#include "sql/strata_park.h"
#include "sql/strata_thd_wait.h"
#include "typelib.h"
#include "violite.h"

namespace strata::sync {

using Clock = std::chrono::steady_clock;
namespace wire = strata::sync::wire;

enum Policy : unsigned long { kBlock = 0, kFail = 1, kDegrade = 2 };
extern const char *kPolicyNames[];
/* Where a commit waits for its acknowledgement: before the engine commit in
   the group leader (AFTER_SYNC), or after it, at the end of the statement,
   before the OK is sent (AFTER_COMMIT; parked without a thread on our
   thread pool, sql/strata_park.h). */
enum WaitPoint : unsigned long { kAfterSync = 0, kAfterCommit = 1 };
extern const char *kWaitPointNames[];

/* System variables (written by SET GLOBAL under the server's plugin lock,
   read here under m_mutex or as a snapshot). */
extern bool opt_enabled;
extern unsigned int opt_replicas;
extern unsigned long opt_policy;
extern unsigned long opt_timeout_ms;
extern bool opt_ack_reader;
extern unsigned long opt_wait_point;
extern bool opt_realtime_ack_path;

/* Realtime scheduling of the ack path's threads (strata_sync_realtime.h).
   SET GLOBAL bumps the generation; each thread compares it with the one it
   last applied, so following the setting costs one relaxed load per event
   when nothing changed. A refusal (EPERM) is logged once per generation. */
extern std::atomic<unsigned> g_realtime_generation;
extern std::atomic<unsigned> g_realtime_refusal_logged;
extern std::atomic<long long> n_realtime_threads;

/* A dump thread is on the ack path while commits wait for acks, and for a
   second after the last wait, so that it does not switch policy between
   commit groups. Otherwise it may be streaming a backlog to a replica that
   catches up while commits do not wait (degraded, or strong sync off), at
   up to a CPU: that runs at normal priority. */
constexpr std::chrono::seconds kAckPathLinger{1};

bool dump_thread_on_ack_path();  // after Source

/* One thread's side of it: its scheduling, and what it last applied. */
struct RealtimeFollower {
  ThreadPriority priority;
  unsigned generation = 0;
  bool wanted = false;
};

/* Makes the calling thread follow strata_sync_source_realtime_ack_path:
   realtime (SCHED_RR) when `want`, its old policy otherwise; a refusal is
   logged once per setting change. `who` names the thread in that line. */
void follow_realtime_setting(RealtimeFollower &f, bool want, const char *who);


inline const char *basename_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* A parked session's waiter carries the thread pool's resume callback
   (strata_sync_waiters.h keeps that type free of MySQL headers). */
static_assert(std::is_same_v<decltype(Waiter::resume), strata_park_resume_fn>);

/* What the ack reader and the dump thread share of one replica
   connection. Owned by its Replica and, while the ack reader reads it, by
   the reader too (the Replica may be erased meanwhile). */
struct ReplicaConnection {
  ReplicaConnection() = default;
  ReplicaConnection(const ReplicaConnection &) = delete;
  ReplicaConnection &operator=(const ReplicaConnection &) = delete;
  ~ReplicaConnection() {
    if (fd >= 0) ::close(fd);
  }

  Vio *vio = nullptr;  // the dump thread's; read only until turn.close()
  /* The dump thread's THD: a KILL (or the server's shutdown) shuts its Vio
     down from another thread under its LOCK_thd_data, which is why a TLS
     read holds that mutex and first checks that the Vio is still open. */
  THD *thd = nullptr;
  /* Our own duplicate of the connection's socket, for poll(), recv() and
     shutdown(). The Vio's descriptor is closed by whoever shuts the Vio
     down (a KILL does, from the killer's thread, before the dump thread
     unregisters), and the server's next accept() may be given that number
     at once; this one stays ours until the last owner lets go. */
  int fd = -1;
  /* A blocking socket (no network timeouts): SSL_read only after a poll()
     said there is input, so that a reader never sleeps in it. */
  bool poll_before_read = false;
  ReadTurn turn;     // TLS, or plain TCP without the ack reader
  AckStream stream;  // read by the turn's holder; plain TCP: the ack reader
};

struct Replica {
  std::uint32_t server_id = 0;
  /* The replica's server UUID and id; the ledger counts one vote per
     server, however many connections it has (strata_sync_ack_ledger.h). */
  ReplicaIdentity identity;
  AckLedger::ServerId server = 0;
  bool connected = true;  // false after EOF/error on its socket
  bool has_ack = false;
  Pos acked;  // the highest ack accepted on this connection
  std::uint64_t acks = 0;
  /* The last ack point flagged on this connection: an ack after it is not
     one of ours (the replica acknowledges flagged events, coalescing them
     into the last one) and is refused. */
  std::optional<Pos> last_flagged;
  bool refusal_logged = false;  // one log line per connection
  /* Plain TCP with strata_sync_source_ack_reader = ON: the ack reader
     thread alone reads the connection, straight from the socket, under
     m_mutex. Otherwise (TLS) whoever holds conn->turn reads it. */
  bool reader = false;
  std::shared_ptr<ReplicaConnection> conn;
  /* Flagged events sent and not acknowledged yet, with their send time: the
     ack round trip (Strata_sync_source_ack_rtt_*). Bounded. */
  std::deque<std::pair<Pos, Clock::time_point>> sent;
};
constexpr std::size_t kMaxSentTimes = 4096;

/* Per dump thread: which replica this thread serves (0 = async replica).
   A binlog dump runs on one OS thread from start to stop. */
extern thread_local std::uint64_t tl_replica_id;
/* Unless the ack reader thread reads all its acks (plain TCP), the
   connection whose read turn this dump thread holds while it runs (kept
   alive by its Replica until transmit_stop()). */
extern thread_local ReplicaConnection *tl_conn;
extern thread_local bool tl_last_flagged;
/* The first ack point after what this dump thread sent: the events before
   it are not flagged, known without m_mutex (strata_sync_next_point.h). */
extern thread_local NextAckPoint tl_next_point;
/* The dump thread's (or our own thread's) scheduling. */
extern thread_local RealtimeFollower tl_realtime;
/* The transaction the dump thread is sending: its GTID event as sent
   (empty: none seen since the dump started, an anonymous transaction, or
   an event too long to keep), and the checksum algorithm of the binary log
   it came from (from the last Format_description event sent). The event
   that ends a transaction at an ack point names the point by this GTID
   (AckLedger::sent), for a replica's later GTID claim. */
constexpr std::size_t kMaxGtidEventSize = 512;
struct SentTransaction {
  std::size_t gtid_event_size = 0;
  unsigned char gtid_event[kMaxGtidEventSize];
  int checksum_alg = 0;  // mysql::binlog::event::enum_binlog_checksum_alg
};
extern thread_local SentTransaction tl_sent_transaction;

constexpr std::size_t kMaxAckPoints = 1 << 16;
/* Degraded strong sync resumes when N replicas acknowledged all but at most
   this many commit groups. */
constexpr std::size_t kResumeLagGroups = 4;

extern PSI_stage_info stage_waiting_for_ack;

class Source {
 public:
  bool start();
  void stop();

  // Observers.
  void after_flush(const char *file, my_off_t pos);
  void after_sync(const char *file, my_off_t pos);
  void after_commit(Trans_param *param);
  // The end of a statement (sql/strata_park.h), AFTER_COMMIT.
  bool defer(THD *thd, strata_park_resume_fn resume, void *arg);
  void resumed(THD *thd);
  int transmit_start(Binlog_transmit_param *param, const char *file,
                     my_off_t pos);
  void transmit_stop();
  bool before_send_event(const char *file, my_off_t pos);
  // A GTID auto-positioned dump's request (sql/strata_park.h).
  void dump_gtids(const Gtid_set *claimed);
  void reset();

  /** Wakes every waiter to re-read the settings (SET GLOBAL). */
  void settings_changed();
  /** Wakes our own threads so they follow the realtime setting now. */
  void realtime_changed();

  // Status.
  std::string state();
  std::string reason();
  template <class F>
  auto read(F f) {
    std::lock_guard<std::mutex> lk(m_mutex);
    return f(*this);
  }

  std::uint64_t n_waits = 0, wait_time_us = 0, n_acks = 0, n_timeouts = 0,
                n_degradations = 0, n_unacked_commits = 0,
                n_dump_thread_acks = 0, n_acks_refused = 0;
  Histogram wait_hist;  // µs per waiting commit group (after_sync)
  Histogram rtt_hist;   // µs from sending a flagged event to its ack
  std::atomic<std::size_t> waiting{0};  // also read without m_mutex
  std::size_t parked = 0;  // waiters of parked sessions (in waiting too)
  bool quorum_valid = false;
  Pos quorum;
  bool degraded = false;
  std::map<std::uint64_t, Replica> replicas;

  /** Connected replica servers (not connections: two connections of one
      replica are one, strata_sync_ack_ledger.h). */
  std::size_t connected_count() const {
    std::vector<const ReplicaIdentity *> ids;
    for (const auto &r : replicas)
      if (r.second.connected) ids.push_back(&r.second.identity);
    return count_servers(ids);
  }

 private:
  bool covered(const Pos &p) const { return quorum_valid && p <= quorum; }
  void recompute_quorum();
  void release_all_locked();
  void note_released(const Pos &p, bool by_fail);
  void enter_degraded(const char *why);
  bool released(const Pos &p) const {
    return m_released_valid && p <= m_released_upto;
  }
  void wait_in_thread(std::unique_lock<std::mutex> &lk, Waiter &w);
  bool group_waits_after_commit(const Pos &p) const;
  void finish_parked(Waiter *w);
  void check_parked_locked();
  int parked_poll_timeout_ms();
  bool settle_locked(std::uint32_t thread_id);
  void publish_sessions() {
    strata_park_set_sessions(static_cast<long>(m_sessions.size()));
  }
  void ack_reader_loop();

 public:
  void drain_acks();
  void dump_wait_begin();
  void dump_wait_end();

 private:
  void read_turn_acks(std::uint64_t id, ReplicaConnection &c,
                      bool by_dump_thread);
  bool apply_ack(Replica &r, const Pos &got);
  void read_socket_locked(Replica &r);
  void lost_locked(Replica &r, const char *why);
  void wake_ack_reader();

  std::mutex m_mutex;
  /* The outstanding ack points (ends of commit groups no quorum covers yet)
     and which replica servers hold them. */
  AckLedger m_ledger;
  /* Those of the outstanding points whose group waits at AFTER_COMMIT:
     strata_sync_source_wait_point is read once per commit group, in
     after_flush(), so that after_sync() and after_commit() agree on where
     it waits even if the setting changes in between. */
  std::set<Pos> m_after_commit_points;
  WaiterQueue m_waiters;
  /* AFTER_COMMIT: per session (thread id), the end of its last commit that
     is not settled yet (covered, or released by the policy); the session's
     next statement status waits for it. */
  PendingCommits m_sessions;
  bool m_released_valid = false, m_failed_valid = false;
  Pos m_released_upto, m_failed_upto;
  bool m_block_logged = false;
  std::uint64_t m_next_id = 0;
  std::atomic<bool> m_have_points{false};
  /* Bumped when positions start over (RESET BINARY LOGS): dump threads
     forget the ack point they found (tl_next_point). */
  std::atomic<std::uint64_t> m_points_generation{1};

  std::thread m_ack_reader;
  std::atomic<bool> m_stop{false};
  int m_pipe[2] = {-1, -1};
};

extern Source *g_source;

/* strata_sync_status.cc */
extern SHOW_VAR status_vars[];

/* strata_sync_pfs_table.cc: not fatal if it fails (the status variables
   remain); unregister undoes register. */
void pfs_register();
void pfs_unregister();

}  // namespace strata::sync

#endif  // STRATA_SYNC_SOURCE_H
