/* Strata thread pool: the plugin, its settings and status variables.

   The library strata_pool.so declares a daemon plugin named "thread_pool"
   so that its settings carry the names users of Percona Server and MariaDB
   have in their configs (thread_pool_size, thread_pool_oversubscribe,
   thread_pool_max_threads, thread_pool_stall_limit in milliseconds,
   thread_pool_idle_timeout, thread_pool_high_prio_mode,
   thread_pool_high_prio_tickets). Upstream's thread_pool.so declares the
   same plugin name, so the server refuses to load both. Like upstream's,
   it loads at startup only (plugin-load-add), never by INSTALL PLUGIN. */

#include <unistd.h>

#include <mysql/plugin.h>
#include "typelib.h"
#include <mysql/service_thread_scheduler.h>
#include <mysql/thread_pool_priv.h>

#include <mysql/components/services/log_builtins.h>
#include <mysqld_error.h>

#include "plugin/strata_pool/pool.h"

uint pool_size = 2;
uint pool_oversubscribe = 3;
uint pool_max_threads = 100000;
uint pool_stall_limit_ms = 500;
uint pool_idle_timeout_s = 60;
ulong pool_high_prio_mode = 0;
uint pool_high_prio_tickets = UINT_MAX;
uint pool_test_exit_delay_ms = 0;
uint pool_test_take_delay_ms = 0;
Pool_stats pool_stats;

PSI_thread_key key_pool_worker_thread;
PSI_thread_key key_pool_timer_thread;
PSI_thread_key key_pool_admin_thread;
PSI_thread_key key_pool_connection;

/* The logging services LogPluginErrMsg uses in every file of the plugin. */
SERVICE_TYPE(registry) *reg_srv = nullptr;
SERVICE_TYPE(log_builtins) *log_bi = nullptr;
SERVICE_TYPE(log_builtins_string) *log_bs = nullptr;

