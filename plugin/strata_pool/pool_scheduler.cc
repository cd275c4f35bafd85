/* Strata thread pool: thread groups, their workers and the listener role.

   A worker loops: take a connection with a command ready, run its commands,
   hand it back to the group's epoll set. Where the next connection comes
   from, in order:
   1. the group's queues (high priority first), unless the group already has
      1 + thread_pool_oversubscribe running workers and is not stalled;
   2. the epoll set, as the group's listener when no one else listens. A
      listener that finds the queues empty runs the first ready connection
      itself and queues the rest, so at low concurrency one thread goes from
      one command to the next without handing anything to another thread;
   3. a non-blocking look at the epoll set;
   and otherwise the worker sleeps until woken or thread_pool_idle_timeout.
   While commands are queued and the group runs fewer than it may, an idle
   worker is woken to help. With the queue empty, a worker waits briefly for
   the next command of the connection it just served (sticky connections).

   Running workers are counted; when the last one of a group blocks in a
   server wait (row lock, FLUSH TABLES WITH READ LOCK, sleep, disk),
   thd_wait_begin wakes or starts another so the group keeps serving. The
   timer (pool_timer.cc) covers what is not announced: a group whose queue
   has not moved for thread_pool_stall_limit ms gets one more worker.

   The thread counters and their invariant. Whenever its group's mutex is
   free, every worker is in exactly one state, and the group counts each:
     running     active_count   what 1 + thread_pool_oversubscribe limits
     waiting     waiting_count  in thd_wait_begin/end or a sticky poll
                                (sticky_count of them in a sticky poll)
     idle        idle_count     asleep in next_connection, or woken and
                                not running yet (idle_workers lists the
                                idle ones nobody has woken)
     listening   listener       at most one: in epoll_wait, or parked
   so that, under the group's mutex,
     thread_count == active_count + waiting_count + idle_count
                     + (listener != nullptr)
     sticky_count <= waiting_count, idle_workers.size() <= idle_count,
     listener_parked implies listener != nullptr,
     parked_count <= connection_count (a parked connection is in no queue
     and not in the epoll set; pool_resume_parked is its only way back).
   A worker is born running (create_worker) and leaves running
   (worker_main). Each move between states changes both counters in one
   critical section, which ends with check_counters(): a few compares, so
   it runs in release builds too. A violation is counted
   (Threadpool_counter_violations), logged once per group with the counts,
   and asserted in debug builds. Across groups: total_threads and
   pool_stats.threads are the sum of the groups' thread_count and
   pool_stats.parked the sum of their parked_count (each changed under the
   group's mutex together with it), pool_stats.idle_threads the sum of
   idle_count. */

#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <thread>

#include <mysql/components/services/log_builtins.h>
#include <mysql/plugin.h>
#include <mysql/thread_pool_priv.h>
#include <mysqld_error.h>
#include "mysql/service_thd_wait.h"

#include "my_sys.h"
#include "my_thread.h"
#include "plugin/strata_pool/pool.h"
#include "plugin/strata_pool/pool_threads.h"
#include "sql/sql_class.h"
#include "sql/strata_park.h"

namespace {

std::vector<Pool_group> groups;
std::atomic<bool> shutting_down{false};
std::atomic<uint> next_group{0};
std::atomic<uint> total_threads{0};

thread_local Pool_worker *current_worker = nullptr;

#ifdef HAVE_PSI_INTERFACE
PSI_mutex_key key_group_mutex;
PSI_cond_key key_worker_cond;
PSI_mutex_info mutexes[] = {{&key_group_mutex, "group_mutex", 0, 0, PSI_DOCUMENT_ME}};
PSI_cond_info conds[] = {{&key_worker_cond, "worker_cond", 0, 0, PSI_DOCUMENT_ME}};
#endif

constexpr int kMaxEventsPerWait = 64;

/* The invariant at the top of this file. Needs group->mutex; called at
   the end of every critical section that moves a worker between states or
   parks or resumes a connection. */
void check_counters(Pool_group *g, const char *where) {
  const uint listening = g->listener != nullptr ? 1 : 0;
  const bool ok =
      g->active_count <= g->thread_count &&
      g->waiting_count <= g->thread_count &&
      g->idle_count <= g->thread_count &&
      g->thread_count ==
          g->active_count + g->waiting_count + g->idle_count + listening &&
      g->sticky_count <= g->waiting_count &&
      g->idle_workers.size() <= g->idle_count &&
      (!g->listener_parked || g->listener != nullptr) &&
      g->parked_count <= g->connection_count;
  if (ok) return;
  pool_stats.counter_violations++;
  if (!g->violation_logged) {
    g->violation_logged = true;
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_pool: thread counters of group %u broke their "
                    "invariant (%s): threads %u running %u waiting %u "
                    "sticky %u idle %u (unwoken %zu) listener %u parked "
                    "connections %u of %u",
                    g->index, where, g->thread_count, g->active_count,
                    g->waiting_count, g->sticky_count, g->idle_count,
                    g->idle_workers.size(), listening, g->parked_count,
                    g->connection_count);
  }
  assert(ok);
}

