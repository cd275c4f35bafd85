/* Strata: thd_wait_begin()/thd_wait_end() for dynamic plugins.

   include/mysql/service_thd_wait.h hides the real functions from plugins
   built with MYSQL_DYNAMIC_PLUGIN (it declares conflicting prototypes), so
   a dynamic plugin that blocks a session for a long time (strata_sync_source
   waiting for a replica's acknowledgement) cannot tell the connection
   handler. These two wrappers, defined in sql/sql_thd_api.cc next to the
   functions they call, can be: with a thread pool (plugin/strata_pool
   receives THD_event_functions::thd_wait_begin/end) the pool may run another
   worker while the session waits. Without a pool they cost an empty call.

   wait_type is an enum thd_wait_type value. Every begin needs its end, on
   the same thread, immediately after the wait. */
#ifndef STRATA_THD_WAIT_H
#define STRATA_THD_WAIT_H

class THD;

void strata_thd_wait_begin(THD *thd, int wait_type);
void strata_thd_wait_end(THD *thd);

#endif  // STRATA_THD_WAIT_H
