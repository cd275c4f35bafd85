/* Strata: deferred statement status for strong sync's parked wait point.
   See sql/strata_park.h. */

#include "sql/strata_park.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "mysql_com.h"  // SERVER_MORE_RESULTS_EXISTS
#include "sql/current_thd.h"
#include "sql/sql_class.h"
#include "sql/sql_error.h"

namespace {

std::atomic<const Strata_park_sync *> g_sync{nullptr};
std::atomic<long> g_sessions{0};
/* Calls into the sync plugin in progress (unregistering waits for none). */
std::atomic<int> g_calls{0};
/* The audit plugin, and calls into it in progress, likewise. */
std::atomic<const Strata_park_audit *> g_audit{nullptr};
std::atomic<int> g_audit_calls{0};

/* Set by the pool around do_command() on a worker that can park. */
thread_local THD *tl_thd = nullptr;
thread_local strata_park_resume_fn tl_resume = nullptr;
thread_local void *tl_arg = nullptr;
thread_local bool tl_deferred = false;

/* Holds the registered plugin for the duration of one call. */
class Sync_call {
 public:
  Sync_call() {
    g_calls.fetch_add(1);
    m_sync = g_sync.load();
  }
  ~Sync_call() { g_calls.fetch_sub(1); }
  Sync_call(const Sync_call &) = delete;
  Sync_call &operator=(const Sync_call &) = delete;
  const Strata_park_sync *sync() const { return m_sync; }

 private:
  const Strata_park_sync *m_sync;
};

}  // namespace

void strata_park_register_sync(const Strata_park_sync *sync) {
  g_sync.store(sync);
  if (sync != nullptr) return;
  while (g_calls.load() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void strata_park_register_audit(const Strata_park_audit *audit) {
  g_audit.store(audit);
  if (audit != nullptr) return;
  while (g_audit_calls.load() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

bool strata_park_status_deferred(const THD *thd) {
  return tl_deferred && tl_thd == thd;
}

void strata_park_set_sessions(long n) {
  g_sessions.store(n, std::memory_order_relaxed);
}

void strata_park_worker_begin(THD *thd, strata_park_resume_fn resume,
                              void *arg) {
  tl_thd = thd;
  tl_resume = resume;
  tl_arg = arg;
  tl_deferred = false;
}

bool strata_park_worker_end() {
  const bool deferred = tl_deferred;
  tl_thd = nullptr;
  tl_resume = nullptr;
  tl_arg = nullptr;
  tl_deferred = false;
  return deferred;
}

void strata_park_resume(THD *thd) {
  {
    Sync_call call;
    if (call.sync() != nullptr) call.sync()->resumed(thd);
  }
  thd->send_statement_status();
  /* The statement's audit record waited for this status. */
  g_audit_calls.fetch_add(1);
  const Strata_park_audit *audit = g_audit.load();
  if (audit != nullptr) audit->status_sent(thd);
  g_audit_calls.fetch_sub(1);
}

bool strata_park_defer_status(THD *thd) {
  if (g_sessions.load(std::memory_order_relaxed) == 0 ||
      g_sync.load(std::memory_order_relaxed) == nullptr)
    return false;
  const Diagnostics_area *da = thd->get_stmt_da();
  if (da->is_sent() || (!da->is_ok() && !da->is_eof() && !da->is_error()))
    return false;
  if (thd != current_thd) return false;
  /* No status of a session with an unacknowledged commit leaves before the
     acknowledgement: not the last OK/EOF of its statement, not an
     intermediate one (a multi-statement or a CALL goes on after it, so the
     session waits in this thread) and not an error (a statement that
     committed and then failed). Only the last OK/EOF can park. */
  const bool last_ok = (da->is_ok() || da->is_eof()) &&
                       (thd->server_status & SERVER_MORE_RESULTS_EXISTS) == 0;
  const bool can_park =
      last_ok && tl_thd == thd && tl_resume != nullptr && !tl_deferred;
  Sync_call call;
  if (call.sync() == nullptr) return false;
  if (!call.sync()->defer(thd, can_park ? tl_resume : nullptr, tl_arg))
    return false;
  tl_deferred = true;
  return true;
}

void strata_park_dump_wait_begin(THD *thd) {
  if (g_sync.load(std::memory_order_relaxed) == nullptr) return;
  Sync_call call;
  if (call.sync() != nullptr) call.sync()->dump_wait_begin(thd);
}

void strata_park_dump_wait_end(THD *thd) {
  if (g_sync.load(std::memory_order_relaxed) == nullptr) return;
  Sync_call call;
  if (call.sync() != nullptr) call.sync()->dump_wait_end(thd);
}

void strata_park_dump_gtids(THD *thd, const Gtid_set *replica_gtids) {
  if (g_sync.load(std::memory_order_relaxed) == nullptr) return;
  Sync_call call;
  if (call.sync() != nullptr) call.sync()->dump_gtids(thd, replica_gtids);
}