namespace {

bool pool_running = false;

#ifdef HAVE_PSI_INTERFACE
PSI_thread_info threads[] = {
    {&key_pool_worker_thread, "worker", "tp_worker", 0, 0, PSI_DOCUMENT_ME},
    {&key_pool_timer_thread, "timer", "tp_timer", PSI_FLAG_SINGLETON, 0,
     PSI_DOCUMENT_ME},
    {&key_pool_admin_thread, "admin_connection", "tp_admin",
     PSI_FLAG_USER, 0, PSI_DOCUMENT_ME},
    {&key_pool_connection, "one_connection", "connection", PSI_FLAG_USER, 0,
     PSI_DOCUMENT_ME}};
#endif

MYSQL_SYSVAR_UINT(size, pool_size, PLUGIN_VAR_READONLY | PLUGIN_VAR_RQCMDARG,
                  "Number of thread groups; each aims at one running worker. "
                  "Default: the number of CPUs.",
                  nullptr, nullptr, 2, 1, 1024, 0);

MYSQL_SYSVAR_UINT(oversubscribe, pool_oversubscribe, PLUGIN_VAR_RQCMDARG,
                  "Running workers a thread group admits beyond its first "
                  "before queued commands wait (unless the group is stalled)",
                  nullptr, nullptr, 3, 1, 1000, 0);

MYSQL_SYSVAR_UINT(max_threads, pool_max_threads, PLUGIN_VAR_RQCMDARG,
                  "Most workers the pool runs, in all groups together",
                  nullptr, nullptr, 100000, 1, 100000, 0);

MYSQL_SYSVAR_UINT(stall_limit, pool_stall_limit_ms, PLUGIN_VAR_RQCMDARG,
                  "Milliseconds after which a thread group whose queue did not "
                  "move is stalled and gets one more worker (Percona and "
                  "MariaDB unit; upstream's plugin counts 10 ms units)",
                  nullptr, nullptr, 500, 10, UINT_MAX, 0);

void update_idle_timeout(MYSQL_THD, SYS_VAR *, void *var_ptr,
                         const void *save) {
  *static_cast<uint *>(var_ptr) = *static_cast<const uint *>(save);
  if (pool_running) pool_recheck_idle_workers();
}

MYSQL_SYSVAR_UINT(idle_timeout, pool_idle_timeout_s, PLUGIN_VAR_RQCMDARG,
                  "Seconds an idle worker waits for work before it exits",
                  nullptr, update_idle_timeout, 60, 1, UINT_MAX, 0);

const char *high_prio_mode_names[] = {"transactions", "statements", "none",
                                      nullptr};
TYPELIB high_prio_mode_typelib = {array_elements(high_prio_mode_names) - 1,
                                  "", high_prio_mode_names, nullptr};

MYSQL_SYSVAR_ENUM(high_prio_mode, pool_high_prio_mode, PLUGIN_VAR_RQCMDARG,
                  "Which commands go to the high priority queue: "
                  "transactions (statements of an open transaction), "
                  "statements (all), none",
                  nullptr, nullptr, 0, &high_prio_mode_typelib);

MYSQL_SYSVAR_UINT(high_prio_tickets, pool_high_prio_tickets,
                  PLUGIN_VAR_RQCMDARG,
                  "How many commands in a row one transaction may send "
                  "through the high priority queue",
                  nullptr, nullptr, UINT_MAX, 0, UINT_MAX, 0);

/* A test of shutdown (suite strata_pool, stop_joins_workers): each worker,
   once it has counted itself out, waits this long and logs a note before it
   returns, as a thread starved of CPU might be late leaving the library.
   Stop must wait for it however long it takes. Read-only: a startup
   option, never changed on a running server. */
MYSQL_SYSVAR_UINT(test_exit_delay_ms, pool_test_exit_delay_ms,
                  PLUGIN_VAR_READONLY | PLUGIN_VAR_RQCMDARG,
                  "Test only: milliseconds a worker lingers in the plugin's "
                  "code after it has counted itself out, then logs a note "
                  "(0, the default: no delay)",
                  nullptr, nullptr, 0, 0, 10000, 0);

/* A test of the wait_timeout scan (suite strata_pool, timer_spares_taken):
   a worker that has taken a connection with a command ready waits this
   long before serving it, as a worker preempted right after taking it
   might; the timer must leave that connection alone although its
   deadline passes meanwhile. Only sessions with wait_timeout = 1 (the
   test's), so that the test's other sessions run at full speed.
   Read-only: a startup option. */
MYSQL_SYSVAR_UINT(test_take_delay_ms, pool_test_take_delay_ms,
                  PLUGIN_VAR_READONLY | PLUGIN_VAR_RQCMDARG,
                  "Test only: milliseconds a worker waits before serving a "
                  "connection it took, for sessions with wait_timeout = 1 "
                  "(0, the default: no delay)",
                  nullptr, nullptr, 0, 0, 10000, 0);

/* The default size is the number of CPUs, known only at run time: set it
   when the library is loaded, before the server reads the settings. */
struct Size_default_from_cpus {
  Size_default_from_cpus() {
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    if (cpus > 0) mysql_sysvar_size.def_val = static_cast<uint>(cpus);
  }
} size_default_from_cpus;

SYS_VAR *system_variables[] = {
    MYSQL_SYSVAR(size),           MYSQL_SYSVAR(oversubscribe),
    MYSQL_SYSVAR(max_threads),    MYSQL_SYSVAR(stall_limit),
    MYSQL_SYSVAR(idle_timeout),   MYSQL_SYSVAR(high_prio_mode),
    MYSQL_SYSVAR(high_prio_tickets), MYSQL_SYSVAR(test_exit_delay_ms),
    MYSQL_SYSVAR(test_take_delay_ms), nullptr};

int show_counter(SHOW_VAR *var, char *buff, ulonglong value) {
  var->type = SHOW_LONGLONG;
  var->value = buff;
  *reinterpret_cast<long long *>(buff) = static_cast<long long>(value);
  return 0;
}

#define POOL_COUNTER(fn, expr)                   \
  int fn(MYSQL_THD, SHOW_VAR *var, char *buff) { \
    return show_counter(var, buff, (expr));      \
  }
POOL_COUNTER(show_threads, pool_stats.threads.load())
POOL_COUNTER(show_idle_threads, pool_stats.idle_threads.load())
POOL_COUNTER(show_active_threads, pool_active_threads())
POOL_COUNTER(show_queued, pool_queued_connections())
POOL_COUNTER(show_stalls, pool_stats.stalls.load())
POOL_COUNTER(show_threads_created, pool_stats.threads_created.load())
POOL_COUNTER(show_admin_threads, pool_stats.admin_threads.load())
POOL_COUNTER(show_high_prio, pool_stats.high_prio_dequeues.load())
POOL_COUNTER(show_low_prio, pool_stats.low_prio_dequeues.load())
POOL_COUNTER(show_direct, pool_stats.direct_continues.load())
POOL_COUNTER(show_sticky, pool_stats.sticky_commands.load())
POOL_COUNTER(show_listener_parks, pool_stats.listener_parks.load())
POOL_COUNTER(show_wait_timeouts, pool_stats.wait_timeouts.load())
POOL_COUNTER(show_parked, pool_stats.parked.load())
POOL_COUNTER(show_parks, pool_stats.parks.load())
POOL_COUNTER(show_counter_violations, pool_stats.counter_violations.load())
#undef POOL_COUNTER

/* SHOW_FUNC gives a buffer of SHOW_VAR_FUNC_BUFF_SIZE bytes. */
int show_groups(MYSQL_THD, SHOW_VAR *var, char *buff) {
  var->type = SHOW_CHAR;
  var->value = buff;
  pool_describe_groups(buff, SHOW_VAR_FUNC_BUFF_SIZE);
  return 0;
}

#define POOL_STATUS(name, fn) \
  {name, reinterpret_cast<char *>(&fn), SHOW_FUNC, SHOW_SCOPE_GLOBAL}
SHOW_VAR status_variables[] = {
    POOL_STATUS("Threadpool_threads", show_threads),
    POOL_STATUS("Threadpool_idle_threads", show_idle_threads),
    POOL_STATUS("Threadpool_active_threads", show_active_threads),
    POOL_STATUS("Threadpool_queued_connections", show_queued),
    POOL_STATUS("Threadpool_stalls", show_stalls),
    POOL_STATUS("Threadpool_threads_created", show_threads_created),
    POOL_STATUS("Threadpool_admin_threads", show_admin_threads),
    POOL_STATUS("Threadpool_high_prio_dequeues", show_high_prio),
    POOL_STATUS("Threadpool_low_prio_dequeues", show_low_prio),
    POOL_STATUS("Threadpool_direct_continues", show_direct),
    POOL_STATUS("Threadpool_sticky_commands", show_sticky),
    POOL_STATUS("Threadpool_listener_parks", show_listener_parks),
    POOL_STATUS("Threadpool_wait_timeouts", show_wait_timeouts),
    POOL_STATUS("Threadpool_parked_connections", show_parked),
    POOL_STATUS("Threadpool_parks", show_parks),
    POOL_STATUS("Threadpool_counter_violations", show_counter_violations),
    POOL_STATUS("Threadpool_groups", show_groups),
    {nullptr, nullptr, SHOW_LONG, SHOW_SCOPE_GLOBAL}};
#undef POOL_STATUS

void end_pool() {
  if (!pool_running) return;
  pool_running = false;
  pool_stop();
}

Connection_handler_functions handler_functions = {
    0, pool_add_connection, end_pool};

THD_event_functions event_functions = {
    pool_thd_wait_begin, pool_thd_wait_end, pool_post_kill_notification};

int plugin_init(MYSQL_PLUGIN) {
  if (init_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs)) return 1;
#ifdef HAVE_PSI_INTERFACE
  mysql_thread_register("strata_pool", threads,
                        static_cast<int>(array_elements(threads)));
#endif
  handler_functions.max_threads = pool_max_threads;
  if (pool_start()) {
    pool_stop();
    deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
    return 1;
  }
  pool_running = true;
  if (my_connection_handler_set(&handler_functions, &event_functions)) {
    end_pool();
    deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
    return 1;
  }
  LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                  "strata_pool: scheduling connections with %u thread "
                  "groups, oversubscribe %u, stall limit %u ms",
                  pool_size, pool_oversubscribe, pool_stall_limit_ms);
  return 0;
}

