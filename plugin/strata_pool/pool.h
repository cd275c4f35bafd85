/* Strata thread pool: the scheduler's shared state.

   Connections are spread over thread groups (thread_pool_size, one per CPU
   by default). Each group owns an epoll set that its idle connections wait
   in, one listener role (the worker currently blocked in epoll_wait), a high
   and a low priority queue of connections with a command ready, and its
   workers. A group runs up to 1 + thread_pool_oversubscribe commands at
   once, and more only when the timer finds it stalled or when its running
   workers block in a server wait (thd_wait_begin). See docs/thread_pool.md. */

#ifndef STRATA_POOL_POOL_H
#define STRATA_POOL_POOL_H

#include <atomic>
#include <deque>
#include <vector>

#include "my_inttypes.h"
#include "mysql/psi/mysql_cond.h"
#include "mysql/psi/mysql_mutex.h"
#include "mysql/psi/mysql_thread.h"

class THD;
class Channel_info;
struct Pool_group;

/* One client connection handled by the pool. */
struct Pool_connection {
  explicit Pool_connection(Channel_info *info) : channel_info(info) {}

  THD *thd = nullptr;
  /* Set until a worker has authenticated the connection. */
  Channel_info *channel_info;
  Pool_group *group = nullptr;
  int fd = -1;
  PSI_thread *psi = nullptr;
  /* High priority queueings left before the connection must wait its turn
     (thread_pool_high_prio_tickets). */
  uint tickets = 0;
  /* Microseconds since the epoch when an idle connection exceeds
     wait_timeout; 0 while a worker owns it. Set before the socket goes
     back into the epoll set, cleared under the group mutex when it comes
     out (pool_timer.cc says why). */
  std::atomic<ulonglong> deadline{0};
  std::atomic<bool> timed_out{false};
  /* Strong sync's parked wait point (sql/strata_park.h): the statement
     status of the last command waits for a replica's acknowledgement while
     no worker holds the connection and its socket is out of the epoll set.
     kParking from before do_command until the worker has let go of it;
     written under the group mutex once the sync plugin may call
     pool_resume_parked. */
  enum Park { kNotParked, kParking, kParked, kResumedEarly };
  Park park = kNotParked;
  /* Queued to send its deferred statement status (not to read a command). */
  bool resume = false;
  /* When it was last queued (pool_now_us), for THREAD_POOL_QUEUES. */
  ulonglong queued_us = 0;
  /* The group's list of connections, for the wait_timeout scan. */
  Pool_connection *prev = nullptr;
  Pool_connection *next = nullptr;
};

/* One worker thread. */
struct Pool_worker {
  Pool_group *group = nullptr;
  mysql_cond_t cond;
  bool woken = false;
  /* Inside thd_wait_begin/end: not counted as running. */
  bool in_wait = false;
};

struct Pool_group {
  uint index = 0;
  mysql_mutex_t mutex;
  int epoll_fd = -1;
  /* Written once at shutdown to wake the listener; never read. */
  int shutdown_fd = -1;
  /* Edge-triggered: written to wake the listener when a parked connection
     is queued to resume (no socket event announces it). */
  int wake_fd = -1;

  std::deque<Pool_connection *> high_queue;
  std::deque<Pool_connection *> low_queue;
  std::vector<Pool_worker *> idle_workers;  // LIFO: warmest first
  Pool_worker *listener = nullptr;
  /* The listener stopped listening because the group runs all it may
     (listen() in pool_scheduler.cc); woken through its cond. */
  bool listener_parked = false;

  /* Workers by state; the invariant that ties them is written (and
     checked) at the top of pool_scheduler.cc. */
  uint thread_count = 0;
  uint active_count = 0;  // workers running, neither idle, listening nor waiting
  uint waiting_count = 0;  // workers inside thd_wait_begin/end
  uint sticky_count = 0;   // workers waiting for their connection's next command
  /* Workers in the idle wait of next_connection, from the moment they go
     to sleep until they run again: also those already woken (no longer
     in idle_workers) that have not yet taken the mutex back. */
  uint idle_count = 0;
  uint parked_count = 0;  // connections parked (strong sync), of connection_count
  uint connection_count = 0;
  /* The first violation of the invariant in this group was logged. */
  bool violation_logged = false;
  Pool_connection *connections = nullptr;

  /* Progress counters the timer reads and resets (stall detection). */
  ulonglong dequeues_since_check = 0;
  ulonglong io_events_since_check = 0;
  bool stalled = false;
  /* When a worker was last started (thread creation throttling). */
  ulonglong last_create_us = 0;

  bool queues_empty() const { return high_queue.empty() && low_queue.empty(); }
};

/* Settings (plugin system variables, see pool_plugin.cc). */
extern uint pool_size;
extern uint pool_oversubscribe;
extern uint pool_max_threads;
extern uint pool_stall_limit_ms;
extern uint pool_idle_timeout_s;
extern ulong pool_high_prio_mode;  // 0 transactions, 1 statements, 2 none
extern uint pool_high_prio_tickets;
/* Test only (thread_pool_test_exit_delay_ms, read-only): how long a worker
   lingers in the library after it has counted itself out. */
