/* Strata strong sync, source side: plugin `strata_sync_source`.

   A transaction commits (in the engine) only after N replicas have written
   it to their relay log. Design: docs/design/strong-sync.md. This file: the
   plugin, its settings, the commit path, the policy and the dump threads'
   hooks; strata_sync_source.h lists the others (ack reader, status, the
   Performance Schema table) and what they share.

   Threads and hand-offs
   - Commit group leader: after_flush() registers the group's binlog end as
     an ack point, with where the group waits (strata_sync_source_wait_point
     is read there, once per group, so after_sync() and after_commit()
     agree); after_sync() waits (before the engine commit) until the quorum
     position covers it, or until the policy releases it.
   - With strata_sync_source_wait_point = AFTER_COMMIT after_sync() does not
     wait: after_commit() records each session's commit position
     (m_sessions), and the session's statement status waits for it
     (defer(), called by THD::send_statement_status through
     sql/strata_park.h). On our thread pool the session parks: a heap
     waiter carries the pool's resume callback, which whoever covers or
     releases it calls under m_mutex (ack reader, dump thread); the ack
     reader also fires the policy's timeouts for parked sessions
     (check_parked_locked). Elsewhere the session waits in its own thread.
   - Dump thread (one per replica): transmit_start() registers a replica that
     asked for strong sync; reserve_header()/before_send_event() put the
     2-byte header on every packet and flag events that end at an ack point;
     after_send_event() flushes the connection after a flagged event.
   - Ack reader (one thread of ours, never a pool worker): on plain-TCP
     connections (strata_sync_source_ack_reader=ON, the default) it alone
     reads the replica-to-source byte stream, which carries nothing but ack
     packets: poll(), recv() without blocking, split packets
     (wire::PacketSplitter), apply each ack (apply_ack: refused if past the
     last ack point its connection was sent; otherwise it counts for the
     points sent to that replica server, strata_sync_ack_ledger.h), move the
     quorum (once per batch: the outstanding points that N distinct servers
     hold) and wake exactly the covered waiters (strata_sync_waiters.h).
     The dump thread then never reads; it sends on while acks come back.
     On TLS connections (an SSL session must not be used by two threads)
     the connection has a read turn (strata_sync_ack_stream.h): the dump
     thread holds it while it runs and reads the acks that arrived
     before it builds a packet (drain_acks); it gives the turn away while
     it waits for the binary log to grow (the server calls
     dump_wait_begin/end around that wait, sql/strata_park.h), which under
     a commit load is where it is when an ack comes back, and then this
     thread takes the turn and reads the ack itself. So after a flagged
     event the dump thread never waits for the ack, and nobody wakes it
     for one.
   - SHOW STATUS and SET GLOBAL run in client sessions and only take the
     mutex.
   - With strata_sync_source_realtime_ack_path (ON by default) the dump
     threads of strong-sync replicas and the ack reader run as SCHED_RR
     threads (strata_sync_realtime.h says why: on busy CPUs
     the round trip is mostly these threads waiting to run). Each thread
     follows the setting itself (follow_realtime_setting): the dump thread
     before each event it sends, and only while commits wait (a replica
     catching up with nobody waiting streams at normal priority), the ack
     reader at each wake-up; a dump thread goes back to its old policy
     when it stops. A session waiting in its own thread (wait_in_thread)
     sleeps as a SCHED_RR thread and is normal again once woken.

   Ordering and safety
   - One mutex, Source::m_mutex, a leaf lock: replicas, ack points, waiters,
     quorum, counters, histograms. A connection's read turn is taken before
     m_mutex, never while holding it, and by the dump thread only without
     LOCK_binlog_end_pos. The ack reader reads a plain-TCP socket only
     under m_mutex, without blocking, and only while its replica is
     registered; a TLS connection only while it holds the turn, which
     transmit_stop() closes before it unregisters the replica. So no
     connection is read after its dump thread left (its fd may be reused
     then, its Vio freed).
   - A KILL of a dump thread shuts its Vio down from the killer's thread
     (SSL_shutdown, shutdown(2), close(2)) before the dump thread gets to
     transmit_stop(). Polls, recv() and our shutdown() use a duplicate of
     the socket that we own (ReplicaConnection::fd), so they see the
     connection's end, never a reused descriptor; SSL_read runs under the
     dump thread's LOCK_thd_data, which the killer holds, and only while
     the Vio is open (read_tls()).
   - What a replica claims (an ack, a dump's starting position, the GTID set
     of a GTID auto-positioned dump, dump_gtids()) counts only for ack
     points the source sent that replica server, and each server is one
     vote however many connections it has (strata_sync_ack_ledger.h,
     docs/design/strong-sync.md section 3a). To match a GTID claim with a
     point, the dump thread that sends the event ending at the point names
     it by the GTID event of its transaction, which that thread sent just
     before (tl_sent_transaction).
   - The quorum position only moves forward (RESET BINARY LOGS AND GTIDS
     clears it). A waiter leaves when covered, or when the policy, a disable,
     a reset or shutdown releases it; every release without quorum is
     recorded (released_*_upto) so after_commit() can tell the session.
   - after_sync() never returns an error: the server would apply
     binlog_error_action (ABORT_SERVER by default).
   - Compressed replication connections are refused for strong sync (the
     dump fails with a logged reason). */

#include "plugin/strata_sync/strata_sync_source.h"

#include "sql/log_event.h"  // Gtid_log_event

static SERVICE_TYPE(registry) *reg_srv = nullptr;
SERVICE_TYPE(log_builtins) *log_bi = nullptr;
SERVICE_TYPE(log_builtins_string) *log_bs = nullptr;

namespace strata::sync {

void follow_realtime_setting(RealtimeFollower &f, bool want, const char *who) {
  const unsigned generation =
      g_realtime_generation.load(std::memory_order_relaxed);
  if (f.generation == generation && f.wanted == want) return;
  f.generation = generation;
  f.wanted = want;
  const bool was = f.priority.realtime();
  const int err = f.priority.set_realtime(want);
  if (f.priority.realtime() != was)
    n_realtime_threads += f.priority.realtime() ? 1 : -1;
  if (err == 0 ||
      g_realtime_refusal_logged.exchange(generation) == generation)
    return;
  if (want)
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: cannot run the %s with realtime scheduling "
                    "(SCHED_RR): %s; the ack path runs at normal priority "
                    "(strata_sync_source_realtime_ack_path needs "
                    "CAP_SYS_NICE or RLIMIT_RTPRIO >= 1)",
                    who, strerror(err));
  else
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: cannot return the %s to normal "
                    "scheduling: %s",
                    who, strerror(err));
}