/* A group runs up to 1 + thread_pool_oversubscribe commands at once (more
   only when stalled). Asked by a worker that is itself counted running. */
bool too_many_active(const Pool_group *g) {
  return g->active_count > 1 + pool_oversubscribe && !g->stalled;
}

/* A parked listener (see listen()) goes back to the epoll set. Needs
   group->mutex. */
void unpark_listener(Pool_group *g) {
  if (!g->listener_parked) return;
  g->listener->woken = true;
  mysql_cond_signal(&g->listener->cond);
}

/* Called where a worker stops counting as running: the group may run one
   more, so it needs its listener again. Needs group->mutex. */
void on_running_less(Pool_group *g) {
  if (g->active_count < 1 + pool_oversubscribe) unpark_listener(g);
}

/* Every queueing goes through here, so THREAD_POOL_QUEUES can say how
   long each queued connection has waited. */
void queue(Pool_group *g, Pool_connection *conn, bool high) {
  conn->queued_us = pool_now_us();
  (high ? g->high_queue : g->low_queue).push_back(conn);
}

/* Which queue a connection with a command ready goes to. A statement of an
   open transaction goes first, so the locks it holds are released sooner;
   its tickets bound how long one transaction may keep jumping the line. */
void enqueue(Pool_group *g, Pool_connection *conn) {
  bool high = false;
  if (conn->thd != nullptr) {
    switch (pool_high_prio_mode) {
      case 0:  // transactions
        high = conn->tickets > 0 &&
               thd_in_active_multi_stmt_transaction(conn->thd);
        break;
      case 1:  // statements
        high = true;
        break;
      default:  // none
        break;
    }
  }
  if (high) {
    conn->tickets--;
  } else {
    conn->tickets = pool_high_prio_tickets;
  }
  queue(g, conn, high);
}

Pool_connection *dequeue(Pool_group *g) {
  Pool_connection *conn = nullptr;
  if (!g->high_queue.empty()) {
    conn = g->high_queue.front();
    g->high_queue.pop_front();
    pool_stats.high_prio_dequeues++;
  } else if (!g->low_queue.empty()) {
    conn = g->low_queue.front();
    g->low_queue.pop_front();
    pool_stats.low_prio_dequeues++;
  }
  if (conn != nullptr) g->dequeues_since_check++;
  return conn;
}

void link_connection(Pool_group *g, Pool_connection *conn) {
  conn->group = g;
  conn->next = g->connections;
  if (g->connections != nullptr) g->connections->prev = conn;
  g->connections = conn;
  g->connection_count++;
}

void unlink_connection(Pool_group *g, Pool_connection *conn) {
  if (conn->prev != nullptr) conn->prev->next = conn->next;
  if (conn->next != nullptr) conn->next->prev = conn->prev;
  if (g->connections == conn) g->connections = conn->next;
  g->connection_count--;
}

void forget_connection(Pool_connection *conn) {
  Pool_group *g = conn->group;
  mysql_mutex_lock(&g->mutex);
  unlink_connection(g, conn);
  mysql_mutex_unlock(&g->mutex);
  delete conn;
}

/* Returns the connection to its group's epoll set until its client sends
   the next command. After epoll_ctl another worker may own it: nothing
   here touches it afterwards. */
