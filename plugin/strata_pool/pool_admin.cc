/* Strata thread pool: connections on the admin port (admin_address /
   admin_port) bypass the pool and get a thread of their own, as with
   one-thread-per-connection. However many workers are blocked, an
   administrator can connect, look and KILL. The threads are registered
   (pool_threads.h): pool_stop joins them before the library is unloaded. */

#include <mysql/thread_pool_priv.h>
#include <mysqld_error.h>

#include "my_sys.h"
#include "my_thread.h"
#include "plugin/strata_pool/pool.h"
#include "plugin/strata_pool/pool_threads.h"
#include "sql/sql_class.h"
#include "sql/sql_connect.h"
#include "sql/sql_thd_internal_api.h"

namespace {

void serve_admin_session(Channel_info *channel_info) {
  THD *thd = create_thd(channel_info);
  destroy_channel_info(channel_info);
  if (thd == nullptr) {
    increment_aborted_connects();
    dec_connection_count();
    return;
  }
  char stack_start;
  thd_init(thd, &stack_start);
#ifdef HAVE_PSI_THREAD_INTERFACE
  PSI_thread *psi = PSI_THREAD_CALL(get_thread)();
  PSI_THREAD_CALL(set_thread_THD)(psi, thd);
  PSI_THREAD_CALL(set_thread_id)(psi, thd->thread_id());
  thd->set_psi(psi);
#endif
  if (thd_prepare_connection(thd)) {
    increment_aborted_connects();
  } else {
    while (thd_connection_alive(thd)) {
      if (do_command(thd)) break;
    }
    end_connection(thd);
  }
  close_connection(thd, 0, false, false);
#ifdef HAVE_PSI_THREAD_INTERFACE
  PSI_THREAD_CALL(set_thread_THD)(psi, nullptr);
#endif
  destroy_thd(thd, false);
  dec_connection_count();
}

void *admin_main(void *arg) {
  auto *channel_info = static_cast<Channel_info *>(arg);
  if (my_thread_init()) {
    channel_info->send_error_and_close_channel(ER_OUT_OF_RESOURCES, 0, false);
    destroy_channel_info(channel_info);
    increment_aborted_connects();
    dec_connection_count();
  } else {
    serve_admin_session(channel_info);
    my_thread_end();
  }
  pool_stats.admin_threads--;
  return nullptr;
}

}  // namespace

bool pool_admin_add_connection(Channel_info *channel_info) {
  pool_stats.admin_threads++;
  /* Joinable and registered, like the workers: pool_stop joins it. */
  const int rc =
      pool_thread_start(key_pool_admin_thread, admin_main, channel_info);
  if (rc == 0) return false;
  pool_stats.admin_threads--;
  channel_info->send_error_and_close_channel(ER_CANT_CREATE_THREAD, rc, true);
  dec_connection_count();
  return true;
}