PSI_stage_info stage_waiting_for_ack = {0, "Waiting for strong-sync ack", 0,
                                        PSI_DOCUMENT_ME};
thread_local std::chrono::steady_clock::time_point tl_last_wait_seen;
const char *kPolicyNames[] = {"block", "fail", "degrade", nullptr};
const char *kWaitPointNames[] = {"AFTER_SYNC", "AFTER_COMMIT", nullptr};
bool opt_enabled = false;
unsigned int opt_replicas = 1;
unsigned long opt_policy = kBlock;
unsigned long opt_timeout_ms = 10000;
bool opt_ack_reader = true;
unsigned long opt_wait_point = kAfterSync;
bool opt_realtime_ack_path = true;
std::atomic<unsigned> g_realtime_generation{1};
std::atomic<unsigned> g_realtime_refusal_logged{0};
std::atomic<long long> n_realtime_threads{0};
thread_local std::uint64_t tl_replica_id = 0;
thread_local ReplicaConnection *tl_conn = nullptr;
thread_local bool tl_last_flagged = false;
thread_local NextAckPoint tl_next_point;
thread_local RealtimeFollower tl_realtime;
thread_local SentTransaction tl_sent_transaction;

Source *g_source = nullptr;

bool dump_thread_on_ack_path() {
  const auto now = std::chrono::steady_clock::now();
  if (g_source->waiting.load(std::memory_order_relaxed) > 0) {
    tl_last_wait_seen = now;
    return true;
  }
  return now - tl_last_wait_seen < kAckPathLinger;
}
/* ---- lifecycle --------------------------------------------------------- */

bool Source::start() {
  if (pipe2(m_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: pipe2() for the ack reader failed: %s",
                    strerror(errno));
    return true;
  }
  try {
    m_ack_reader = std::thread([this] {
      pthread_setname_np(pthread_self(), "strata_ackread");
      my_thread_init();
      ack_reader_loop();
      follow_realtime_setting(tl_realtime, false, "ack reader");
      my_thread_end();
    });
  } catch (...) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: cannot start the ack reader thread");
    return true;
  }
  return false;
}

void Source::stop() {
  {
    std::lock_guard<std::mutex> lk(m_mutex);
    m_stop = true;
  }
  wake_ack_reader();
  if (m_ack_reader.joinable()) m_ack_reader.join();
  {
    std::lock_guard<std::mutex> lk(m_mutex);
    release_all_locked();  // threads see m_stop
    check_parked_locked();  // parked sessions: all released (m_stop)
  }
  for (int &fd : m_pipe)
    if (fd >= 0) close(fd), fd = -1;
}

void Source::wake_ack_reader() {
  if (m_pipe[1] >= 0) {
    const char c = 0;
    ssize_t r = write(m_pipe[1], &c, 1);  // full pipe: a wake-up is pending
    (void)r;
  }
}

/* ---- commit path ------------------------------------------------------- */

void Source::after_flush(const char *file, my_off_t pos) {
  if (!opt_enabled || file == nullptr || pos == 0) return;
  // Where this group waits is decided here, once (m_after_commit_points).
  const bool after_commit = opt_wait_point == kAfterCommit;
  Pos p{basename_of(file), pos};
  std::lock_guard<std::mutex> lk(m_mutex);
  if (after_commit) m_after_commit_points.insert(p);
  m_ledger.add_point(p);
  if (m_ledger.points().size() > kMaxAckPoints) {  // a later point covers it
    m_after_commit_points.erase(*m_ledger.points().begin());
    m_ledger.drop_oldest();
  }
  m_have_points = true;
}

/* Needs m_mutex. Whether the commit that ended at p belongs to a group that
   waits at AFTER_COMMIT: its group's point is the first outstanding point
   at or after p (points are registered in binary log order). */
bool Source::group_waits_after_commit(const Pos &p) const {
  auto it = m_ledger.points().lower_bound(p);
  return it != m_ledger.points().end() && m_after_commit_points.count(*it);
}

void Source::after_sync(const char *file, my_off_t pos) {
  if (!opt_enabled || file == nullptr || pos == 0) return;
  Waiter w;
  w.pos = Pos{basename_of(file), pos};
  std::unique_lock<std::mutex> lk(m_mutex);
  if (covered(w.pos)) return;
  // Flushed before strong sync was enabled: no replica will be asked for it.
  if (m_ledger.points().count(w.pos) == 0) return;
  // The group waits at the end of its statements instead (after_commit).
  if (m_after_commit_points.count(w.pos) != 0) return;
  if (degraded) {
    note_released(w.pos, false);
    return;
  }
  wait_in_thread(lk, w);
}

/* Blocks the calling thread until w (not queued yet) is covered or released
   by the policy, a disable, shutdown or uninstall. Called and returns with
   m_mutex held through lk. */