void arm(Pool_connection *conn) {
  const ulong timeout_s = thd_get_net_wait_timeout(conn->thd);
  conn->deadline = pool_now_us() + ulonglong{timeout_s} * 1000000ULL;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
  ev.data.ptr = conn;
  int fd = conn->fd;
  int epfd = conn->group->epoll_fd;
  if (epoll_ctl(epfd, EPOLL_CTL_MOD, fd, &ev) == 0) return;
  if (errno == ENOENT && epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) == 0) return;
  LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_pool: cannot watch connection %d for its next "
                  "command (errno %d); closing it",
                  fd, errno);
  /* Under the mutex, as in enqueue_events: the timer may be looking at
     this connection's deadline, and its socket is about to be closed. */
  mysql_mutex_lock(&conn->group->mutex);
  conn->deadline = 0;
  mysql_mutex_unlock(&conn->group->mutex);
  pool_connection_attach(conn);
  pool_connection_close(conn, true, 0);
  forget_connection(conn);
}

/* Sticky connections. When nothing waits in the group's queue, a worker
   that has just answered a command waits a little for the next command of
   the same connection (poll on its socket) instead of handing it back to
   epoll. At low concurrency the pool then costs what a thread per
   connection costs: one wake-up per command, no epoll round trip, no
   hand-off between threads. The wait counts as a server wait (the group may
   run another worker meanwhile), lasts at most kStickyWaitMs, and at most
   kMaxStickyPerGroup workers of a group do it: under load the queue is
   rarely empty and the pool works as a pool. */
constexpr int kStickyWaitMs = 5;
constexpr uint kMaxStickyPerGroup = 16;

bool wait_for_next_command(Pool_connection *conn) {
  Pool_group *g = conn->group;
  mysql_mutex_lock(&g->mutex);
  const bool sticky =
      g->queues_empty() && g->sticky_count < kMaxStickyPerGroup;
  if (sticky) {
    /* As thd_wait_begin, under the one lock this path takes. */
    g->sticky_count++;
    g->active_count--;
    g->waiting_count++;
    if (g->active_count == 0 && g->listener == nullptr)
      pool_wake_or_create_worker(g);
    on_running_less(g);
    check_counters(g, "sticky wait");
  }
  mysql_mutex_unlock(&g->mutex);
  if (!sticky) return false;
  pollfd ready{conn->fd, POLLIN, 0};
  const int rc = poll(&ready, 1, kStickyWaitMs);
  mysql_mutex_lock(&g->mutex);
  g->sticky_count--;
  g->active_count++;
  g->waiting_count--;
  check_counters(g, "sticky wait end");
  mysql_mutex_unlock(&g->mutex);
  if (rc != 1) return false;
  pool_stats.sticky_commands++;
  return true;
}

/* Strong sync deferred the statement status of the command just run
   (sql/strata_park.h): let go of the connection without watching its
   socket; pool_resume_parked queues it when the acknowledgement arrives.
   If that happened already (while do_command was still running), queue it
   now: this worker or another sends the status next. */
void park(Pool_connection *conn) {
  pool_connection_detach(conn);
  Pool_group *g = conn->group;
  pool_stats.parks++;
  mysql_mutex_lock(&g->mutex);
  if (conn->park == Pool_connection::kResumedEarly) {
    conn->park = Pool_connection::kNotParked;
    conn->resume = true;
    queue(g, conn, true);
  } else {
    conn->park = Pool_connection::kParked;
    g->parked_count++;
    pool_stats.parked++;
    check_counters(g, "park");
  }
  mysql_mutex_unlock(&g->mutex);
}

/* Test only (thread_pool_test_take_delay_ms): a worker slow to serve what
   it took. */
void delay_after_taking(Pool_connection *conn) {
  if (conn->thd == nullptr || thd_get_net_wait_timeout(conn->thd) > 1) return;
  std::this_thread::sleep_for(
      std::chrono::milliseconds(pool_test_take_delay_ms));
}

void handle(Pool_connection *conn) {
  if (pool_test_take_delay_ms > 0) delay_after_taking(conn);
  conn->deadline = 0;
  if (conn->thd == nullptr) {
    if (!pool_connection_login(conn)) {
      forget_connection(conn);
      return;
    }
    arm(conn);
    return;
  }
  pool_connection_attach(conn);
  bool serve = true;
  if (conn->resume) {
    /* Back from parking: answer the statement that parked it, then carry
       on as after any command. */
    conn->resume = false;
    strata_park_resume(conn->thd);
    if (!thd_connection_alive(conn->thd)) {
      pool_connection_close(conn, true, 0);
      forget_connection(conn);
      return;
    }
    serve = thd_connection_has_data(conn->thd);
  } else if (conn->timed_out) {
    pool_stats.wait_timeouts++;
    pool_connection_close(conn, true, ER_CLIENT_INTERACTION_TIMEOUT);
    forget_connection(conn);
    return;
  }
  for (;;) {
    if (serve) {
      const Served served = pool_connection_serve(conn);
      if (served == Served::kClosed) {
        pool_connection_close(conn, true, 0);
        forget_connection(conn);
        return;
      }
      if (served == Served::kParked) {
        park(conn);
        return;
      }
    }
    serve = true;
    if (!wait_for_next_command(conn)) break;
  }
  pool_connection_detach(conn);
  arm(conn);
}

