/* Strata thread pool: INFORMATION_SCHEMA.THREAD_POOL_GROUPS and
   THREAD_POOL_QUEUES.

   The tables MariaDB's pool has, with its column names first, so that a
   DBA's monitoring queries carry over; columns of ours follow. A snapshot
   is read one group at a time under the group's mutex (a group is
   consistent, the set of groups is not one instant). Like InnoDB's
   tables of internals, both need the PROCESS privilege: a queue shows
   other users' connection ids. */

#include <mysql/plugin.h>

#include "plugin/strata_pool/pool.h"
#include "sql/auth/auth_acls.h"
#include "sql/auth/auth_common.h"
#include "sql/field.h"
#include "sql/sql_show.h"
#include "sql/table.h"

namespace {

constexpr uint kUintDigits = 10;
constexpr uint kBoolDigits = 1;

ST_FIELD_INFO groups_fields[] = {
    {"GROUP_ID", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr, 0},
    {"CONNECTIONS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr,
     0},
    {"THREADS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr, 0},
    /* Running a command: neither idle, listening nor in a server wait. */
    {"ACTIVE_THREADS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED,
     nullptr, 0},
    /* Idle, waiting to be woken for work. */
    {"STANDBY_THREADS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED,
     nullptr, 0},
    {"QUEUE_LENGTH", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr,
     0},
    {"HAS_LISTENER", kBoolDigits, MYSQL_TYPE_TINY, 0, MY_I_S_UNSIGNED, nullptr,
     0},
    {"IS_STALLED", kBoolDigits, MYSQL_TYPE_TINY, 0, MY_I_S_UNSIGNED, nullptr,
     0},
    /* Ours: inside thd_wait_begin/end (row lock, commit queue, replica
       acknowledgement, ...), so not counted against the group's limit. */
    {"WAITING_THREADS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED,
     nullptr, 0},
    /* Ours: of the waiting ones, those waiting for their own connection's
       next command (the low-concurrency fast path). */
    {"STICKY_THREADS", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED,
     nullptr, 0},
    {"HIGH_PRIORITY_QUEUE_LENGTH", kUintDigits, MYSQL_TYPE_LONG, 0,
     MY_I_S_UNSIGNED, nullptr, 0},
    /* Ours: the group runs all it may, so its listener stopped listening
       and the running workers take new events. */
    {"LISTENER_PARKED", kBoolDigits, MYSQL_TYPE_TINY, 0, MY_I_S_UNSIGNED,
     nullptr, 0},
    {nullptr, 0, MYSQL_TYPE_NULL, 0, 0, nullptr, 0}};

ST_FIELD_INFO queues_fields[] = {
    {"GROUP_ID", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr, 0},
    /* 0 is served next. */
    {"POSITION", kUintDigits, MYSQL_TYPE_LONG, 0, MY_I_S_UNSIGNED, nullptr, 0},
    /* 0 high (a statement of an open transaction, or a deferred statement
       status to send), 1 low. */
    {"PRIORITY", kBoolDigits, MYSQL_TYPE_TINY, 0, MY_I_S_UNSIGNED, nullptr, 0},
    /* NULL for a new connection waiting to be authenticated. */
    {"CONNECTION_ID", MY_INT64_NUM_DECIMAL_DIGITS, MYSQL_TYPE_LONGLONG, 0,
     MY_I_S_UNSIGNED | MY_I_S_MAYBE_NULL, nullptr, 0},
    {"QUEUEING_TIME_MICROSECONDS", MY_INT64_NUM_DECIMAL_DIGITS,
     MYSQL_TYPE_LONGLONG, 0, MY_I_S_UNSIGNED, nullptr, 0},
    {nullptr, 0, MYSQL_TYPE_NULL, 0, 0, nullptr, 0}};

void store(Field *field, ulonglong value) {
  field->set_notnull();
  field->store(static_cast<longlong>(value), true);
}

int fill_groups(THD *thd, Table_ref *tables, Item *) {
  if (check_global_access(thd, PROCESS_ACL)) return 0;
  TABLE *table = tables->table;
  Field **f = table->field;
  for (const Pool_group_state &g : pool_group_states()) {
    store(f[0], g.index);
    store(f[1], g.connections);
    store(f[2], g.threads);
    store(f[3], g.running);
    store(f[4], g.idle);
    store(f[5], g.queued_high + g.queued_low);
    store(f[6], g.listener);
    store(f[7], g.stalled);
    store(f[8], g.waiting);
    store(f[9], g.sticky);
    store(f[10], g.queued_high);
    store(f[11], g.listener_parked);
    if (schema_table_store_record(thd, table)) return 1;
  }
  return 0;
}

int fill_queues(THD *thd, Table_ref *tables, Item *) {
  if (check_global_access(thd, PROCESS_ACL)) return 0;
  TABLE *table = tables->table;
  Field **f = table->field;
  for (const Pool_queued_state &q : pool_queued_states()) {
    store(f[0], q.group);
    store(f[1], q.position);
    store(f[2], q.high ? 0 : 1);
    if (q.authenticated)
      store(f[3], q.connection_id);
    else
      f[3]->set_null();
    store(f[4], q.queued_for_us);
    if (schema_table_store_record(thd, table)) return 1;
  }
  return 0;
}

}  // namespace

st_mysql_information_schema pool_info_schema_descriptor = {
    MYSQL_INFORMATION_SCHEMA_INTERFACE_VERSION};

int pool_groups_table_init(void *p) {
  auto *schema_table = static_cast<ST_SCHEMA_TABLE *>(p);
  schema_table->fields_info = groups_fields;
  schema_table->fill_table = fill_groups;
  return 0;
}

int pool_queues_table_init(void *p) {
  auto *schema_table = static_cast<ST_SCHEMA_TABLE *>(p);
  schema_table->fields_info = queues_fields;
  schema_table->fill_table = fill_queues;
  return 0;
}