void Source::wait_in_thread(std::unique_lock<std::mutex> &lk, Waiter &w) {
  THD *thd = current_thd;
  PSI_stage_info old_stage;
  THD_ENTER_COND(thd, nullptr, nullptr, &stage_waiting_for_ack, &old_stage);

  w.since = Clock::now();
  m_waiters.add(&w);
  n_waits++;
  waiting++;
  // Tell the connection handler (a thread pool) that this session blocks, so
  // it can run another worker meanwhile. Outside m_mutex: the pool may start
  // a thread. A cover that lands meanwhile sets w.covered, checked below.
  lk.unlock();
  strata_thd_wait_begin(thd, THD_WAIT_BINLOG);
  // The waiting session is the last thread on the ack path: with
  // strata_sync_source_realtime_ack_path it sleeps as a realtime thread, so
  // the ack's wake-up runs it at once, and is normal again as soon as it
  // runs (a refusal was logged by the ack path's own threads).
  ThreadPriority waiter_priority;
  if (opt_realtime_ack_path) (void)waiter_priority.set_realtime(true);
  lk.lock();
  const auto deadline = w.since + std::chrono::milliseconds(opt_timeout_ms);
  while (!w.covered) {
    if (!opt_enabled || degraded || m_stop) {
      note_released(w.pos, false);
      break;
    }
    if (connection_events_loop_aborted()) {
      LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_sync: shutdown releases a commit waiting for "
                      "%s:%llu without replica acknowledgement",
                      w.pos.file.c_str(), (unsigned long long)w.pos.pos);
      note_released(w.pos, false);
      break;
    }
    const auto now = Clock::now();
    if (opt_policy == kBlock) {
      if (now >= deadline && !m_block_logged) {
        m_block_logged = true;
        LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                        "strata_sync: commits blocked for %lu ms: %s",
                        opt_timeout_ms, reason().c_str());
      }
      w.cv.wait_for(lk, std::chrono::seconds(1));
      continue;
    }
    if (now >= deadline) {
      if (opt_policy == kFail) {
        n_timeouts++;
        note_released(w.pos, true);
      } else {
        enter_degraded("no acknowledgement within strata_sync_source_timeout");
        note_released(w.pos, false);
      }
      break;
    }
    w.cv.wait_until(lk, std::min(deadline, now + std::chrono::seconds(1)));
  }
  // A covered waiter was taken out by whoever covered it.
  if (!w.covered) m_waiters.remove(&w);
  waiting--;
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
                          Clock::now() - w.since)
                          .count();
  wait_time_us += waited;
  wait_hist.add(static_cast<std::uint64_t>(waited));
  lk.unlock();
  (void)waiter_priority.set_realtime(false);
  strata_thd_wait_end(thd);
  THD_EXIT_COND(thd, &old_stage);
  lk.lock();
}

void Source::after_commit(Trans_param *param) {
  if (!(param->flags & TRANS_IS_REAL_TRANS) || param->log_file == nullptr ||
      param->log_pos == 0)
    return;
  bool fail = false;
  {
    std::lock_guard<std::mutex> lk(m_mutex);
    const Pos p{basename_of(param->log_file), param->log_pos};
    // Not the setting now: where this commit's group was told to wait when
    // it was flushed. A group after_sync() let through because it waits at
    // AFTER_COMMIT is recorded here even if the setting changed since.
    if (opt_enabled && !released(p) && !covered(p) &&
        group_waits_after_commit(p)) {
      // AFTER_COMMIT: the session's statement status waits (defer()). Runs
      // on the group leader's thread for every session of the group.
      // Replication appliers send no statement status: nothing to hold.
      if (param->rpl_channel_type != NO_CHANNEL_INFO) return;
      if (degraded) {
        n_unacked_commits++;
        return;
      }
      m_sessions.record(param->thread_id, p);
      publish_sessions();
      return;
    }
    if (!m_released_valid) return;
    if (covered(p) || !(p <= m_released_upto)) return;
    n_unacked_commits++;
    fail = m_failed_valid && p <= m_failed_upto;
  }
  if (fail)
    my_printf_error(ER_ERROR_DURING_COMMIT,
                    "Strong sync: fewer than %u replicas acknowledged the "
                    "transaction within %lu ms; it is committed on this "
                    "source only",
                    MYF(0), opt_replicas, opt_timeout_ms);
}

/* The fail policy's error, replacing the statement's OK (AFTER_COMMIT: the
   commit is done, its statement has not answered yet). */
void raise_not_acknowledged(THD *thd) {
  Diagnostics_area *da = thd->get_stmt_da();
  if (!da->is_ok() && !da->is_eof()) return;
  da->reset_diagnostics_area();
  my_printf_error(ER_ERROR_DURING_COMMIT,
                  "Strong sync: fewer than %u replicas acknowledged the "
                  "transaction within %lu ms; it is committed on this "
                  "source only",
                  MYF(0), opt_replicas, opt_timeout_ms);
}

/* Forgets the session's pending commit; true if the fail policy released
   it (the statement must return the error). Needs m_mutex. */
bool Source::settle_locked(std::uint32_t thread_id) {
  const std::optional<Pos> p = m_sessions.take(thread_id);
  if (!p) return false;
  publish_sessions();
  if (covered(*p)) return false;
  n_unacked_commits++;
  return m_failed_valid && *p <= m_failed_upto;
}

bool Source::defer(THD *thd, strata_park_resume_fn resume, void *arg) {
  const std::uint32_t id = thd->thread_id();
  std::unique_lock<std::mutex> lk(m_mutex);
  const Pos *pending = m_sessions.find(id);
  if (pending == nullptr) return false;
  const Pos p = *pending;
  if (!covered(p) && !released(p) && opt_enabled && !degraded && !m_stop &&
      !connection_events_loop_aborted()) {
    if (resume != nullptr) {
      auto *w = new Waiter;
      w->pos = p;
      w->since = Clock::now();
      w->resume = resume;
      w->arg = arg;
      m_waiters.add(w);
      n_waits++;
      waiting++;
      parked++;
      // The ack reader also fires the policy's timeout for parked sessions:
      // let it shorten its poll() to the new deadline.
      if (opt_policy != kBlock) wake_ack_reader();
      return true;
    }
    // No pool worker that can park (one thread per connection): wait here.
    Waiter w;
    w.pos = p;
    wait_in_thread(lk, w);
  }
  const bool fail = settle_locked(id);
  lk.unlock();
  if (fail) raise_not_acknowledged(thd);
  return false;
}

void Source::resumed(THD *thd) {
  std::unique_lock<std::mutex> lk(m_mutex);
  const bool fail = settle_locked(thd->thread_id());
  lk.unlock();
  if (fail) raise_not_acknowledged(thd);
}

/* Hands a parked session, already taken out of m_waiters, back to the
   pool and frees its waiter. Needs m_mutex (which also orders it with the
   pool's own parking, see resume_parked in plugin/strata_pool). */
void Source::finish_parked(Waiter *w) {
  waiting--;
  parked--;
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
                          Clock::now() - w->since)
                          .count();
  wait_time_us += waited;
  wait_hist.add(static_cast<std::uint64_t>(waited));
  w->resume(w->arg);
  delete w;
}