/* Makes the listener's epoll_wait return so that it looks at the queues
   (the wake event itself carries no connection). */
void wake_listener(Pool_group *g) {
  if (g->listener_parked) {
    unpark_listener(g);
    return;
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t rc = write(g->wake_fd, &one, sizeof one);
}

void *worker_main(void *arg);

/* Queued work while the group runs fewer commands than it may: put an idle
   worker (or a new one, while the group is small) on it now rather than
   leave it to the running ones. Keeps the CPUs busy when sessions are few
   and the machine is shared with their clients. Needs group->mutex. */
void add_helper_if_useful(Pool_group *g) {
  if (g->queues_empty() || g->active_count >= 1 + pool_oversubscribe) return;
  if (!g->idle_workers.empty() || g->thread_count <= 1 + pool_oversubscribe)
    pool_wake_or_create_worker(g);
}

bool create_worker(Pool_group *g) {
  if (total_threads.load() >= pool_max_threads) return false;
  auto *w = new (std::nothrow) Pool_worker;
  if (w == nullptr) return false;
  w->group = g;
  mysql_cond_init(key_worker_cond, &w->cond);
  g->thread_count++;
  g->active_count++;
  total_threads++;
  /* Joinable and registered: pool_stop joins it (pool_threads.h). */
  const int rc = pool_thread_start(key_pool_worker_thread, worker_main, w);
  if (rc != 0) {
    g->thread_count--;
    g->active_count--;
    total_threads--;
    mysql_cond_destroy(&w->cond);
    delete w;
    check_counters(g, "worker start failed");
    /* Refused at shutdown (pool_threads_join_all has begun): expected. */
    if (!shutting_down)
      LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_pool: cannot start a worker (errno %d)", rc);
    return false;
  }
  pool_stats.threads++;
  pool_stats.threads_created++;
  inc_thread_created();
  check_counters(g, "worker started");
  return true;
}

/* Puts the connections of a batch of epoll events in the group's queues.
   Needs group->mutex. */
void enqueue_events(Pool_group *g, const epoll_event *events, int n) {
  g->io_events_since_check += n;
  for (int i = 0; i < n; i++) {
    auto *conn = static_cast<Pool_connection *>(events[i].data.ptr);
    if (conn == nullptr) continue;  // the shutdown or wake event
    /* Out of the epoll set: from here a worker may serve it and close its
       socket. Clearing the deadline under the group mutex is what keeps
       the timer, which shuts down only connections with a deadline and
       only under this mutex, off a descriptor that may be closed and
       reused (pool_timer.cc, expire_idle_connections). */
    conn->deadline = 0;
    enqueue(g, conn);
  }
}

/* As the group's listener: waits in epoll until a connection has a command.
   Called without the group mutex; returns with it held, with the
   connection this worker runs itself, or nullptr at shutdown.
   The listener gives up its role to run a command whenever the group may
   run one more: under load nobody sits in epoll_wait (to be woken for
   every few events while the others work); the workers take the events
   in batches with a non-blocking look when their queue runs dry (see
   next_connection), and one of them listens again when there is nothing
   left to do. */
Pool_connection *listen(Pool_worker *w) {
  Pool_group *g = w->group;
  epoll_event events[kMaxEventsPerWait];
  for (;;) {
    int n = epoll_wait(g->epoll_fd, events, kMaxEventsPerWait, -1);
    mysql_mutex_lock(&g->mutex);
    if (shutting_down) return nullptr;
    if (n <= 0) {
      mysql_mutex_unlock(&g->mutex);
      continue;
    }
    enqueue_events(g, events, n);
    if (g->queues_empty()) {
      mysql_mutex_unlock(&g->mutex);
      continue;
    }
    /* The listener is not counted running; it would be if it ran one. */
    if (g->active_count < 1 + pool_oversubscribe || g->stalled)
      return dequeue(g);
    /* The group is full: the running workers take the queue when they
       are done, unless every worker is blocked or asleep. */
    if (g->active_count == 0) pool_wake_or_create_worker(g);
    /* While it stays full, waking for every request would only queue it
       and preempt a running worker (measured: about once per query with
       2,048 clients on one CPU). The running workers look at the epoll
       set themselves when their queue runs dry (next_connection), so stop
       listening until one of them stops running (on_running_less), the
       group is found stalled, or the timer sees no event taken for a
       while (check_listener in pool_timer.cc). */
    g->listener_parked = true;
    pool_stats.listener_parks++;
    w->woken = false;
    while (!w->woken && !shutting_down && !g->stalled &&
           g->active_count >= 1 + pool_oversubscribe)
      mysql_cond_wait(&w->cond, &g->mutex);
    g->listener_parked = false;
    if (shutting_down) return nullptr;
    /* Woken with work queued (a resumed strong-sync session, or at
       thread_pool_max_threads): as after an epoll event. */
    if (!g->queues_empty() &&
        (g->active_count < 1 + pool_oversubscribe || g->stalled))
      return dequeue(g);
    mysql_mutex_unlock(&g->mutex);
  }
}

/* The next connection for this worker, or nullptr when it should exit. */
Pool_connection *next_connection(Pool_worker *w) {
  Pool_group *g = w->group;
  Pool_connection *conn = nullptr;
  bool took_new_events = false;
  mysql_mutex_lock(&g->mutex);
  for (;;) {
    if (shutting_down) break;
    /* A parked listener leaves new requests in the epoll set: queue them
       before choosing, so that the next statement of an open transaction
       (high priority) goes ahead of older work, as when the listener
       queued everything on arrival. */
    if (g->listener_parked && !took_new_events && !too_many_active(g)) {
      took_new_events = true;
      epoll_event events[kMaxEventsPerWait];
      mysql_mutex_unlock(&g->mutex);
      const int n = epoll_wait(g->epoll_fd, events, kMaxEventsPerWait, 0);
      mysql_mutex_lock(&g->mutex);
      if (n > 0) enqueue_events(g, events, n);
    }
    if (!too_many_active(g)) {
      conn = dequeue(g);
      if (conn != nullptr) break;
    }
    /* The queues are empty: take what the epoll set holds, in one batch,
       without waiting (and without the group lock). */
    if (!too_many_active(g)) {
      epoll_event events[kMaxEventsPerWait];
      mysql_mutex_unlock(&g->mutex);
      const int n = epoll_wait(g->epoll_fd, events, kMaxEventsPerWait, 0);
      mysql_mutex_lock(&g->mutex);
      if (n > 0) {
        enqueue_events(g, events, n);
        continue;
      }
    }
    if (g->listener == nullptr) {
      g->listener = w;
      g->active_count--;
      check_counters(g, "listen");
      mysql_mutex_unlock(&g->mutex);
      conn = listen(w);
      g->listener = nullptr;
      g->active_count++;
      check_counters(g, "listen end");
      if (conn != nullptr) break;
      continue;
    }
    g->active_count--;
    on_running_less(g);
    w->woken = false;
    g->idle_workers.push_back(w);
    g->idle_count++;
    pool_stats.idle_threads++;
    check_counters(g, "idle");
    /* The deadline is recomputed on every wake-up, so that a new
       thread_pool_idle_timeout applies to workers already asleep
       (pool_recheck_idle_workers). */
    const ulonglong idle_since = pool_now_us();
    while (!w->woken && !shutting_down) {
      const ulonglong deadline =
          idle_since + ulonglong{pool_idle_timeout_s} * 1000000ULL;
      const ulonglong now = pool_now_us();
      if (now >= deadline) break;
      timespec until;
      set_timespec_nsec(&until, (deadline - now) * 1000ULL);
      mysql_cond_timedwait(&w->cond, &g->mutex, &until);
    }
    pool_stats.idle_threads--;
    g->idle_count--;
    g->active_count++;
    if (!w->woken) {
      /* Not woken: nobody took it off the list of idle workers. */
      auto it = std::find(g->idle_workers.begin(), g->idle_workers.end(), w);
      if (it != g->idle_workers.end()) g->idle_workers.erase(it);
    }
    check_counters(g, "idle end");
    if (!w->woken) {
      /* Idle for thread_pool_idle_timeout: leave, but keep one worker per
         group so that it always has a listener. */
      if (!shutting_down && g->thread_count > 1) break;
    }
  }
  if (conn != nullptr) add_helper_if_useful(g);
  mysql_mutex_unlock(&g->mutex);
  return conn;
}

/* Test only (thread_pool_test_exit_delay_ms): stay in the library's code
   a while after counting out, then say so; the note must reach the error
   log before the server's shutdown completes. */
void linger_after_counting_out() {
  std::this_thread::sleep_for(
      std::chrono::milliseconds(pool_test_exit_delay_ms));
  LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_pool: a worker lingered %u ms in the plugin after "
                  "counting itself out (thread_pool_test_exit_delay_ms)",
                  pool_test_exit_delay_ms);
}