int plugin_deinit(MYSQL_PLUGIN) {
  /* Deletes the connection handler, which calls end_pool(). */
  my_connection_handler_reset();
  end_pool();
  deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
  return 0;
}

st_mysql_daemon daemon_descriptor = {MYSQL_DAEMON_INTERFACE_VERSION};

}  // namespace

/* pool_info_schema.cc */
extern st_mysql_information_schema pool_info_schema_descriptor;
int pool_groups_table_init(void *schema_table);
int pool_queues_table_init(void *schema_table);

/* An INFORMATION_SCHEMA table of the library: loaded with it, like the
   pool itself never by INSTALL PLUGIN. */
#define POOL_INFO_SCHEMA_TABLE(name, description, init)                 \
  {                                                                     \
    MYSQL_INFORMATION_SCHEMA_PLUGIN, &pool_info_schema_descriptor, name, \
        "Strata", description, PLUGIN_LICENSE_GPL, init, nullptr,      \
        nullptr, 0x0100, nullptr, nullptr, nullptr,                     \
        PLUGIN_OPT_NO_INSTALL | PLUGIN_OPT_NO_UNINSTALL                 \
  }

mysql_declare_plugin(strata_pool){
    MYSQL_DAEMON_PLUGIN,
    &daemon_descriptor,
    "thread_pool",
    "Strata",
    "Strata thread pool: thread groups with a listener, oversubscribe, stall "
    "detection and priority queues (Percona/MariaDB settings)",
    PLUGIN_LICENSE_GPL,
    plugin_init,
    nullptr,
    plugin_deinit,
    0x0100,
    status_variables,
    system_variables,
    nullptr,
    PLUGIN_OPT_NO_INSTALL | PLUGIN_OPT_NO_UNINSTALL,
},
    POOL_INFO_SCHEMA_TABLE(
        "THREAD_POOL_GROUPS",
        "The thread pool's groups: connections, threads by state, queue, "
        "listener",
        pool_groups_table_init),
    POOL_INFO_SCHEMA_TABLE(
        "THREAD_POOL_QUEUES",
        "The thread pool's queued connections, in the order each group "
        "serves them",
        pool_queues_table_init) mysql_declare_plugin_end;