/* What the waiting loop of wait_in_thread() does for a thread, for the
   parked sessions, which have none: the policy's timeout, a disable, a
   degrade, shutdown and uninstall release them. Called by the ack reader
   after every poll() (which it bounds by the next deadline) and on every
   change of settings. Looks at the parked sessions longest waiting first
   and stops at the first whose deadline has not come: with thousands
   parked, a check costs the sessions it releases plus one. Needs m_mutex. */
void Source::check_parked_locked() {
  if (parked == 0) return;
  const auto now = Clock::now();
  const auto timeout = std::chrono::milliseconds(opt_timeout_ms);
  bool release_all = !opt_enabled || degraded || m_stop;
  if (!release_all && connection_events_loop_aborted()) {
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: shutdown releases %zu parked session(s) "
                    "without replica acknowledgement",
                    parked);
    release_all = true;
  }
  const auto expired = [&](const Waiter *w) {
    return now >= w->since + timeout;
  };
  if (!release_all) {
    const Waiter *oldest = m_waiters.oldest_parked();
    if (oldest == nullptr || !expired(oldest)) return;
    if (opt_policy == kBlock) {
      if (!m_block_logged) {
        m_block_logged = true;
        LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                        "strata_sync: commits blocked for %lu ms: %s",
                        opt_timeout_ms, reason().c_str());
      }
      return;
    }
    if (opt_policy == kDegrade) {
      enter_degraded("no acknowledgement within strata_sync_source_timeout");
      release_all = true;
    }
  }
  if (release_all) {
    m_waiters.take_parked_while([](const Waiter *) { return true; },
                                [this](Waiter *w) {
                                  note_released(w->pos, false);
                                  finish_parked(w);
                                });
    return;
  }
  m_waiters.take_parked_while(expired, [this](Waiter *w) {
    n_timeouts++;
    note_released(w->pos, true);
    finish_parked(w);
  });
}

/* How long the ack reader may sleep in poll(): until the next parked
   session's deadline under fail/degrade, at most a second. Needs m_mutex. */
int Source::parked_poll_timeout_ms() {
  const Waiter *oldest = m_waiters.oldest_parked();
  if (oldest == nullptr || opt_policy == kBlock) return 1000;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        oldest->since +
                        std::chrono::milliseconds(opt_timeout_ms) -
                        Clock::now())
                        .count();
  return static_cast<int>(std::clamp<long long>(left + 1, 0, 1000));
}

void Source::note_released(const Pos &p, bool by_fail) {
  if (!m_released_valid || m_released_upto < p) m_released_upto = p;
  m_released_valid = true;
  if (by_fail) {
    if (!m_failed_valid || m_failed_upto < p) m_failed_upto = p;
    m_failed_valid = true;
  }
}

void Source::enter_degraded(const char *why) {
  if (degraded) return;
  degraded = true;
  n_degradations++;
  LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_sync: DEGRADED to asynchronous replication "
                  "(strata_sync_source_policy=degrade): %s; %s. Commits no "
                  "longer wait until %u replica(s) acknowledge again.",
                  why, reason().c_str(), opt_replicas);
  release_all_locked();
}

/* Wakes every waiting thread to re-check (settings, degrade, shutdown);
   parked sessions are settled by check_parked_locked(). Rare: it may look
   at every waiter. */
void Source::release_all_locked() {
  m_waiters.for_each_thread([](Waiter *w) { w->cv.notify_one(); });
}

void Source::settings_changed() {
  std::lock_guard<std::mutex> lk(m_mutex);
  if (!opt_enabled) {
    m_ledger.clear_points();
    m_after_commit_points.clear();
    m_have_points = false;
    degraded = false;
  }
  recompute_quorum();  // N may have changed
  release_all_locked();
  check_parked_locked();
}

void Source::realtime_changed() { wake_ack_reader(); }

/* ---- acks and the quorum ----------------------------------------------- */

/* Moves the quorum over the outstanding points that enough replica servers
   hold (AckLedger::advance: the points passed plus one, never the waiters)
   and releases exactly the waiters and sessions it covers. */
void Source::recompute_quorum() {
  const std::optional<Pos> q = m_ledger.advance(opt_replicas);
  if (!q || (quorum_valid && *q <= quorum)) return;
  quorum = *q;
  quorum_valid = true;

  m_after_commit_points.erase(m_after_commit_points.begin(),
                              m_after_commit_points.upper_bound(quorum));
  m_have_points = !m_ledger.points().empty();
  // Sessions whose commit is covered now need not look at us at the end of
  // their statement (a commit that reaches no statement status, as one of
  // the event scheduler, would otherwise stay here).
  if (!m_sessions.empty()) {
    m_sessions.forget_covered(quorum);
    publish_sessions();
  }
  // Parked sessions go back to the pool (resume); threads are notified.
  m_waiters.take_covered(quorum, [this](Waiter *w) {
    if (w->parked()) {
      finish_parked(w);
      return;
    }
    w->covered = true;
    w->cv.notify_one();
  });
  if (m_waiters.empty() && m_block_logged) {
    m_block_logged = false;
    LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: blocked commits released, %u replica(s) "
                    "acknowledged up to %s:%llu",
                    opt_replicas, quorum.file.c_str(),
                    (unsigned long long)quorum.pos);
  }
  // Caught up: at most a few commit groups beyond the quorum. Under load a
  // new group is always in flight, so "nothing unacknowledged" may never be
  // seen; resuming a few groups behind only makes the next commits wait for
  // those few acks.
  if (degraded && m_ledger.points().size() <= kResumeLagGroups) {
    degraded = false;
    LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: strong sync RESUMED: %u replica(s) caught up "
                    "to %s:%llu",
                    opt_replicas, quorum.file.c_str(),
                    (unsigned long long)quorum.pos);
  }
}

/* ---- dump threads ------------------------------------------------------ */