void *worker_main(void *arg) {
  auto *w = static_cast<Pool_worker *>(arg);
  Pool_group *g = w->group;
  const bool thread_ok = !my_thread_init();
  current_worker = w;
  while (thread_ok) {
    Pool_connection *conn = next_connection(w);
    if (conn == nullptr) break;
    handle(conn);
  }
  current_worker = nullptr;
  mysql_mutex_lock(&g->mutex);
  g->thread_count--;
  g->active_count--;
  on_running_less(g);
  total_threads--;
  pool_stats.threads--;
  check_counters(g, "worker exit");
  mysql_mutex_unlock(&g->mutex);
  if (pool_test_exit_delay_ms > 0) linger_after_counting_out();
  mysql_cond_destroy(&w->cond);
  delete w;
  if (thread_ok) my_thread_end();
  return nullptr;
}

}  // namespace

void pool_unpark_listener(Pool_group *g) { unpark_listener(g); }

std::vector<Pool_group> &pool_groups() { return groups; }
bool pool_shutting_down() { return shutting_down; }

ulonglong pool_now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/* Microseconds a group waits between two thread starts, by its size. */
static ulonglong creation_interval_us(const Pool_group *g) {
  const uint base = 1 + pool_oversubscribe;
  if (g->thread_count < base) return 0;
  if (g->thread_count < 2 * base) return 10000;
  if (g->thread_count < 4 * base) return 20000;
  return 50000;
}

