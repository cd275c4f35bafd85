/* Strata thread pool: a connection's THD moving between worker threads.

   A pooled connection has no thread of its own, so its THD is bound to the
   worker that runs its command (thread globals, stack start for overrun
   checks, the Performance Schema thread of the connection) and unbound
   before the connection goes back to its group's epoll set, where any
   worker may pick it up next. */

#include <mysql/thread_pool_priv.h>

#include "mysql/psi/mysql_socket.h"
#include "mysql/service_thd_wait.h"
#include "plugin/strata_pool/pool.h"
#include "sql/mysqld.h"  // connection_events_loop_aborted (inline)
#include "sql/sql_class.h"
#include "sql/sql_connect.h"
#include "sql/sql_thd_internal_api.h"
#include "sql/strata_park.h"

namespace {

/* The worker's own instrumentation, restored when a connection detaches. */
thread_local PSI_thread *worker_psi = nullptr;

void bind_psi(Pool_connection *conn [[maybe_unused]]) {
#ifdef HAVE_PSI_THREAD_INTERFACE
  worker_psi = PSI_THREAD_CALL(get_thread)();
  PSI_THREAD_CALL(set_thread)(conn->psi);
#endif
}

void unbind_psi() {
#ifdef HAVE_PSI_THREAD_INTERFACE
  PSI_THREAD_CALL(set_thread)(worker_psi);
#endif
}

}  // namespace

/* Creates the THD from the accepted channel and authenticates the client.
   Runs on a worker; the handshake is blocking network I/O bounded by
   connect_timeout. */
bool pool_connection_login(Pool_connection *conn) {
  Channel_info *channel_info = conn->channel_info;
  conn->channel_info = nullptr;

#ifdef HAVE_PSI_THREAD_INTERFACE
  worker_psi = PSI_THREAD_CALL(get_thread)();
  conn->psi = PSI_THREAD_CALL(new_thread)(key_pool_connection, 0, nullptr, 0);
  PSI_THREAD_CALL(set_thread)(conn->psi);
#endif

  THD *thd = create_thd(channel_info);
  destroy_channel_info(channel_info);
  if (thd == nullptr) {
    dec_connection_count();
    increment_aborted_connects();
    unbind_psi();
#ifdef HAVE_PSI_THREAD_INTERFACE
    if (conn->psi != nullptr) PSI_THREAD_CALL(delete_thread)(conn->psi);
#endif
    conn->psi = nullptr;
    return false;
  }
  conn->thd = thd;
  char stack_start;
  thd_init(thd, &stack_start);
#ifdef HAVE_PSI_THREAD_INTERFACE
  PSI_THREAD_CALL(set_thread_THD)(conn->psi, thd);
  PSI_THREAD_CALL(set_thread_id)(conn->psi, thd->thread_id());
  mysql_socket_set_thread_owner(thd_get_mysql_socket(thd));
  thd->set_psi(conn->psi);
#endif
  conn->fd = thd_get_fd(thd);

  /* The handshake waits for the client (round trips, connect_timeout):
     count it as a wait so that a burst of new connections does not hold
     every worker of the group while commands queue. */
  pool_thd_wait_begin(thd, THD_WAIT_NONE);  // no network wait type
  const bool login_failed = thd_prepare_connection(thd);
  pool_thd_wait_end(thd);
  if (login_failed) {
    increment_aborted_connects();
    pool_connection_close(conn, false, 0);
    return false;
  }
  if (!thd_connection_alive(thd) || connection_events_loop_aborted()) {
    pool_connection_close(conn, true, 0);
    return false;
  }
  /* From here KILL finds the connection (pool_post_kill_notification). */
  thd_lock_data(thd);
  thd_set_scheduler_data(thd, conn);
  thd_unlock_data(thd);
  pool_connection_detach(conn);
  return true;
}

void pool_connection_attach(Pool_connection *conn) {
  THD *thd = conn->thd;
  bind_psi(conn);
  char stack_start;
  thd_set_thread_stack(thd, &stack_start);
  thd_store_globals(thd);
  thd_clear_errors(thd);
}

void pool_connection_detach(Pool_connection *conn) {
  THD *thd = conn->thd;
  /* Shown as reading in SHOW PROCESSLIST while it waits for its client. */
  thd_set_net_read_write(thd, 1);
  reset_thread_globals(thd);
  unbind_psi();
}

Served pool_connection_serve(Pool_connection *conn) {
  THD *thd = conn->thd;
  for (;;) {
    thd_set_net_read_write(thd, 0);
    if (!thd_connection_alive(thd)) return Served::kClosed;
    /* Strong sync may defer this command's OK until a replica acknowledges
       its commit (sql/strata_park.h): then the connection parks, whatever
       else happened (a KILL is seen when it resumes). */
    conn->park = Pool_connection::kParking;
    strata_park_worker_begin(thd, pool_resume_parked, conn);
    const bool failed = do_command(thd);
    if (strata_park_worker_end()) return Served::kParked;
    conn->park = Pool_connection::kNotParked;
    if (failed || !thd_connection_alive(thd)) return Served::kClosed;
    /* The next command may already be buffered (pipelining clients, or
       a TLS record holding two packets): go on with it here rather than
       through the epoll set and, maybe, another thread. */
    if (!thd_connection_has_data(thd)) return Served::kIdle;
    pool_stats.direct_continues++;
  }
}

/* Ends the session on the current worker (the connection is attached or
   was never detached) and frees everything it held. `end` after a
   successful login (end_connection updates the session's statistics). */
void pool_connection_close(Pool_connection *conn, bool end, uint sql_errno) {
  THD *thd = conn->thd;
  thd_lock_data(thd);
  thd_store_globals(thd);
  thd_set_scheduler_data(thd, nullptr);
  thd_unlock_data(thd);
  thd_set_net_read_write(thd, 0);

#ifdef HAVE_PSI_THREAD_INTERFACE
  PSI_thread *psi = conn->psi;
  if (psi != nullptr) PSI_THREAD_CALL(abort_telemetry)(psi);
#endif
  if (end) end_connection(thd);
  close_connection(thd, sql_errno, false, false);
#ifdef HAVE_PSI_THREAD_INTERFACE
  if (psi != nullptr) PSI_THREAD_CALL(set_thread_THD)(psi, nullptr);
#endif
  destroy_thd(thd, false);
  conn->thd = nullptr;
  dec_connection_count();

  unbind_psi();
#ifdef HAVE_PSI_THREAD_INTERFACE
  if (psi != nullptr) PSI_THREAD_CALL(delete_thread)(psi);
#endif
  conn->psi = nullptr;
}