int Source::transmit_start(Binlog_transmit_param *param, const char *file,
                           my_off_t pos) {
  long long version = 0;
  int null_value = 0;
  get_user_var_int(wire::kHandshakeVariable, &version, &null_value);
  if (version == 0) {
    param->set_dont_observe_flag();
    return 0;
  }
  THD *thd = current_thd;
  NET *net = thd->get_protocol_classic()->get_net();
  // The replica's server UUID (its receiver sets it, as the server's own
  // zombie dump check reads it): one vote per server in the quorum.
  ReplicaIdentity identity;
  identity.server_id = param->server_id;
  for (const char *name : {"replica_uuid", "slave_uuid"}) {
    char uuid[64] = "";
    int uuid_null = 1;
    if (get_user_var_str(name, uuid, sizeof(uuid), 0, &uuid_null) == 0 &&
        !uuid_null && uuid[0] != '\0') {
      identity.uuid = uuid;
      break;
    }
  }
  const char *refuse = nullptr;
  if (version != wire::kProtocolVersion)
    refuse = "unsupported strong-sync protocol version";
  else if (net->vio == nullptr)
    refuse = "no connection";
  else if (net->compress)
    refuse = "compressed replication connections are not supported by "
             "strong sync";
  if (refuse) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: refusing replica server_id %u: %s",
                    param->server_id, refuse);
    return 1;
  }
  auto conn = std::make_shared<ReplicaConnection>();
  conn->vio = net->vio;
  conn->thd = thd;
  conn->fd = fcntl(vio_fd(net->vio), F_DUPFD_CLOEXEC, 0);
  if (conn->fd < 0) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: refusing replica server_id %u: cannot "
                    "duplicate its socket to read acks from: %s",
                    param->server_id, strerror(errno));
    return 1;
  }
  // O_NONBLOCK belongs to the socket's open file, which both descriptors
  // share.
  const int fl = fcntl(conn->fd, F_GETFL);
  conn->poll_before_read = fl < 0 || (fl & O_NONBLOCK) == 0;
  // TLS: one SSL session, read by whoever holds the turn (this thread now).
  const bool reader = opt_ack_reader && vio_type(net->vio) != VIO_TYPE_SSL;
  if (!reader) conn->turn.take();
  {
    std::lock_guard<std::mutex> lk(m_mutex);
    tl_replica_id = ++m_next_id;
    Replica &r = replicas[tl_replica_id];
    r.server_id = param->server_id;
    r.identity = identity;
    r.server = m_ledger.server(identity);
    r.reader = reader;
    r.conn = conn;
    tl_conn = reader ? nullptr : conn.get();
    // A replica asking from (file, pos) claims everything before it. That
    // counts only for the groups this source sent it before (its last
    // connection broke after it wrote them, before their acks arrived):
    // never for a group it was not sent (AckLedger::confirm).
    if (file != nullptr && *file != '\0' &&
        m_ledger.confirm(r.server, Pos{basename_of(file), pos}) > 0)
      recompute_quorum();
  }
  tl_last_flagged = false;
  tl_sent_transaction.gtid_event_size = 0;
  tl_sent_transaction.checksum_alg =
      mysql::binlog::event::BINLOG_CHECKSUM_ALG_OFF;
  // A new dump starts over: this OS thread may have served another dump
  // (the server caches threads) and remember a point after positions this
  // one will send, which would then go unflagged and, unflagged, count as
  // not sent to this replica (AckLedger).
  tl_next_point = NextAckPoint();
  wake_ack_reader();
  param->set_observe_flag();
  LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_sync: strong-sync replica server_id %u connected "
                  "(%s; acks read by the %s)",
                  param->server_id,
                  vio_type(net->vio) == VIO_TYPE_SSL ? "TLS" : "no TLS",
                  reader ? "ack reader thread"
                            : "dump thread, or the ack reader while the dump "
                              "thread waits");
  return 0;
}

void Source::transmit_stop() {
  if (tl_replica_id == 0) return;
  // After this the ack reader never touches the connection (its Vio goes).
  if (tl_conn != nullptr) tl_conn->turn.close();
  std::uint32_t server_id = 0;
  {
    std::lock_guard<std::mutex> lk(m_mutex);
    auto it = replicas.find(tl_replica_id);
    if (it != replicas.end()) {
      server_id = it->second.server_id;
      replicas.erase(it);
    }
  }
  tl_replica_id = 0;
  tl_conn = nullptr;
  // The thread goes back to the server (a pool worker serves others next).
  follow_realtime_setting(tl_realtime, false, "dump thread");
  wake_ack_reader();
  LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_sync: strong-sync replica server_id %u disconnected",
                  server_id);
}

namespace {

/* The GTID, as text ("uuid[:tag]:gno"), of the transaction whose GTID event
   this dump thread sent last, or "" (none since the dump started, an
   anonymous transaction, or an event it could not keep or decode). */
std::string sent_gtid() {
  const SentTransaction &t = tl_sent_transaction;
  if (t.gtid_event_size == 0) return {};
  Format_description_log_event fde;
  fde.common_footer->checksum_alg =
      static_cast<mysql::binlog::event::enum_binlog_checksum_alg>(
          t.checksum_alg);
  Gtid_log_event ev(reinterpret_cast<const char *>(t.gtid_event), &fde);
  if (!ev.is_valid()) return {};
  return ev.get_tsid().to_string() + ":" + std::to_string(ev.get_gno());
}

/* Called for every event a strong-sync dump thread sends: keeps what
   sent_gtid() needs (the binary log's checksum algorithm, the GTID event of
   the transaction being sent). A copy of one small event per transaction. */
void note_sent_event(const unsigned char *event, unsigned long len) {
  namespace ev = mysql::binlog::event;
  SentTransaction &t = tl_sent_transaction;
  if (len < LOG_EVENT_HEADER_LEN) return;
  switch (event[EVENT_TYPE_OFFSET]) {
    case ev::FORMAT_DESCRIPTION_EVENT:
      t.checksum_alg = ev::Log_event_footer::get_checksum_alg(
          reinterpret_cast<const char *>(event), len);
      break;
    case ev::GTID_LOG_EVENT:
    case ev::GTID_TAGGED_LOG_EVENT:
      t.gtid_event_size = 0;
      if (len <= kMaxGtidEventSize &&
          uint4korr(event + EVENT_LEN_OFFSET) == len) {
        memcpy(t.gtid_event, event, len);
        t.gtid_event_size = len;
      }
      break;
    case ev::ANONYMOUS_GTID_LOG_EVENT:
      t.gtid_event_size = 0;
      break;
  }
}

}  // namespace

