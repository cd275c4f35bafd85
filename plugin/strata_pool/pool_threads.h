/* Strata thread pool: the threads the plugin starts, and how it knows they
   are gone.

   The server unloads strata_pool.so as soon as the plugin's deinit returns
   (at shutdown). A thread that still executes an instruction of the
   library then runs in unmapped memory. Counting threads out is not enough
   (a thread that has just counted itself out still returns through the
   library's code, and a starved one may do so much later), and no sleep is
   long enough on a loaded machine. So every thread the plugin starts other
   than the timer (which pool_timer.cc joins itself) goes through here: it
   is created joinable and registered, and pool_threads_join_all() returns
   only once each of them has terminated, which is after its last
   instruction in the library.

   A thread that ends while the pool runs (a worker idle past
   thread_pool_idle_timeout, an admin session that closes) moves itself to
   the ended list as the last thing it does; pool_threads_reap() joins
   those, so handles of ended threads do not pile up.

   Thread-safety: every function may be called from any thread; the
   registry has its own mutex, taken after a group's mutex when both are
   held (create_worker), never the other way round. */

#ifndef STRATA_POOL_POOL_THREADS_H
#define STRATA_POOL_POOL_THREADS_H

#include "my_inttypes.h"
#include "mysql/psi/mysql_thread.h"

/* Allows starts again (pool_start, after a previous join_all). */
void pool_threads_open();

/* Starts body(arg) on a new registered thread with the server's thread
   stack size. Returns 0, or the error of the thread creation; after
   pool_threads_join_all() has begun it refuses with EAGAIN (shutdown). */
int pool_thread_start(PSI_thread_key key, void *(*body)(void *), void *arg);

/* Joins the threads that have ended. Cheap when none has. */
void pool_threads_reap();

/* Refuses new starts, then joins every registered thread, whether it has
   ended or not: the caller has made them all leave (pool_stop). When it
   returns, no thread the plugin started is left in the library's code. */
void pool_threads_join_all();

#endif  // STRATA_POOL_POOL_THREADS_H