void pool_wake_or_create_worker(Pool_group *g, bool from_timer) {
  if (!g->idle_workers.empty()) {
    Pool_worker *w = g->idle_workers.back();
    g->idle_workers.pop_back();
    w->woken = true;
    mysql_cond_signal(&w->cond);
    return;
  }
  /* Queued commands are often those of transactions holding the locks the
     blocked workers wait for: never make them wait for a thread start. */
  const ulonglong now = pool_now_us();
  if (!from_timer && g->queues_empty() &&
      now - g->last_create_us < creation_interval_us(g))
    return;
  if (create_worker(g)) {
    g->last_create_us = now;
    return;
  }
  /* At thread_pool_max_threads the group's listener may be the one worker
     free to take queued work, and it sleeps in epoll_wait, which queueing
     does not wake: a worker that took two ready connections in one
     non-blocking look, ran one and blocked in it would leave the other
     queued behind an idle listener until some socket event. */
  if (g->listener != nullptr && !g->queues_empty()) wake_listener(g);
}

void pool_recheck_idle_workers() {
  for (auto &g : groups) {
    mysql_mutex_lock(&g.mutex);
    for (Pool_worker *w : g.idle_workers) mysql_cond_signal(&w->cond);
    mysql_mutex_unlock(&g.mutex);
  }
}

uint pool_queued_connections() {
  uint n = 0;
  for (auto &g : groups) {
    mysql_mutex_lock(&g.mutex);
    n += g.high_queue.size() + g.low_queue.size();
    mysql_mutex_unlock(&g.mutex);
  }
  return n;
}

uint pool_active_threads() {
  uint n = 0;
  for (auto &g : groups) {
    mysql_mutex_lock(&g.mutex);
    n += g.active_count;
    mysql_mutex_unlock(&g.mutex);
  }
  return n;
}