bool Source::before_send_event(const char *file, my_off_t pos) {
  if (!m_have_points) return false;
  Pos p{basename_of(file), pos};
  const std::uint64_t generation =
      m_points_generation.load(std::memory_order_acquire);
  if (tl_next_point.before(p, generation)) return false;
  std::lock_guard<std::mutex> lk(m_mutex);
  if (!tl_next_point.lookup(m_ledger.points(), p, generation)) return false;
  auto it = replicas.find(tl_replica_id);
  if (it != replicas.end()) {
    // Sent to this replica: its acks may count for it from now on. Not if
    // its connection is known to be gone (the bytes go nowhere): a claim it
    // makes on its next connection must not count for this point.
    it->second.last_flagged = p;
    // Named by its transaction's GTID once, by the first dump to send it.
    if (it->second.connected)
      m_ledger.sent(it->second.server, p,
                    m_ledger.transaction(p).empty() ? sent_gtid()
                                                    : std::string());
    auto &sent = it->second.sent;
    if (sent.size() >= kMaxSentTimes) sent.pop_front();
    sent.emplace_back(std::move(p), Clock::now());
  }
  return true;
}

/* A replica that asks for its dump with GTID auto-positioning claims the
   transactions in its GTID set. That counts for the ack points this source
   sent to that replica server before, by the GTID that ends them
   (AckLedger::confirm_transactions): a group it wrote to its relay log
   whose ack was lost with its connection, which this dump skips and so
   never flags again. Without it, on an idle source such a group waited
   until the replica acknowledged a later one. A claim of a waiting group
   never sent to that server counts for nothing and is refused like an ack
   past what a connection was sent (counted, logged once per connection).
   Called on the dump thread after transmit_start(), before any event. */
void Source::dump_gtids(const Gtid_set *claimed) {
  if (tl_replica_id == 0 || claimed == nullptr) return;
  // No server lock: the set (the dump request's) and its map have none.
  const auto claims = [claimed](const std::string &gtid) {
    Tsid_map map(nullptr);
    enum_return_status status = RETURN_STATUS_OK;
    Gtid_set one(&map, gtid.c_str(), &status);
    return status == RETURN_STATUS_OK && one.is_subset(claimed);
  };
  std::lock_guard<std::mutex> lk(m_mutex);
  auto it = replicas.find(tl_replica_id);
  if (it == replicas.end()) return;
  Replica &r = it->second;
  std::vector<Pos> overreaching;
  if (m_ledger.confirm_transactions(r.server, claims, &overreaching) > 0)
    recompute_quorum();
  if (overreaching.empty()) return;
  n_acks_refused++;
  if (r.refusal_logged) return;
  r.refusal_logged = true;
  const Pos &first = overreaching.front();
  LogPluginErrMsg(
      WARNING_LEVEL, ER_LOG_PRINTF_MSG,
      "strata_sync: refused the claim of replica server_id %u (the GTID set "
      "of its dump request) to hold %zu waiting commit group(s) this source "
      "never sent it, the first ending at %s:%llu (GTID %s); it holds none "
      "of them (Strata_sync_source_acks_refused counts these; logged once "
      "per connection)",
      r.server_id, overreaching.size(), first.file.c_str(),
      (unsigned long long)first.pos, m_ledger.transaction(first).c_str());
}

void Source::reset() {
  std::lock_guard<std::mutex> lk(m_mutex);
  m_ledger.clear();
  m_after_commit_points.clear();
  m_points_generation.fetch_add(1, std::memory_order_release);
  m_have_points = false;
  quorum_valid = false;
  m_released_valid = m_failed_valid = false;
  degraded = false;
  for (auto &r : replicas) {
    r.second.has_ack = false;
    r.second.last_flagged.reset();
    r.second.server = m_ledger.server(r.second.identity);
    r.second.sent.clear();
  }
  if (!m_waiters.empty()) {
    // Released unacknowledged: the positions they wait for are gone.
    // Threads are woken (and covered by the new log's quorum, as before);
    // parked sessions resume now.
    m_waiters.for_each_thread([this](Waiter *w) {
      note_released(w->pos, false);
      w->cv.notify_one();
    });
    m_waiters.take_parked_while([](const Waiter *) { return true; },
                                [this](Waiter *w) {
                                  note_released(w->pos, false);
                                  finish_parked(w);
                                });
  }
  // Positions start again: no session waits for one of the old log.
  n_unacked_commits += m_sessions.clear();
  publish_sessions();
}

