/* Strata: defer a statement's OK until a replica acknowledges its commit,
   without holding a thread-pool worker (strong sync, parked wait point).

   With strata_sync_source_wait_point = AFTER_COMMIT the strong-sync source
   plugin (plugin/strata_sync) lets a commit finish in the engine at once and
   makes the session wait at the end of the statement instead: the OK (or
   EOF) packet must not reach the client before N replicas hold the
   transaction, nor any other status of that session (an intermediate OK of
   a multi-statement or CALL, an error after the commit): those wait in the
   session's thread. THD::send_statement_status() asks strata_park_defer_status()
   first (patch 0013-statement-status-park). Then:

   - On a worker of our thread pool (plugin/strata_pool), which declared
     around do_command() that it can park (strata_park_worker_begin), the
     status is not sent: the sync plugin registers resume(arg) for the
     session's commit position and the worker goes on with other
     connections. When the acknowledgement arrives (or the policy releases
     the commit) the sync plugin calls resume(arg) from the thread that
     learnt it (its ack reader; on TLS the replica's dump thread, which holds
     its own worker for its whole life), so no free worker is needed; the
     pool queues the connection, and a worker attaches it
     and calls strata_park_resume(), which sends the deferred status (the
     Diagnostics_area is untouched until the next command resets it).
   - Anywhere else (one thread per connection, the pool's admin threads) the
     session waits in its own thread, in the same place.

   The two plugins register here, so neither links the other. Without the
   sync plugin registered everything below is a load of one atomic pointer. */
#ifndef STRATA_PARK_H
#define STRATA_PARK_H

class Gtid_set;
class THD;

/* Called exactly once per parked session, from whichever thread covers or
   releases its commit (ack reader, a dump thread, a SET GLOBAL or RESET
   session, uninstall), while the sync plugin holds its mutex: it must only queue the connection, never call back into the
   sync plugin. */
using strata_park_resume_fn = void (*)(void *arg);

/* What the strong-sync source plugin provides. */
struct Strata_park_sync {
  /* A statement status is about to be sent: the last OK/EOF of a
     statement, an intermediate one (more results follow), or an error.
     With resume set (only for a last OK/EOF on a worker that can park):
     returns true if the session's last commit is not acknowledged yet; the
     session is then parked and resume(arg) will be called. With resume == nullptr
     (the session cannot park): waits here until the commit is acknowledged
     or released, and returns false. Returns false at once when nothing is
     pending. When it returns false the status may have been replaced by an
     error (the fail policy's timeout). */
  bool (*defer)(THD *thd, strata_park_resume_fn resume, void *arg);
  /* On the worker that resumes a parked session, before the status is
     sent: settles the session (the fail policy's error, counters). */
  void (*resumed)(THD *thd);
  /* A binary log dump thread is about to wait for the binary log to grow
     (its output flushed), and woke from that wait (also around a heartbeat
     it sends from inside the wait, so the calls pair up). Meanwhile the
     plugin's ack reader may read the replica's acks from the connection
     (plugin/strata_sync/strata_sync_ack_stream.h). */
  void (*dump_wait_begin)(THD *thd);
  void (*dump_wait_end)(THD *thd);
  /* A replica that asked for its dump with GTID auto-positioning
     (COM_BINLOG_DUMP_GTID) says it holds replica_gtids; called on the dump
     thread right after the transmit_start observers, before any event is
     sent. The set lives until the dump ends; the plugin only reads it
     here. A commit the plugin sent that replica server before and whose
     GTID is in the set counts as acknowledged by it (an ack lost with a
     broken connection is not resent: the new dump skips what the replica
     has). */
  void (*dump_gtids)(THD *thd, const Gtid_set *replica_gtids);
};

/* The sync plugin keeps here how many sessions have a commit that is not
   settled yet (written under its own mutex, by it alone): while it is 0,
   which is always the case with the default wait point, the statement
   status costs two relaxed loads and no call into the plugin. */
void strata_park_set_sessions(long n);

/* The sync plugin registers at init and unregisters (nullptr) at deinit;
   unregistering waits until no call into the plugin is in progress. */
void strata_park_register_sync(const Strata_park_sync *sync);

/* The pool, around do_command() on a worker: the statement status of this
   command may be deferred; resume(arg) brings the connection back. end()
   returns true when it was deferred (the session is parked: do not read
   its next command, do not close it; wait for resume). */
void strata_park_worker_begin(THD *thd, strata_park_resume_fn resume,
                              void *arg);
bool strata_park_worker_end();

/* The pool, on the worker that took the resumed connection (attached):
   sends the deferred statement status. */
void strata_park_resume(THD *thd);

/* THD::send_statement_status(): true when the status must not be sent now
   (the session parked). */
bool strata_park_defer_status(THD *thd);

/* Binlog_sender (patch 0015-binlog-dump-wait), around its wait for binary
   log updates: pass the dump thread's wait to the sync plugin. */
void strata_park_dump_wait_begin(THD *thd);
void strata_park_dump_wait_end(THD *thd);

/* Binlog_sender (patch 0015), once per dump with GTID auto-positioning,
   after the transmit_start hook: the GTID set the replica sent. */
void strata_park_dump_gtids(THD *thd, const Gtid_set *replica_gtids);

/* What an audit plugin provides (plugin/strata_audit). The server raises
   a statement's audit event (MYSQL_AUDIT_GENERAL_STATUS) right after
   THD::send_statement_status(), so for a parked session it carries the
   status as it stood before the wait: OK, even if the fail policy then
   turns it into an error. The audit plugin keeps such a statement's record
   back (strata_park_status_deferred) and writes it from status_sent, with
   the status the client got. */
struct Strata_park_audit {
  /* On the worker that resumed thd (attached), once the deferred status
     has been sent: thd's Diagnostics_area holds what was sent. */
  void (*status_sent)(THD *thd);
};

/* The audit plugin registers at init and unregisters (nullptr) at deinit;
   unregistering waits until no call into the plugin is in progress. */
void strata_park_register_audit(const Strata_park_audit *audit);

/* True on the thread running thd's command once that command's statement
   status has been deferred (the session parks when the command returns):
   the audit event raised now does not carry the final status. */
bool strata_park_status_deferred(const THD *thd);

#endif  // STRATA_PARK_H