std::vector<Pool_group_state> pool_group_states() {
  std::vector<Pool_group_state> states;
  states.reserve(groups.size());
  for (auto &g : groups) {
    Pool_group_state st;
    mysql_mutex_lock(&g.mutex);
    st.index = g.index;
    st.connections = g.connection_count;
    st.threads = g.thread_count;
    st.running = g.active_count;
    st.waiting = g.waiting_count;
    st.sticky = g.sticky_count;
    st.idle = g.idle_count;
    st.queued_high = static_cast<uint>(g.high_queue.size());
    st.queued_low = static_cast<uint>(g.low_queue.size());
    st.listener = g.listener != nullptr;
    st.listener_parked = g.listener_parked;
    st.stalled = g.stalled;
    mysql_mutex_unlock(&g.mutex);
    states.push_back(st);
  }
  return states;
}

std::vector<Pool_queued_state> pool_queued_states() {
  std::vector<Pool_queued_state> states;
  for (auto &g : groups) {
    mysql_mutex_lock(&g.mutex);
    const ulonglong now = pool_now_us();
    uint position = 0;
    for (const auto *q : {&g.high_queue, &g.low_queue}) {
      for (const Pool_connection *conn : *q) {
        Pool_queued_state st;
        st.group = g.index;
        st.position = position++;
        st.high = q == &g.high_queue;
        /* Queued, so no worker runs it and its THD stays put until the
           mutex is released. */
        st.authenticated = conn->thd != nullptr;
        if (st.authenticated) st.connection_id = thd_get_thread_id(conn->thd);
        st.queued_for_us = now > conn->queued_us ? now - conn->queued_us : 0;
        states.push_back(st);
      }
    }
    mysql_mutex_unlock(&g.mutex);
  }
  return states;
}

void pool_describe_groups(char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (const Pool_group_state &g : pool_group_states()) {
    const int n = snprintf(
        buf + used, size - used,
        "%sgroup %u: threads %u running %u waiting %u (sticky %u) idle %u "
        "queued %u connections %u listener %s%s",
        used ? "; " : "", g.index, g.threads, g.running, g.waiting, g.sticky,
        g.idle, g.queued_high + g.queued_low, g.connections,
        g.listener ? "yes" : "no", g.stalled ? " stalled" : "");
    if (n < 0 || static_cast<size_t>(n) >= size - used) break;
    used += n;
  }
}

bool pool_add_connection(Channel_info *channel_info) {
  if (channel_info->is_admin_connection())
    return pool_admin_add_connection(channel_info);
  auto *conn = new (std::nothrow) Pool_connection(channel_info);
  if (conn == nullptr) {
    channel_info->send_error_and_close_channel(ER_OUT_OF_RESOURCES, 0, false);
    dec_connection_count();
    return true;
  }
  conn->tickets = pool_high_prio_tickets;
  Pool_group *g = &groups[next_group++ % groups.size()];
  mysql_mutex_lock(&g->mutex);
  link_connection(g, conn);
  /* A worker authenticates it like any queued work. */
  queue(g, conn, false);
  if (g->active_count == 0) pool_wake_or_create_worker(g);
  mysql_mutex_unlock(&g->mutex);
  return false;
}

void pool_resume_parked(void *arg) {
  auto *conn = static_cast<Pool_connection *>(arg);
  Pool_group *g = conn->group;
  mysql_mutex_lock(&g->mutex);
  if (conn->park == Pool_connection::kParking) {
    /* Its worker has not let go of it yet: park() queues it. */
    conn->park = Pool_connection::kResumedEarly;
    mysql_mutex_unlock(&g->mutex);
    return;
  }
  conn->park = Pool_connection::kNotParked;
  g->parked_count--;
  pool_stats.parked--;
  check_counters(g, "resume");
  conn->resume = true;
  queue(g, conn, true);
  /* A worker for it: an idle one while the group may run one more, else
     the listener (no socket event would wake it), else the running ones
     take it when done. */
  if (!g->idle_workers.empty() && g->active_count < 1 + pool_oversubscribe) {
    pool_wake_or_create_worker(g);
  } else if (g->listener != nullptr) {
    wake_listener(g);
  } else if (g->active_count == 0) {
    pool_wake_or_create_worker(g);
  }
  mysql_mutex_unlock(&g->mutex);
}