namespace {

/* ---- observers --------------------------------------------------------- */

int on_after_flush(Binlog_storage_param *, const char *file, my_off_t pos) {
  g_source->after_flush(file, pos);
  return 0;
}

int on_after_sync(Binlog_storage_param *, const char *file, my_off_t pos) {
  g_source->after_sync(file, pos);
  return 0;  // never an error: see the top of this file
}

int on_trans_noop(Trans_param *) { return 0; }
int on_trans_noop_out(Trans_param *, int &) { return 0; }
int on_after_commit(Trans_param *param) {
  g_source->after_commit(param);
  return 0;
}

int on_transmit_start(Binlog_transmit_param *param, const char *file,
                      my_off_t pos) {
  return g_source->transmit_start(param, file, pos);
}

int on_transmit_stop(Binlog_transmit_param *) {
  g_source->transmit_stop();
  return 0;
}

int on_reserve_header(Binlog_transmit_param *, unsigned char *header,
                      unsigned long size, unsigned long *len) {
  if (tl_replica_id == 0) return 0;
  follow_realtime_setting(tl_realtime,
                          opt_realtime_ack_path && dump_thread_on_ack_path(),
                          "dump thread");
  g_source->drain_acks();
  if (size < wire::kEventHeaderSize) return 1;
  header[0] = wire::kEventMagic;
  header[1] = 0;
  *len += wire::kEventHeaderSize;
  return 0;
}

int on_before_send_event(Binlog_transmit_param *, unsigned char *packet,
                         unsigned long len, const char *file, my_off_t pos) {
  if (tl_replica_id == 0) return 0;
  // packet: OK byte, our header, the event.
  if (len < 1 + wire::kEventHeaderSize || packet[1] != wire::kEventMagic)
    return 0;
  note_sent_event(packet + 1 + wire::kEventHeaderSize,
                  len - 1 - wire::kEventHeaderSize);
  tl_last_flagged = g_source->before_send_event(file, pos);
  if (tl_last_flagged) packet[2] |= wire::kFlagAckRequested;
  return 0;
}

int on_after_send_event(Binlog_transmit_param *, const char *, unsigned long,
                        const char *, my_off_t) {
  if (tl_replica_id == 0 || !tl_last_flagged) return 0;
  tl_last_flagged = false;
  THD *thd = current_thd;
  NET *net = thd->get_protocol_classic()->get_net();
  // The replica must see a flagged event now, not when the buffer fills.
  // The ack is read as it arrives: by the ack reader (plain TCP, or TLS
  // while this thread waits for the next event), or by this thread before
  // its next packet. The server ends the dump on net errors.
  net_flush(net);
  return 0;
}

bool on_statement_end(THD *thd, strata_park_resume_fn resume, void *arg) {
  return g_source->defer(thd, resume, arg);
}

void on_resumed(THD *thd) { g_source->resumed(thd); }

void on_dump_wait_begin(THD *) { g_source->dump_wait_begin(); }

void on_dump_wait_end(THD *) { g_source->dump_wait_end(); }

void on_dump_gtids(THD *, const Gtid_set *claimed) {
  g_source->dump_gtids(claimed);
}

const Strata_park_sync park_ops = {on_statement_end,   on_resumed,
                                   on_dump_wait_begin, on_dump_wait_end,
                                   on_dump_gtids};

int on_after_reset_master(Binlog_transmit_param *) {
  g_source->reset();
  return 0;
}

Trans_observer trans_observer = {
    sizeof(Trans_observer),
    on_trans_noop_out,  // before_dml
    on_trans_noop,      // before_commit
    on_trans_noop,      // before_rollback
    on_after_commit,    // after_commit
    on_trans_noop,      // after_rollback
    on_trans_noop_out,  // begin
};

Binlog_storage_observer storage_observer = {
    sizeof(Binlog_storage_observer),
    on_after_flush,
    on_after_sync,
};

Binlog_transmit_observer transmit_observer = {
    sizeof(Binlog_transmit_observer),
    on_transmit_start,
    on_transmit_stop,
    on_reserve_header,
    on_before_send_event,
    on_after_send_event,
    on_after_reset_master,
};

/* ---- system and status variables --------------------------------------- */

template <class T>
void update_and_notify(MYSQL_THD, SYS_VAR *, void *ptr, const void *val) {
  *static_cast<T *>(ptr) = *static_cast<const T *>(val);
  if (g_source) g_source->settings_changed();
}

/* Changes of what strong sync promises are written to the error log, with
   who made them (SYSTEM level: logged whatever log_error_verbosity says):
   turning it on or off, the number of replicas, the policy. An audit after
   a lost commit starts there. (Not the wait point: a switch of it keeps
   every guarantee but visibility, and tests switch it thousands of
   times.) */
std::string who_sets(MYSQL_THD thd) {
  if (thd == nullptr) return "the server";
  const Security_context *sctx = thd->security_context();
  return "'" + std::string(sctx->priv_user().str) + "'@'" +
         std::string(sctx->priv_host().str) + "'";
}

void update_enabled(MYSQL_THD thd, SYS_VAR *, void *ptr, const void *val) {
  const bool was = opt_enabled, now = *static_cast<const bool *>(val);
  *static_cast<bool *>(ptr) = now;
  if (was != now) {
    if (now)
      LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_sync: strong sync turned ON by %s "
                      "(strata_sync_source_enabled): commits wait for %u "
                      "replica(s), policy %s",
                      who_sets(thd).c_str(), opt_replicas,
                      kPolicyNames[opt_policy]);
    else
      LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_sync: strong sync turned OFF by %s "
                      "(strata_sync_source_enabled): commits no longer wait "
                      "for replicas, and commits waiting now are released "
                      "without acknowledgement",
                      who_sets(thd).c_str());
  }
  if (g_source) g_source->settings_changed();
}

void update_replicas(MYSQL_THD thd, SYS_VAR *, void *ptr, const void *val) {
  const unsigned was = opt_replicas, now = *static_cast<const unsigned *>(val);
  *static_cast<unsigned *>(ptr) = now;
  if (was != now)
    LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: strata_sync_source_replicas %s from %u to "
                    "%u by %s: a commit returns once %u replica server(s) "
                    "hold it",
                    now < was ? "lowered" : "raised", was, now,
                    who_sets(thd).c_str(), now);
  if (g_source) g_source->settings_changed();
}

void update_policy(MYSQL_THD thd, SYS_VAR *, void *ptr, const void *val) {
  const unsigned long was = opt_policy,
                      now = *static_cast<const unsigned long *>(val);
  *static_cast<unsigned long *>(ptr) = now;
  if (was != now)
    LogPluginErrMsg(SYSTEM_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: strata_sync_source_policy changed from %s "
                    "to %s by %s",
                    kPolicyNames[was], kPolicyNames[now],
                    who_sets(thd).c_str());
  if (g_source) g_source->settings_changed();
}

MYSQL_SYSVAR_BOOL(enabled, opt_enabled, PLUGIN_VAR_OPCMDARG,
                  "Strong sync on this source: commits wait until "
                  "strata_sync_source_replicas replicas hold them in their "
                  "relay log (AFTER_SYNC).",
                  nullptr, update_enabled, false);

MYSQL_SYSVAR_UINT(replicas, opt_replicas, PLUGIN_VAR_OPCMDARG,
                  "Number of replica servers that must acknowledge a "
                  "transaction before it commits (connections of one "
                  "replica count once).",
                  nullptr, update_replicas, 1, 1, 64, 1);

TYPELIB policy_typelib = {array_elements(kPolicyNames) - 1, "", kPolicyNames,
                          nullptr};