extern uint pool_test_exit_delay_ms;
/* Test only (thread_pool_test_take_delay_ms, read-only): how long a worker
   waits before serving a connection it took, for sessions with
   wait_timeout = 1. */
extern uint pool_test_take_delay_ms;

/* Counters (status variables). */
struct Pool_stats {
  std::atomic<ulonglong> threads{0};
  std::atomic<ulonglong> idle_threads{0};
  std::atomic<ulonglong> admin_threads{0};
  std::atomic<ulonglong> stalls{0};
  std::atomic<ulonglong> threads_created{0};
  std::atomic<ulonglong> high_prio_dequeues{0};
  std::atomic<ulonglong> low_prio_dequeues{0};
  std::atomic<ulonglong> direct_continues{0};
  std::atomic<ulonglong> sticky_commands{0};
  std::atomic<ulonglong> wait_timeouts{0};
  std::atomic<ulonglong> parked{0};   // connections parked now
  std::atomic<ulonglong> parks{0};    // statement statuses deferred, in all
  std::atomic<ulonglong> listener_parks{0};  // a full group's listener stopped listening
  /* Times a group's counters were found to break their invariant (top of
     pool_scheduler.cc); 0 unless the scheduler has a bug. */
  std::atomic<ulonglong> counter_violations{0};

};
extern Pool_stats pool_stats;

extern PSI_thread_key key_pool_worker_thread;
extern PSI_thread_key key_pool_timer_thread;
extern PSI_thread_key key_pool_admin_thread;
extern PSI_thread_key key_pool_connection;

/* pool_scheduler.cc */
bool pool_start();
void pool_stop();
bool pool_add_connection(Channel_info *channel_info);
void pool_thd_wait_begin(THD *thd, int wait_type);
void pool_thd_wait_end(THD *thd);
void pool_post_kill_notification(THD *thd);
/* Wake an idle worker of the group, or start one if allowed. Needs
   group->mutex. With nothing queued (a listener is wanted), starting
   threads is throttled once a group has a few; with commands queued, or
   from the timer (paced by itself), it is not. */
void pool_wake_or_create_worker(Pool_group *group, bool from_timer = false);
/* A listener parked while its group was full listens again. Needs
   group->mutex. */
void pool_unpark_listener(Pool_group *group);
std::vector<Pool_group> &pool_groups();
bool pool_shutting_down();
uint pool_queued_connections();
/* Idle workers look at thread_pool_idle_timeout again. */
void pool_recheck_idle_workers();
uint pool_active_threads();
/* One line per group: threads, running, waiting, idle, queued, listener. */
void pool_describe_groups(char *buf, size_t size);

/* A group as INFORMATION_SCHEMA.THREAD_POOL_GROUPS shows it: one group's
   counts read together under its mutex. */
struct Pool_group_state {
  uint index = 0;
  uint connections = 0;
  uint threads = 0;
  uint running = 0;
  uint waiting = 0;
  uint sticky = 0;
  uint idle = 0;
  uint queued_high = 0;
  uint queued_low = 0;
  bool listener = false;
  bool listener_parked = false;
  bool stalled = false;
};
std::vector<Pool_group_state> pool_group_states();

/* A queued connection as INFORMATION_SCHEMA.THREAD_POOL_QUEUES shows it. */
struct Pool_queued_state {
  uint group = 0;
  uint position = 0;  // in the order the group serves them: high queue first
  bool high = false;
  bool authenticated = false;  // a new connection has no id until its login
  ulonglong connection_id = 0;
  ulonglong queued_for_us = 0;
};
std::vector<Pool_queued_state> pool_queued_states();

/* pool_connection.cc: a connection's THD across worker threads. */
bool pool_connection_login(Pool_connection *conn);
void pool_connection_attach(Pool_connection *conn);
void pool_connection_detach(Pool_connection *conn);
/* Runs commands while the connection has one ready. */
enum class Served { kIdle, kClosed, kParked };
Served pool_connection_serve(Pool_connection *conn);
/* The sync plugin's resume callback (strata_park_resume_fn): queues a
   parked connection to send its deferred status. Runs on the thread that learnt of the
   acknowledgement (the sync plugin's ack reader, a dump thread, ...), under
   the sync plugin's mutex: only queues and wakes. */
void pool_resume_parked(void *arg);
void pool_connection_close(Pool_connection *conn, bool end, uint sql_errno);

/* pool_timer.cc */
bool pool_timer_start();
void pool_timer_stop();

/* pool_admin.cc: connections of the admin port get their own thread. */
bool pool_admin_add_connection(Channel_info *channel_info);

ulonglong pool_now_us();

#endif  // STRATA_POOL_POOL_H