void pool_thd_wait_begin(THD *, int) {
  Pool_worker *w = current_worker;
  if (w == nullptr || w->in_wait) return;
  w->in_wait = true;
  Pool_group *g = w->group;
  mysql_mutex_lock(&g->mutex);
  g->active_count--;
  g->waiting_count++;
  on_running_less(g);
  /* Keep the group running as many commands as it may: the queued ones
     may be what this wait waits for (the next statement of the transaction
     holding the row lock, UNLOCK TABLES of the FTWRL session). */
  if (!g->queues_empty() && g->active_count < 1 + pool_oversubscribe)
    pool_wake_or_create_worker(g);
  else if (g->active_count == 0 && g->listener == nullptr)
    pool_wake_or_create_worker(g);
  check_counters(g, "server wait");
  mysql_mutex_unlock(&g->mutex);
}

void pool_thd_wait_end(THD *) {
  Pool_worker *w = current_worker;
  if (w == nullptr || !w->in_wait) return;
  w->in_wait = false;
  Pool_group *g = w->group;
  mysql_mutex_lock(&g->mutex);
  g->active_count++;
  g->waiting_count--;
  check_counters(g, "server wait end");
  mysql_mutex_unlock(&g->mutex);
}

/* KILL of a connection: an idle one sits in epoll with no thread to see
   the flag, so wake it by shutting its socket's read side; the worker that
   picks it up finds the session killed and closes it. Called with the
   target's LOCK_thd_data held, which also keeps the connection alive
   (pool_connection_close clears the scheduler data under that lock). */
void pool_post_kill_notification(THD *thd) {
  auto *conn = static_cast<Pool_connection *>(thd_get_scheduler_data(thd));
  if (conn == nullptr || thd == current_thd || conn->fd < 0) return;
  shutdown(conn->fd, SHUT_RD);
}

bool pool_start() {
#ifdef HAVE_PSI_INTERFACE
  mysql_mutex_register("strata_pool", mutexes, 1);
  mysql_cond_register("strata_pool", conds, 1);
#endif
  shutting_down = false;
  pool_threads_open();
  groups = std::vector<Pool_group>(pool_size);
  for (uint i = 0; i < pool_size; i++) {
    Pool_group *g = &groups[i];
    g->index = i;
    mysql_mutex_init(key_group_mutex, &g->mutex, MY_MUTEX_INIT_FAST);
    g->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    g->shutdown_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    g->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = nullptr;
    epoll_event wake{};
    wake.events = EPOLLIN | EPOLLET;
    wake.data.ptr = nullptr;  // like the shutdown event: no connection
    if (g->epoll_fd < 0 || g->shutdown_fd < 0 || g->wake_fd < 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->shutdown_fd, &ev) != 0 ||
        epoll_ctl(g->epoll_fd, EPOLL_CTL_ADD, g->wake_fd, &wake) != 0) {
      LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_pool: cannot create the epoll set of thread "
                      "group %u (errno %d)",
                      i, errno);
      return true;
    }
  }
  for (auto &g : groups) {
    mysql_mutex_lock(&g.mutex);
    const bool ok = create_worker(&g);
    mysql_mutex_unlock(&g.mutex);
    if (!ok) return true;
  }
  return pool_timer_start();
}

void pool_stop() {
  shutting_down = true;
  pool_timer_stop();
  for (auto &g : groups) {
    if (g.shutdown_fd >= 0) {
      uint64_t one = 1;
      [[maybe_unused]] ssize_t rc = write(g.shutdown_fd, &one, sizeof one);
    }
    mysql_mutex_lock(&g.mutex);
    for (Pool_worker *w : g.idle_workers) mysql_cond_signal(&w->cond);
    unpark_listener(&g);
    mysql_mutex_unlock(&g.mutex);
  }
  /* Connections are closed before the server unloads its plugins, so the
     workers only have to notice the flag, and the admin threads have ended
     their sessions. Joining them, not counting them out, is what makes it
     safe to unload the library once this returns: a thread that counted
     itself out still has instructions to run here (pool_threads.h). */
  pool_threads_join_all();
  assert(total_threads.load() == 0);
  for (auto &g : groups) {
    while (g.connections != nullptr) {
      Pool_connection *conn = g.connections;
      unlink_connection(&g, conn);
      delete conn;
    }
    if (g.epoll_fd >= 0) close(g.epoll_fd);
    if (g.shutdown_fd >= 0) close(g.shutdown_fd);
    if (g.wake_fd >= 0) close(g.wake_fd);
    mysql_mutex_destroy(&g.mutex);
  }
  groups.clear();
}