MYSQL_SYSVAR_ENUM(policy, opt_policy, PLUGIN_VAR_OPCMDARG,
                  "What commits do when fewer than strata_sync_source_replicas "
                  "acknowledge: block (wait, the default), fail (error after "
                  "strata_sync_source_timeout ms) or degrade (switch to "
                  "asynchronous replication after the timeout, loudly, until "
                  "replicas catch up).",
                  nullptr, update_policy, kBlock, &policy_typelib);

MYSQL_SYSVAR_ULONG(timeout, opt_timeout_ms, PLUGIN_VAR_OPCMDARG,
                   "Milliseconds a commit waits before the policy acts (fail, "
                   "degrade); with block, after this long the state shows "
                   "BLOCKED and a warning is logged.",
                   nullptr, update_and_notify<unsigned long>, 10000, 1,
                   ~0UL >> 1, 1);

TYPELIB wait_point_typelib = {array_elements(kWaitPointNames) - 1, "",
                             kWaitPointNames, nullptr};
MYSQL_SYSVAR_ENUM(wait_point, opt_wait_point, PLUGIN_VAR_OPCMDARG,
                  "Where a commit waits for the replicas: AFTER_SYNC (the "
                  "default) before the engine commit, so no session sees the "
                  "transaction before N replicas hold it; AFTER_COMMIT after "
                  "the engine commit, before the statement's OK is sent: "
                  "other sessions may see it first, no client gets OK for it "
                  "unacknowledged, and on the strata_pool thread pool the "
                  "session waits without occupying a worker.",
                  nullptr, update_and_notify<unsigned long>, kAfterSync,
                  &wait_point_typelib);

MYSQL_SYSVAR_BOOL(ack_reader, opt_ack_reader, PLUGIN_VAR_OPCMDARG,
                  "Read the acknowledgements of plain-TCP strong-sync "
                  "replicas in the plugin's ack reader thread as they arrive "
                  "(ON, the default); OFF: as always on TLS connections, the "
                  "dump thread reads them before its next packet, and the ack "
                  "reader only while the dump thread waits for the binary "
                  "log to grow. Takes effect when a replica connects.",
                  nullptr, nullptr, true);

void update_realtime(MYSQL_THD, SYS_VAR *, void *ptr, const void *val) {
  *static_cast<bool *>(ptr) = *static_cast<const bool *>(val);
  g_realtime_generation++;
  if (g_source) g_source->realtime_changed();
}

MYSQL_SYSVAR_BOOL(realtime_ack_path, opt_realtime_ack_path,
                  PLUGIN_VAR_OPCMDARG,
                  "Run the threads a strong-sync acknowledgement passes "
                  "through on this source (the dump threads of strong-sync "
                  "replicas while commits wait, the ack reader, a session "
                  "while it sleeps waiting for its ack) "
                  "with the realtime policy SCHED_RR, so that busy CPUs do "
                  "not delay them (ON, the default; needs CAP_SYS_NICE or "
                  "RLIMIT_RTPRIO >= 1, otherwise a warning is logged and "
                  "they run at normal priority). "
                  "Strata_sync_source_realtime_threads counts the first "
                  "two.",
                  nullptr, update_realtime, true);

SYS_VAR *system_vars[] = {MYSQL_SYSVAR(enabled),    MYSQL_SYSVAR(replicas),
                          MYSQL_SYSVAR(policy),     MYSQL_SYSVAR(timeout),
                          MYSQL_SYSVAR(ack_reader), MYSQL_SYSVAR(wait_point),
                          MYSQL_SYSVAR(realtime_ack_path), nullptr};

/* ---- plugin ------------------------------------------------------------ */

/* Undo plugin_init; also its partial work when a registration failed
   (unregistering an observer that was never registered is harmless). */
void tear_down(void *p) {
  // First release every waiting and parked session (stop() sets m_stop),
  // then wait until no statement is inside defer()/resumed().
  g_source->stop();
  strata_park_register_sync(nullptr);
  strata_park_set_sessions(0);
  unregister_trans_observer(&trans_observer, p);
  unregister_binlog_storage_observer(&storage_observer, p);
  unregister_binlog_transmit_observer(&transmit_observer, p);
  delete g_source;
  g_source = nullptr;
  deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
}

int plugin_init(void *p) {
  if (init_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs)) return 1;
  PSI_stage_info *stages[] = {&stage_waiting_for_ack};
  mysql_stage_register("strata_sync", stages, 1);
  g_source = new Source();
  if (g_source->start() || register_trans_observer(&trans_observer, p) ||
      register_binlog_storage_observer(&storage_observer, p) ||
      register_binlog_transmit_observer(&transmit_observer, p)) {
    tear_down(p);
    return 1;
  }
  strata_park_register_sync(&park_ops);
  pfs_register();
  return 0;
}

/* Unregistering the observers waits for observer calls in progress, and a
   commit may wait in after_sync for ever (policy block): refuse instead. */
int plugin_check_uninstall(void *) {
  if (g_source == nullptr) return 0;
  const char *why = g_source->read([](Source &s) -> const char * {
    if (s.waiting > 0)
      return "Commits wait for replicas; SET GLOBAL "
             "strata_sync_source_enabled = OFF first.";
    if (s.connected_count() > 0)
      return "Stop the strong-sync replicas of this source first.";
    return nullptr;
  });
  if (why == nullptr) return 0;
  my_error(ER_PLUGIN_CANNOT_BE_UNINSTALLED, MYF(0), "strata_sync_source", why);
  return 1;
}

int plugin_deinit(void *p) {
  if (g_source == nullptr) return 0;
  pfs_unregister();
  tear_down(p);
  return 0;
}

Mysql_replication descriptor = {MYSQL_REPLICATION_INTERFACE_VERSION};

}  // namespace
}  // namespace strata::sync

mysql_declare_plugin(strata_sync_source){
    MYSQL_REPLICATION_PLUGIN,
    &strata::sync::descriptor,
    "strata_sync_source",
    "Strata",
    "Strong sync, source side: lossless AFTER_SYNC commits with an explicit "
    "policy when replicas do not acknowledge.",
    PLUGIN_LICENSE_GPL,
    strata::sync::plugin_init,
    strata::sync::plugin_check_uninstall,
    strata::sync::plugin_deinit,
    0x0100,
    strata::sync::status_vars,
    strata::sync::system_vars,
    nullptr,
    0,
} mysql_declare_plugin_end;

