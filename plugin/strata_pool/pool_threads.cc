/* Strata thread pool: registered, joinable plugin threads (see
   pool_threads.h for why). */

#include "plugin/strata_pool/pool_threads.h"

#include <errno.h>

#include <list>
#include <mutex>
#include <vector>

#include <mysql/thread_pool_priv.h>  // get_connection_attrib

#include "my_thread.h"

namespace {

struct Pool_thread {
  my_thread_handle handle;
  void *(*body)(void *) = nullptr;
  void *arg = nullptr;
  std::list<Pool_thread *>::iterator self;  // in `running`
};

/* Guards everything below. A std::mutex, not an instrumented one: it must
   outlive every registered thread, including the plugin's PSI keys. */
std::mutex registry_mutex;
std::list<Pool_thread *> running;
std::vector<Pool_thread *> ended;
bool closed = false;

void *thread_main(void *p) {
  auto *t = static_cast<Pool_thread *>(p);
  t->body(t->arg);
  /* The last thing this thread does in the library: from here only the
     unlock and the return are left, and whoever joins it waits for those
     too. */
  std::lock_guard<std::mutex> lock(registry_mutex);
  running.erase(t->self);
  ended.push_back(t);
  return nullptr;
}

void join_and_free(const std::vector<Pool_thread *> &threads) {
  for (Pool_thread *t : threads) {
    my_thread_join(&t->handle, nullptr);
    delete t;
  }
}

}  // namespace

void pool_threads_open() {
  std::lock_guard<std::mutex> lock(registry_mutex);
  closed = false;
}

int pool_thread_start(PSI_thread_key key, void *(*body)(void *), void *arg) {
  auto *t = new (std::nothrow) Pool_thread;
  if (t == nullptr) return ENOMEM;
  t->body = body;
  t->arg = arg;
  /* The server's connection threads' stack size (thread_stack), joinable
     where theirs are detached. */
  size_t stack_size = 0;
  my_thread_attr_getstacksize(get_connection_attrib(), &stack_size);
  my_thread_attr_t attr;
  my_thread_attr_init(&attr);
  my_thread_attr_setdetachstate(&attr, MY_THREAD_CREATE_JOINABLE);
  if (stack_size > 0) my_thread_attr_setstacksize(&attr, stack_size);
  int rc;
  {
    /* Registered before it runs, so that its first instruction may already
       be its last one (thread_main's erase finds `self`). */
    std::lock_guard<std::mutex> lock(registry_mutex);
    if (closed) {
      rc = EAGAIN;
    } else {
      t->self = running.insert(running.end(), t);
      rc = mysql_thread_create(key, &t->handle, &attr, thread_main, t);
      if (rc != 0) running.erase(t->self);
    }
  }
  my_thread_attr_destroy(&attr);
  if (rc != 0) delete t;
  return rc;
}

void pool_threads_reap() {
  std::vector<Pool_thread *> done;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    /* Once join_all has begun, it alone joins (a thread joined twice is
       undefined behaviour). */
    if (closed || ended.empty()) return;
    done.swap(ended);
  }
  join_and_free(done);
}

void pool_threads_join_all() {
  std::vector<Pool_thread *> all;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    closed = true;
    all.swap(ended);
    all.insert(all.end(), running.begin(), running.end());
  }
  /* A running thread moves itself to `ended` when it finishes, which does
     not matter here: its handle was taken, and it is joined from `all`.
     Only its own erase touches `running`, and it is still listed there. */
  join_and_free(all);
  std::lock_guard<std::mutex> lock(registry_mutex);
  /* The threads joined above moved themselves to `ended` on their way
     out: they are freed already. */
  ended.clear();
}
