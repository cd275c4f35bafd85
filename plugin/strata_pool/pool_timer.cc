/* Strata thread pool: the timer thread.

   Every 20 ms it makes sure each group has a listener (below). Every
   thread_pool_stall_limit milliseconds it looks at each group:
   - connections have commands queued but no worker took one since the last
     look: the running workers are stuck in long statements or in waits the
     server does not announce. The group is marked stalled (which lifts the
     oversubscribe limit) and gets one more worker, up to
     thread_pool_max_threads. This is what keeps a long DML, or sessions
     piling up behind FLUSH TABLES WITH READ LOCK, from freezing the group.
   Once a second it also closes idle connections past their wait_timeout:
   their socket's read side is shut so that the worker that picks the
   event up closes the session with ER_CLIENT_INTERACTION_TIMEOUT. */

#include <sys/socket.h>

#include <algorithm>

#include "my_systime.h"
#include "mysql/psi/mysql_thread.h"
#include "plugin/strata_pool/pool.h"
#include "plugin/strata_pool/pool_threads.h"

namespace {

mysql_mutex_t timer_mutex;
mysql_cond_t timer_cond;
my_thread_handle timer_thread;
bool timer_running = false;
bool timer_stop = false;

/* A worker that runs the command it found as listener leaves the group
   without a listener until it is done; for a long command, get another
   worker listening well before the stall limit. */
constexpr ulonglong kListenerCheckUs = 20000;

void check_listener(Pool_group *g) {
  mysql_mutex_lock(&g->mutex);
  if (g->io_events_since_check == 0 && g->connection_count > 0) {
    /* Nobody took an event for a while: if the listener parked because
       the group was full, its running workers are in long commands; let
       it queue what arrived, so that the stall check sees it. */
    if (g->listener == nullptr)
      pool_wake_or_create_worker(g, true);
    else if (g->listener_parked)
      pool_unpark_listener(g);
  }
  g->io_events_since_check = 0;
  mysql_mutex_unlock(&g->mutex);
}

void check_stall(Pool_group *g) {
  mysql_mutex_lock(&g->mutex);
  if (!g->queues_empty() && g->dequeues_since_check == 0) {
    g->stalled = true;
    pool_stats.stalls++;
    pool_wake_or_create_worker(g, true);
  } else if (g->dequeues_since_check > 0) {
    g->stalled = false;
  }
  g->dequeues_since_check = 0;
  mysql_mutex_unlock(&g->mutex);
}

/* Shutting down a descriptor is safe only while it cannot be closed: a
   connection's deadline is non-zero only while it sits in the epoll set,
   and it is cleared under the group mutex when it leaves it (an epoll
   event queued in enqueue_events, or arm() failing), before any worker can
   serve or close it. So under this mutex a connection with a deadline
   still owns its descriptor. (A worker clearing the deadline itself
   without the mutex, after taking the connection, left a window in which
   the connection could be closed and its descriptor number reused by a new
   client, whose socket the timer then shut.) */
void expire_idle_connections(Pool_group *g, ulonglong now) {
  mysql_mutex_lock(&g->mutex);
  for (Pool_connection *c = g->connections; c != nullptr; c = c->next) {
    const ulonglong deadline = c->deadline.load();
    if (deadline == 0 || deadline > now || c->timed_out) continue;
    c->timed_out = true;
    shutdown(c->fd, SHUT_RD);
  }
  mysql_mutex_unlock(&g->mutex);
}

void *timer_main(void *) {
  my_thread_init();
  ulonglong last_expiry_scan = 0;
  ulonglong last_stall_check = pool_now_us();
  mysql_mutex_lock(&timer_mutex);
  while (!timer_stop) {
    const ulonglong stall_us = ulonglong{pool_stall_limit_ms} * 1000ULL;
    timespec until;
    set_timespec_nsec(&until, std::min(stall_us, kListenerCheckUs) * 1000ULL);
    mysql_cond_timedwait(&timer_cond, &timer_mutex, &until);
    if (timer_stop) break;
    mysql_mutex_unlock(&timer_mutex);
    for (auto &g : pool_groups()) check_listener(&g);
    const ulonglong now = pool_now_us();
    if (now - last_stall_check >= stall_us) {
      last_stall_check = now;
      for (auto &g : pool_groups()) check_stall(&g);
    }
    /* Workers past thread_pool_idle_timeout and closed admin sessions
       leave their thread handles behind until joined. */
    pool_threads_reap();
    if (now - last_expiry_scan >= 1000000ULL) {
      last_expiry_scan = now;
      for (auto &g : pool_groups()) expire_idle_connections(&g, now);
    }
    mysql_mutex_lock(&timer_mutex);
  }
  mysql_mutex_unlock(&timer_mutex);
  my_thread_end();
  return nullptr;
}

}  // namespace

bool pool_timer_start() {
  mysql_mutex_init(PSI_NOT_INSTRUMENTED, &timer_mutex, MY_MUTEX_INIT_FAST);
  mysql_cond_init(PSI_NOT_INSTRUMENTED, &timer_cond);
  timer_stop = false;
  my_thread_attr_t attr;
  my_thread_attr_init(&attr);
  my_thread_attr_setdetachstate(&attr, MY_THREAD_CREATE_JOINABLE);
  const int rc = mysql_thread_create(key_pool_timer_thread, &timer_thread,
                                     &attr, timer_main, nullptr);
  my_thread_attr_destroy(&attr);
  timer_running = rc == 0;
  return rc != 0;
}

void pool_timer_stop() {
  if (!timer_running) return;
  mysql_mutex_lock(&timer_mutex);
  timer_stop = true;
  mysql_cond_signal(&timer_cond);
  mysql_mutex_unlock(&timer_mutex);
  my_thread_join(&timer_thread, nullptr);
  timer_running = false;
  mysql_cond_destroy(&timer_cond);
  mysql_mutex_destroy(&timer_mutex);
}
