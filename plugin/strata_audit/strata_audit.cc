// strata_audit: the server side of the audit log plugin (plugin name
// "audit_log", library strata_audit.so). See docs/audit_log.md.
//
// This file is the only one that sees MySQL headers. It turns audit API
// events into strata_audit::Record values, applies the filter, and hands
// them to the AuditLog sink in core/ (which orders, formats, buffers and
// writes them). It also owns the audit_log_* system variables (validated
// here; only accounts with AUDIT_ADMIN may change them, and every change is
// itself recorded) and the Audit_log_* status variables. AUDIT_ADMIN also
// guards what would switch the log off or reset its settings by another
// door: UNINSTALL PLUGIN audit_log and RESET PERSIST of audit_log_*
// settings (refused without it, and recorded either way).
//
// A statement whose status strong sync deferred (a parked session, see
// sql/strata_park.h) is recorded when that status is finally sent, with
// the status the client got: the server's event comes before the wait.
//
// Threads: event_notify() runs in session threads, concurrently. It reads
// the current Filter through an atomic shared_ptr (replaced as a whole on
// SET GLOBAL) and plain atomics for the other runtime settings; it never
// takes a server lock. Updates of variables run under the server's
// LOCK_global_system_variables, so they are serialised with each other.
// No exception leaves this file: each entry point catches everything.

#include <mysql/components/my_service.h>
#include <mysql/components/services/dynamic_privilege.h>
#include <mysql/plugin.h>
#include <mysql/plugin_audit.h>
#include <mysql/service_plugin_registry.h>
#include <mysqld_error.h>

#include <syslog.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "my_systime.h"
#include "typelib.h"
#include "mysql/strings/m_ctype.h"
#include "sql/auth/sql_security_ctx.h"
#include "sql/current_thd.h"
#include "sql/mysqld.h"
#include "sql/set_var.h"
#include "sql/sql_class.h"
#include "sql/sql_lex.h"
#include "sql/strata_park.h"

#include "core/audit_log.h"
#include "core/filter.h"
#include "core/owned_record.h"
#include "core/published.h"
#include "core/query_text.h"

namespace {

using strata_audit::AuditLog;
using strata_audit::EventKind;
using strata_audit::Filter;
using strata_audit::FilterSpec;
using strata_audit::Published;
using strata_audit::Record;

constexpr char kAdminPrivilege[] = "AUDIT_ADMIN";

MYSQL_PLUGIN g_plugin = nullptr;
SERVICE_TYPE(registry) *g_registry = nullptr;
SERVICE_TYPE(global_grants_check) *g_grants = nullptr;

AuditLog *g_log = nullptr;  // set in init, cleared in deinit
Published<Filter> g_filter;  // read on every event (published.h says why)
std::vector<std::string> g_command_names;  // index = enum_sql_command
// Looked up by string_view on every statement: no std::string built.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const {
    return std::hash<std::string_view>()(s);
  }
};
std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>
    g_command_index;

std::atomic<uint64_t> g_max_query_length{0};
std::atomic<bool> g_redact{false};
std::atomic<bool> g_table_access{false};
std::atomic<uint64_t> g_events{0};           // events seen
std::atomic<uint64_t> g_events_filtered{0};  // events the filter skipped

// ---- system variables: storage ----

char *sv_file = nullptr;
ulong sv_format = 0;    // JSON
ulong sv_strategy = 0;  // ASYNCHRONOUS
ulonglong sv_buffer_size = 1 << 20;
ulong sv_policy = 0;  // ALL
ulonglong sv_rotate_on_size = 0;
ulong sv_rotations = 0;
bool sv_flush = false;
char *sv_include_accounts = nullptr;
char *sv_exclude_accounts = nullptr;
char *sv_include_databases = nullptr;
char *sv_exclude_databases = nullptr;
char *sv_include_commands = nullptr;
char *sv_exclude_commands = nullptr;
ulonglong sv_max_query_length = 0;
bool sv_redact_literals = false;
bool sv_table_access = false;
ulong sv_handler = 0;  // FILE
char *sv_syslog_ident = nullptr;
ulong sv_syslog_facility = 0;  // LOG_USER
ulong sv_syslog_priority = 0;  // LOG_INFO

// In strata_audit::Format's order.
const char *format_names[] = {"JSON", "CSV", "OLD", "NEW", nullptr};
TYPELIB format_typelib = {4, "audit_log_format", format_names, nullptr};
const char *strategy_names[] = {"ASYNCHRONOUS", "PERFORMANCE",
                                "SEMISYNCHRONOUS", "SYNCHRONOUS", nullptr};
TYPELIB strategy_typelib = {4, "audit_log_strategy", strategy_names, nullptr};
const char *handler_names[] = {"FILE", "SYSLOG", nullptr};
TYPELIB handler_typelib = {2, "audit_log_handler", handler_names, nullptr};
const char *facility_names[] = {"LOG_USER",   "LOG_AUTHPRIV", "LOG_CRON",
                                "LOG_DAEMON", "LOG_FTP",      "LOG_KERN",
                                "LOG_LPR",    "LOG_MAIL",     "LOG_NEWS",
                                "LOG_SYSLOG", "LOG_LOCAL0",   "LOG_LOCAL1",
                                "LOG_LOCAL2", "LOG_LOCAL3",   "LOG_LOCAL4",
                                "LOG_LOCAL5", "LOG_LOCAL6",   "LOG_LOCAL7",
                                nullptr};
const int facility_values[] = {
    LOG_USER,   LOG_AUTHPRIV, LOG_CRON,   LOG_DAEMON, LOG_FTP,    LOG_KERN,
    LOG_LPR,    LOG_MAIL,     LOG_NEWS,   LOG_SYSLOG, LOG_LOCAL0, LOG_LOCAL1,
    LOG_LOCAL2, LOG_LOCAL3,   LOG_LOCAL4, LOG_LOCAL5, LOG_LOCAL6, LOG_LOCAL7};
TYPELIB facility_typelib = {18, "audit_log_syslog_facility", facility_names,
                            nullptr};
const char *priority_names[] = {"LOG_INFO",  "LOG_ALERT", "LOG_CRIT",
                                "LOG_ERR",   "LOG_WARNING", "LOG_NOTICE",
                                "LOG_EMERG", "LOG_DEBUG", nullptr};
const int priority_values[] = {LOG_INFO,    LOG_ALERT, LOG_CRIT,
                               LOG_ERR,     LOG_WARNING, LOG_NOTICE,
                               LOG_EMERG,   LOG_DEBUG};
TYPELIB priority_typelib = {8, "audit_log_syslog_priority", priority_names,
                            nullptr};
const char *policy_names[] = {"ALL", "LOGINS", "QUERIES", "NONE", nullptr};
TYPELIB policy_typelib = {4, "audit_log_policy", policy_names, nullptr};

// ---- helpers ----

std::string_view sv(const char *s) { return s ? std::string_view(s) : ""; }
std::string_view sv(const LEX_CSTRING &s) {
  return s.str ? std::string_view(s.str, s.length) : "";
}

void log_message(bool error, const std::string &msg) {
  if (g_plugin == nullptr) return;
  my_plugin_log_message(&g_plugin,
                        error ? MY_ERROR_LEVEL : MY_WARNING_LEVEL, "%s",
                        msg.c_str());
}

FilterSpec current_spec() {
  FilterSpec s;
  s.policy = static_cast<strata_audit::Policy>(sv_policy);
  s.include_accounts = sv(sv_include_accounts);
  s.exclude_accounts = sv(sv_exclude_accounts);
  s.include_databases = sv(sv_include_databases);
  s.exclude_databases = sv(sv_exclude_databases);
  s.include_commands = sv(sv_include_commands);
  s.exclude_commands = sv(sv_exclude_commands);
  return s;
}

// The account fields of the session's security context.
void fill_account(MYSQL_THD thd, Record *r) {
  Security_context *sctx = thd->security_context();
  if (sctx == nullptr) return;
  r->user = sv(sctx->user());
  r->priv_user = sv(sctx->priv_user());
  r->host = sv(sctx->host());
  r->ip = sv(sctx->ip());
  r->os_user = sv(sctx->external_user());
  r->proxy_user = sv(sctx->proxy_user());
}

// The host part of the account the session authenticated as (account
// lists name accounts, not client hosts: core/filter.h).
std::string_view priv_host(MYSQL_THD thd) {
  Security_context *sctx = thd ? thd->security_context() : nullptr;
  if (sctx == nullptr) return "";
  return sv(sctx->priv_host());
}

// Changing audit settings needs AUDIT_ADMIN (on top of what SET GLOBAL
// itself needs: SYSTEM_VARIABLES_ADMIN or SUPER). Checked in the check
// functions and again in the update functions, because the server skips the
// check function for SET ... = DEFAULT (an error raised in an update fails
// the statement).
bool deny_without_admin(MYSQL_THD thd) {
  Security_context *sctx = thd ? thd->security_context() : nullptr;
  if (sctx == nullptr || g_grants == nullptr) return false;
  if (g_grants->has_global_grant(
          reinterpret_cast<Security_context_handle>(sctx), kAdminPrivilege,
          sizeof(kAdminPrivilege) - 1))
    return false;
  my_error(ER_SPECIFIC_ACCESS_DENIED_ERROR, MYF(0), kAdminPrivilege);
  return true;
}

void refuse(const char *var, std::string_view value, const std::string &why) {
  const std::string v(value);
  my_printf_error(ER_WRONG_VALUE_FOR_VAR,
                  "Variable '%s' can't be set to the value of '%s': %s",
                  MYF(0), var, v.c_str(), why.c_str());
}

// Records a settings change; never filtered.
void audit_setting(MYSQL_THD thd, const char *var, std::string_view value) {
  if (g_log == nullptr) return;
  Record r;
  r.kind = EventKind::kAuditConfig;
  r.connection_id = thd ? static_cast<uint64_t>(thd->thread_id()) : 0;
  if (thd) fill_account(thd, &r);
  const std::string name = std::string("audit_log_") + var;
  r.variable = name;
  r.value = value;
  g_log->append(r);
}

// ---- system variables: check and update functions ----

int check_enum(MYSQL_THD thd, TYPELIB *lib, void *save,
               st_mysql_value *value, const char *var) {
  if (deny_without_admin(thd)) return 1;
  long long idx = -1;
  if (value->value_type(value) == MYSQL_VALUE_TYPE_STRING) {
    char buf[64];
    int len = sizeof(buf);
    const char *str = value->val_str(value, buf, &len);
    if (str == nullptr) {
      refuse(var, "NULL", "a value is required");
      return 1;
    }
    for (unsigned i = 0; i < lib->count; ++i) {
      if (len == static_cast<int>(strlen(lib->type_names[i])) &&
          strncasecmp(str, lib->type_names[i], len) == 0)
        idx = i;
    }
    if (idx < 0) {
      std::string allowed;
      for (unsigned i = 0; i < lib->count; ++i)
        allowed += std::string(i ? ", " : "") + lib->type_names[i];
      refuse(var, std::string_view(str, len), "allowed values are " + allowed);
      return 1;
    }
  } else {
    value->val_int(value, &idx);
    if (idx < 0 || idx >= static_cast<long long>(lib->count)) {
      refuse(var, std::to_string(idx), "out of range");
      return 1;
    }
  }
  *static_cast<ulong *>(save) = static_cast<ulong>(idx);
  return 0;
}

int check_policy(MYSQL_THD thd, SYS_VAR *, void *save, st_mysql_value *v) {
  return check_enum(thd, &policy_typelib, save, v, "audit_log_policy");
}

void rebuild_filter(MYSQL_THD thd) {
  std::string error;
  auto f = Filter::build(current_spec(), g_command_names, &error);
  if (!f) {
    // Only reachable when two sessions race on conflicting lists: keep the
    // previous filter and say so.
    push_warning_printf(thd, Sql_condition::SL_WARNING, ER_WRONG_ARGUMENTS,
                        "audit log filter unchanged: %s", error.c_str());
    return;
  }
  g_filter.publish(std::move(f));
}

void update_policy(MYSQL_THD thd, SYS_VAR *, void *tgt, const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<ulong *>(tgt) = *static_cast<const ulong *>(save);
  rebuild_filter(thd);
  audit_setting(thd, "policy", policy_names[sv_policy]);
}

struct ListVar {
  char **slot;
  const char *name;  // without the audit_log_ prefix
  std::string FilterSpec::*field;
};

const ListVar kListVars[] = {
    {&sv_include_accounts, "include_accounts", &FilterSpec::include_accounts},
    {&sv_exclude_accounts, "exclude_accounts", &FilterSpec::exclude_accounts},
    {&sv_include_databases, "include_databases",
     &FilterSpec::include_databases},
    {&sv_exclude_databases, "exclude_databases",
     &FilterSpec::exclude_databases},
    {&sv_include_commands, "include_commands", &FilterSpec::include_commands},
    {&sv_exclude_commands, "exclude_commands", &FilterSpec::exclude_commands},
};

const ListVar *list_var_of_slot(const void *tgt) {
  for (const auto &l : kListVars)
    if (static_cast<const void *>(l.slot) == tgt) return &l;
  return nullptr;
}

template <int I>
int check_list_i(MYSQL_THD thd, SYS_VAR *, void *save, st_mysql_value *value) {
  const ListVar &lv = kListVars[I];
  const std::string var = std::string("audit_log_") + lv.name;
  if (deny_without_admin(thd)) return 1;
  char buf[512];
  int len = sizeof(buf);
  const char *str = value->val_str(value, buf, &len);
  std::string candidate = str ? std::string(str, len) : std::string();
  FilterSpec spec = current_spec();
  spec.*(lv.field) = candidate;
  std::string error;
  if (!Filter::build(spec, g_command_names, &error)) {
    refuse(var.c_str(), candidate, error);
    return 1;
  }
  *static_cast<const char **>(save) =
      str ? thd_strmake(thd, str, len) : nullptr;
  return 0;
}

void update_list(MYSQL_THD thd, SYS_VAR *, void *tgt, const void *save) {
  char **slot = static_cast<char **>(tgt);
  if (deny_without_admin(thd)) {  // SET ... = DEFAULT skips check
    // The server frees the string the slot held once we return (it assumes
    // the update replaced it), so refusing means handing it a copy to free.
    // The refused value is never anything but our default, NULL: no leak.
    if (*slot != nullptr) *slot = my_strdup(PSI_NOT_INSTRUMENTED, *slot, MYF(0));
    return;
  }
  *slot = *static_cast<char *const *>(save);
  rebuild_filter(thd);
  const ListVar *lv = list_var_of_slot(tgt);
  if (lv) audit_setting(thd, lv->name, sv(*lv->slot));
}

template <const char *Name>
int check_admin_ulonglong(MYSQL_THD thd, void *save, st_mysql_value *value,
                          unsigned long long max) {
  if (deny_without_admin(thd)) return 1;
  long long v = 0;
  value->val_int(value, &v);
  if ((v < 0 && !value->is_unsigned(value)) ||
      static_cast<unsigned long long>(v) > max) {
    refuse(Name, std::to_string(v),
           "must be between 0 and " + std::to_string(max));
    return 1;
  }
  *static_cast<unsigned long long *>(save) = static_cast<unsigned long long>(v);
  return 0;
}

constexpr char kRotateOnSize[] = "audit_log_rotate_on_size";
constexpr char kRotations[] = "audit_log_rotations";
constexpr char kMaxQueryLength[] = "audit_log_max_query_length";
constexpr unsigned long long kMaxRotations = 9999;

int check_rotate_on_size(MYSQL_THD thd, SYS_VAR *, void *save,
                         st_mysql_value *value) {
  unsigned long long v;
  if (check_admin_ulonglong<kRotateOnSize>(thd, &v, value, ~0ULL >> 1))
    return 1;
  if (v != 0 && v < 4096) {
    refuse(kRotateOnSize, std::to_string(v),
           "must be 0 (no rotation) or at least 4096 bytes");
    return 1;
  }
  *static_cast<ulonglong *>(save) = v;
  return 0;
}

void update_rotate_on_size(MYSQL_THD thd, SYS_VAR *, void *tgt,
                           const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<ulonglong *>(tgt) = *static_cast<const ulonglong *>(save);
  if (g_log) g_log->set_rotation(sv_rotate_on_size, sv_rotations);
  audit_setting(thd, "rotate_on_size", std::to_string(sv_rotate_on_size));
}

int check_rotations(MYSQL_THD thd, SYS_VAR *, void *save,
                    st_mysql_value *value) {
  unsigned long long v;
  if (check_admin_ulonglong<kRotations>(thd, &v, value, kMaxRotations))
    return 1;
  *static_cast<ulong *>(save) = static_cast<ulong>(v);
  return 0;
}

void update_rotations(MYSQL_THD thd, SYS_VAR *, void *tgt, const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<ulong *>(tgt) = *static_cast<const ulong *>(save);
  if (g_log) g_log->set_rotation(sv_rotate_on_size, sv_rotations);
  audit_setting(thd, "rotations", std::to_string(sv_rotations));
}

int check_max_query_length(MYSQL_THD thd, SYS_VAR *, void *save,
                           st_mysql_value *value) {
  unsigned long long v;
  if (check_admin_ulonglong<kMaxQueryLength>(thd, &v, value, 1ULL << 30))
    return 1;
  *static_cast<ulonglong *>(save) = v;
  return 0;
}

void update_max_query_length(MYSQL_THD thd, SYS_VAR *, void *tgt,
                             const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<ulonglong *>(tgt) = *static_cast<const ulonglong *>(save);
  g_max_query_length = sv_max_query_length;
  audit_setting(thd, "max_query_length", std::to_string(sv_max_query_length));
}

int check_bool(MYSQL_THD thd, void *save, st_mysql_value *value,
               const char *var) {
  if (deny_without_admin(thd)) return 1;
  long long v = -1;
  if (value->value_type(value) == MYSQL_VALUE_TYPE_STRING) {
    char buf[16];
    int len = sizeof(buf);
    const char *str = value->val_str(value, buf, &len);
    const std::string s = str ? std::string(str, len) : "";
    if (strcasecmp(s.c_str(), "ON") == 0 || strcasecmp(s.c_str(), "TRUE") == 0)
      v = 1;
    else if (strcasecmp(s.c_str(), "OFF") == 0 ||
             strcasecmp(s.c_str(), "FALSE") == 0)
      v = 0;
    if (v < 0) {
      refuse(var, s, "allowed values are ON, OFF");
      return 1;
    }
  } else {
    value->val_int(value, &v);
    if (v != 0 && v != 1) {
      refuse(var, std::to_string(v), "allowed values are ON, OFF");
      return 1;
    }
  }
  *static_cast<bool *>(save) = v == 1;
  return 0;
}

int check_flush(MYSQL_THD thd, SYS_VAR *, void *save, st_mysql_value *v) {
  return check_bool(thd, save, v, "audit_log_flush");
}

void update_flush(MYSQL_THD thd, SYS_VAR *, void *tgt, const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<bool *>(tgt) = false;  // an action, not a state
  if (!*static_cast<const bool *>(save) || g_log == nullptr) return;
  audit_setting(thd, "flush", "ON");  // last record of the old file
  g_log->flush_buffer();
  if (g_log->reopen() != 0)
    push_warning_printf(thd, Sql_condition::SL_WARNING, ER_WRONG_ARGUMENTS,
                        "could not reopen the audit log file (see the error "
                        "log); records are dropped until it can be opened");
}

int check_redact(MYSQL_THD thd, SYS_VAR *, void *save, st_mysql_value *v) {
  return check_bool(thd, save, v, "audit_log_redact_literals");
}

void update_redact(MYSQL_THD thd, SYS_VAR *, void *tgt, const void *save) {
  if (deny_without_admin(thd)) return;  // SET ... = DEFAULT skips check
  *static_cast<bool *>(tgt) = *static_cast<const bool *>(save);
  g_redact = sv_redact_literals;
  audit_setting(thd, "redact_literals", sv_redact_literals ? "ON" : "OFF");
}

// ---- system variables: declarations ----

MYSQL_SYSVAR_STR(file, sv_file,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                 "The audit log file (relative paths are in the data "
                 "directory). Created with mode 0600.",
                 nullptr, nullptr, "audit.log");
MYSQL_SYSVAR_ENUM(format, sv_format, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                  "Record format: JSON (one object per line, Percona's "
                  "fields and more), or Percona's OLD, NEW or CSV.",
                  nullptr, nullptr, 0, &format_typelib);
MYSQL_SYSVAR_ENUM(strategy, sv_strategy,
                  PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                  "ASYNCHRONOUS (buffer, wait when full), PERFORMANCE "
                  "(buffer, drop when full), SEMISYNCHRONOUS (write each "
                  "record), SYNCHRONOUS (write and sync each record).",
                  nullptr, nullptr, 0, &strategy_typelib);
MYSQL_SYSVAR_ULONGLONG(buffer_size, sv_buffer_size,
                       PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                       "Size of the in-memory record buffer in bytes.",
                       nullptr, nullptr, 1 << 20, 4096, 1ULL << 32, 4096);
MYSQL_SYSVAR_ENUM(policy, sv_policy, PLUGIN_VAR_RQCMDARG,
                  "Which events are recorded: ALL, LOGINS, QUERIES, NONE.",
                  check_policy, update_policy, 0, &policy_typelib);
MYSQL_SYSVAR_ULONGLONG(rotate_on_size, sv_rotate_on_size, PLUGIN_VAR_RQCMDARG,
                       "Rotate the file when it reaches this size in bytes "
                       "(0: never).",
                       check_rotate_on_size, update_rotate_on_size, 0, 0,
                       ~0ULL >> 1, 0);
MYSQL_SYSVAR_ULONG(rotations, sv_rotations, PLUGIN_VAR_RQCMDARG,
                   "How many rotated files (file.1 .. file.N) are kept "
                   "(0: all).",
                   check_rotations, update_rotations, 0, 0, kMaxRotations, 0);
MYSQL_SYSVAR_BOOL(flush, sv_flush, PLUGIN_VAR_OPCMDARG,
                  "Set to ON to close and reopen the file (after an external "
                  "rotation).",
                  check_flush, update_flush, false);
MYSQL_SYSVAR_STR(include_accounts, sv_include_accounts,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Record only these accounts (user@host as in CREATE USER, "
                 "comma separated; compared with the account the session "
                 "authenticated as, % and _ are not wildcards).",
                 check_list_i<0>, update_list, nullptr);
MYSQL_SYSVAR_STR(exclude_accounts, sv_exclude_accounts,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Do not record these accounts.", check_list_i<1>, update_list,
                 nullptr);
MYSQL_SYSVAR_STR(include_databases, sv_include_databases,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Record statements that touch any of these databases.",
                 check_list_i<2>, update_list, nullptr);
MYSQL_SYSVAR_STR(exclude_databases, sv_exclude_databases,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Do not record statements that touch only these databases.",
                 check_list_i<3>, update_list, nullptr);
MYSQL_SYSVAR_STR(include_commands, sv_include_commands,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Record only these sql commands (select, create_table, ...) "
                 "or groups (ddl, dml, dcl).",
                 check_list_i<4>, update_list, nullptr);
MYSQL_SYSVAR_STR(exclude_commands, sv_exclude_commands,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                 "Do not record these sql commands or groups.",
                 check_list_i<5>, update_list, nullptr);
MYSQL_SYSVAR_ULONGLONG(max_query_length, sv_max_query_length,
                       PLUGIN_VAR_RQCMDARG,
                       "Keep at most this many bytes of a statement's text "
                       "(0: all).",
                       check_max_query_length, update_max_query_length, 0, 0,
                       1ULL << 30, 0);
MYSQL_SYSVAR_BOOL(redact_literals, sv_redact_literals, PLUGIN_VAR_OPCMDARG,
                  "Replace string literals in statement text by '?'.",
                  check_redact, update_redact, false);
MYSQL_SYSVAR_BOOL(table_access, sv_table_access,
                  PLUGIN_VAR_OPCMDARG | PLUGIN_VAR_READONLY,
                  "Also record each table read/insert/update/delete (a "
                  "startup option).",
                  nullptr, nullptr, false);

MYSQL_SYSVAR_ENUM(handler, sv_handler,
                  PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                  "FILE (audit_log_file) or SYSLOG (one message per record).",
                  nullptr, nullptr, 0, &handler_typelib);
MYSQL_SYSVAR_STR(syslog_ident, sv_syslog_ident,
                 PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                 "SYSLOG handler: text put before each record.", nullptr,
                 nullptr, "audit_log");
MYSQL_SYSVAR_ENUM(syslog_facility, sv_syslog_facility,
                  PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                  "SYSLOG handler: the facility.", nullptr, nullptr, 0,
                  &facility_typelib);
MYSQL_SYSVAR_ENUM(syslog_priority, sv_syslog_priority,
                  PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                  "SYSLOG handler: the priority.", nullptr, nullptr, 0,
                  &priority_typelib);

SYS_VAR *system_variables[] = {
    MYSQL_SYSVAR(file),           MYSQL_SYSVAR(format),
    MYSQL_SYSVAR(strategy),       MYSQL_SYSVAR(buffer_size),
    MYSQL_SYSVAR(policy),         MYSQL_SYSVAR(rotate_on_size),
    MYSQL_SYSVAR(rotations),      MYSQL_SYSVAR(flush),
    MYSQL_SYSVAR(include_accounts), MYSQL_SYSVAR(exclude_accounts),
    MYSQL_SYSVAR(include_databases), MYSQL_SYSVAR(exclude_databases),
    MYSQL_SYSVAR(include_commands), MYSQL_SYSVAR(exclude_commands),
    MYSQL_SYSVAR(max_query_length), MYSQL_SYSVAR(redact_literals),
    MYSQL_SYSVAR(table_access),   MYSQL_SYSVAR(handler),
    MYSQL_SYSVAR(syslog_ident),   MYSQL_SYSVAR(syslog_facility),
    MYSQL_SYSVAR(syslog_priority), nullptr};

// ---- status variables ----

template <uint64_t (*Get)()>
int show_u64(MYSQL_THD, SHOW_VAR *var, char *buff) {
  var->type = SHOW_LONGLONG;
  var->value = buff;
  *reinterpret_cast<long long *>(buff) = static_cast<long long>(Get());
  return 0;
}

#define STAT_GETTER(fn, expr) \
  uint64_t fn() { return g_log ? (expr) : 0; }
STAT_GETTER(st_written, g_log->stats().events_written.load())
STAT_GETTER(st_lost, g_log->stats().events_lost.load())
STAT_GETTER(st_total_size, g_log->stats().total_size.load())
STAT_GETTER(st_current_size, g_log->stats().current_size.load())
STAT_GETTER(st_waits, g_log->stats().write_waits.load())
STAT_GETTER(st_session_drains, g_log->stats().session_drains.load())
STAT_GETTER(st_errors, g_log->stats().write_errors.load())
STAT_GETTER(st_rotated, g_log->stats().rotations_done.load())
#undef STAT_GETTER
uint64_t st_events() { return g_events.load(); }
uint64_t st_filtered() { return g_events_filtered.load(); }

SHOW_VAR status_variables[] = {
    {"Audit_log_events", reinterpret_cast<char *>(&show_u64<st_events>),
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Audit_log_events_filtered",
     reinterpret_cast<char *>(&show_u64<st_filtered>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Audit_log_events_written",
     reinterpret_cast<char *>(&show_u64<st_written>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Audit_log_events_lost", reinterpret_cast<char *>(&show_u64<st_lost>),
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Audit_log_total_size",
     reinterpret_cast<char *>(&show_u64<st_total_size>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Audit_log_current_size",
     reinterpret_cast<char *>(&show_u64<st_current_size>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Audit_log_write_waits", reinterpret_cast<char *>(&show_u64<st_waits>),
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Audit_log_session_drains",
     reinterpret_cast<char *>(&show_u64<st_session_drains>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Audit_log_write_errors", reinterpret_cast<char *>(&show_u64<st_errors>),
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Audit_log_files_rotated",
     reinterpret_cast<char *>(&show_u64<st_rotated>), SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {nullptr, nullptr, SHOW_UNDEF, SHOW_SCOPE_GLOBAL}};

// ---- statements whose status strong sync deferred ----
//
// With strata_sync's AFTER_COMMIT wait point a session on the thread pool
// parks after its commit: the OK waits for a replica's acknowledgement,
// and the fail policy may turn it into an error. The server raises the
// statement's GENERAL_STATUS event before that wait, with the status as it
// was then (OK). The record is kept here, by connection, and written from
// strata_park's status_sent callback on the worker that sent the status,
// with that status and the statement's time including the wait. A session
// parks at most one statement at a time.

std::mutex g_deferred_mutex;
std::unordered_map<uint64_t, std::unique_ptr<strata_audit::OwnedRecord>>
    g_deferred;  // by connection id

void keep_until_status_sent(const Record &r) {
  auto owned = std::make_unique<strata_audit::OwnedRecord>(r);
  std::lock_guard<std::mutex> lock(g_deferred_mutex);
  g_deferred[r.connection_id] = std::move(owned);
}

std::unique_ptr<strata_audit::OwnedRecord> take_deferred(uint64_t id) {
  std::lock_guard<std::mutex> lock(g_deferred_mutex);
  auto it = g_deferred.find(id);
  if (it == g_deferred.end()) return nullptr;
  std::unique_ptr<strata_audit::OwnedRecord> r = std::move(it->second);
  g_deferred.erase(it);
  return r;
}

void deferred_status_sent(MYSQL_THD thd) {
  try {
    if (g_log == nullptr) return;
    std::unique_ptr<strata_audit::OwnedRecord> owned =
        take_deferred(static_cast<uint64_t>(thd->thread_id()));
    if (!owned) return;  // filtered out when its event came
    Record &r = owned->record();
    const Diagnostics_area *da = thd->get_stmt_da();
    r.status = da->is_error() ? static_cast<int>(da->mysql_errno()) : 0;
    const unsigned long long now = my_micro_time();
    r.query_time_us = now > thd->start_utime ? now - thd->start_utime : 0;
    g_log->append(r);
  } catch (...) {
    // As for any event: never fail the session because of the log.
  }
}

// At uninstall or shutdown, records still waiting for their status are
// written with the status they had when their event came (the wait may
// still end either way): a record is never dropped.
void write_all_deferred() {
  std::unordered_map<uint64_t, std::unique_ptr<strata_audit::OwnedRecord>> all;
  {
    std::lock_guard<std::mutex> lock(g_deferred_mutex);
    all.swap(g_deferred);
  }
  for (auto &entry : all) g_log->append(entry.second->record());
}

const Strata_park_audit kParkAudit = {deferred_status_sent};

// ---- UNINSTALL PLUGIN and RESET PERSIST: AUDIT_ADMIN, and recorded ----

// Records an attempt to stop the log or reset its settings; never
// filtered. `what` says what was attempted and how it ended.
void audit_admin_action(MYSQL_THD thd, std::string_view variable,
                        const std::string &what, int status) {
  if (g_log == nullptr) return;
  Record r;
  r.kind = EventKind::kAuditConfig;
  r.connection_id = thd ? static_cast<uint64_t>(thd->thread_id()) : 0;
  if (thd) fill_account(thd, &r);
  r.status = status;
  r.variable = variable;
  r.value = what;
  g_log->append(r);
}

// The server asks before it uninstalls the plugin (and so closes the log).
int audit_check_uninstall(MYSQL_PLUGIN) {
  try {
    THD *thd = current_thd;
    if (deny_without_admin(thd)) {
      audit_admin_action(thd, "audit_log",
                         "UNINSTALL PLUGIN refused: AUDIT_ADMIN required",
                         ER_SPECIFIC_ACCESS_DENIED_ERROR);
      return 1;
    }
    audit_admin_action(thd, "audit_log", "UNINSTALL PLUGIN", 0);
  } catch (...) {
  }
  return 0;
}

// A RESET PERSIST allowed at its start, recorded with its outcome at its
// end (notify_general): the name, per connection.
struct PendingReset {
  my_thread_id connection = 0;
  bool pending = false;
  std::string variable;
};
thread_local PendingReset t_pending_reset;

bool is_audit_variable(std::string_view name) {
  constexpr std::string_view prefix = "audit_log_";
  return name.size() > prefix.size() &&
         strncasecmp(name.data(), prefix.data(), prefix.size()) == 0;
}

// The start of every statement, also one of a stored procedure (nested):
// RESET PERSIST of an audit_log_* setting, or of all persisted settings
// (which include them), needs AUDIT_ADMIN. A non-zero return fails the
// statement before it runs.
int notify_query_start(MYSQL_THD thd, const mysql_event_query *e) {
  if ((e->event_subclass != MYSQL_AUDIT_QUERY_START &&
       e->event_subclass != MYSQL_AUDIT_QUERY_NESTED_START) ||
      e->sql_command_id != SQLCOM_RESET)
    return 0;
  const LEX *lex = thd->lex;
  if ((lex->type & REFRESH_PERSIST) == 0 || lex->option_type != OPT_PERSIST)
    return 0;
  const std::string_view name =
      lex->name.str ? std::string_view(lex->name.str, lex->name.length) : "";
  if (!name.empty() && !is_audit_variable(name)) return 0;
  std::string variable = name.empty() ? "audit_log_* (all persisted settings)"
                                      : std::string(name);
  for (char &c : variable)
    c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  if (deny_without_admin(thd)) {
    audit_admin_action(thd, variable,
                       "RESET PERSIST refused: AUDIT_ADMIN required",
                       ER_SPECIFIC_ACCESS_DENIED_ERROR);
    return 1;
  }
  t_pending_reset.connection = thd->thread_id();
  t_pending_reset.pending = true;
  t_pending_reset.variable = std::move(variable);
  return 0;
}

// GENERAL_STATUS: the outcome of a RESET PERSIST allowed at its start.
void record_reset_outcome(MYSQL_THD thd, const mysql_event_general *e) {
  PendingReset &p = t_pending_reset;
  if (!p.pending) return;
  p.pending = false;
  if (p.connection != thd->thread_id()) return;
  const int status = e->general_error_code;
  audit_admin_action(
      thd, p.variable,
      status == 0 ? "RESET PERSIST (from the next start: the option file or "
                    "the default)"
                  : "RESET PERSIST failed: error " + std::to_string(status),
      status);
}

// ---- events ----

void notify_connection(MYSQL_THD thd, const mysql_event_connection *e) {
  EventKind kind;
  switch (e->event_subclass) {
    case MYSQL_AUDIT_CONNECTION_CONNECT: kind = EventKind::kConnect; break;
    case MYSQL_AUDIT_CONNECTION_DISCONNECT:
      kind = EventKind::kDisconnect;
      // A parked session is resumed (its status sent) before it closes:
      // nothing is left, but never let an entry outlive its connection.
      if (auto owned = take_deferred(e->connection_id))
        g_log->append(owned->record());
      break;
    case MYSQL_AUDIT_CONNECTION_CHANGE_USER: kind = EventKind::kChangeUser; break;
    default: return;
  }
  g_events.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<const Filter> &f = g_filter.read();
  // A failed login has no account yet: recorded whatever the lists say.
  if (!f || !f->logins_enabled() ||
      (e->status == 0 &&
       !f->account_passes(sv(e->priv_user), priv_host(thd)))) {
    g_events_filtered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Record r;
  r.kind = kind;
  r.connection_id = e->connection_id;
  r.status = e->status;
  r.user = sv(e->user);
  r.priv_user = sv(e->priv_user);
  r.os_user = sv(e->external_user);
  r.proxy_user = sv(e->proxy_user);
  r.host = sv(e->host);
  r.ip = sv(e->ip);
  r.db = sv(e->database);
  g_log->append(r);
}

// The databases of the tables the statement running on this thread has
// touched so far (table access events), for the database lists; decided on
// and cleared at the statement's GENERAL_STATUS event, which the server
// raises on the same thread when the statement ends (a stored program's
// statements add to their CALL's set). Keyed by connection: a thread that
// serves another session starts afresh.
strata_audit::TouchedDatabases &touched_databases(MYSQL_THD thd) {
  struct Session {
    my_thread_id connection = 0;
    strata_audit::TouchedDatabases dbs;
  };
  thread_local Session s;
  if (s.connection != thd->thread_id()) {
    s.dbs.clear();
    s.connection = thd->thread_id();
  }
  return s.dbs;
}

size_t command_index(std::string_view name) {
  auto it = g_command_index.find(name);
  return it == g_command_index.end() ? SIZE_MAX : it->second;
}

// Applies truncation and redaction; text points into *storage if changed.
std::string_view shape_query(std::string_view q, std::string *storage,
                             bool *truncated) {
  if (g_redact.load(std::memory_order_relaxed)) {
    strata_audit::redact_literals(q, storage);
    q = *storage;
  }
  const uint64_t max = g_max_query_length.load(std::memory_order_relaxed);
  std::string_view t = strata_audit::truncate_utf8(q, max);
  *truncated = t.size() < q.size();
  return t;
}

void notify_general(MYSQL_THD thd, const mysql_event_general *e) {
  if (e->event_subclass != MYSQL_AUDIT_GENERAL_STATUS) return;
  // The statement ends here: its touched databases go with it.
  strata_audit::TouchedDatabases &touched = touched_databases(thd);
  struct ClearTouched {
    strata_audit::TouchedDatabases &dbs;
    ~ClearTouched() { dbs.clear(); }
  } clear_touched{touched};
  const std::string_view command = sv(e->general_command);
  if (command == "Quit") return;  // the disconnect record covers it
  record_reset_outcome(thd, e);
  g_events.fetch_add(1, std::memory_order_relaxed);
  const std::shared_ptr<const Filter> &f = g_filter.read();
  Record r;
  fill_account(thd, &r);
  r.db = sv(thd->db());
  r.command_class = sv(e->general_sql_command);
  const size_t cmd = command_index(r.command_class);
  if (!f || !f->queries_enabled() ||
      !f->account_passes(r.priv_user, priv_host(thd)) ||
      !f->statement_databases_pass(touched.names(), r.db, cmd) ||
      !f->command_passes(cmd)) {
    g_events_filtered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  r.kind = EventKind::kQuery;
  r.connection_id = e->general_thread_id;
  r.status = e->general_error_code;
  r.command = command;
  std::string storage;
  r.query = shape_query(sv(e->general_query), &storage, &r.query_truncated);
  r.rows_sent = thd->get_sent_row_count();
  r.rows_examined = thd->get_examined_row_count();
  const unsigned long long now = my_micro_time();
  r.query_time_us = now > thd->start_utime ? now - thd->start_utime : 0;
  if (strata_park_status_deferred(thd)) {
    keep_until_status_sent(r);  // the status is not known yet
    return;
  }
  g_log->append(r);
}

void notify_table(MYSQL_THD thd, const mysql_event_table_access *e) {
  const char *op;
  switch (e->event_subclass) {
    case MYSQL_AUDIT_TABLE_ACCESS_READ: op = "read"; break;
    case MYSQL_AUDIT_TABLE_ACCESS_INSERT: op = "insert"; break;
    case MYSQL_AUDIT_TABLE_ACCESS_UPDATE: op = "update"; break;
    case MYSQL_AUDIT_TABLE_ACCESS_DELETE: op = "delete"; break;
    default: return;
  }
  const std::shared_ptr<const Filter> &f = g_filter.read();
  // Every statement's tables count for the database lists (notify_general),
  // whether or not table access is recorded.
  if (f && f->filters_databases())
    touched_databases(thd).add(sv(e->table_database));
  if (!g_table_access.load(std::memory_order_relaxed)) return;
  g_events.fetch_add(1, std::memory_order_relaxed);
  Record r;
  fill_account(thd, &r);
  r.db = sv(thd->db());
  const size_t cmd = static_cast<size_t>(e->sql_command_id);
  r.command_class =
      cmd < g_command_names.size() ? std::string_view(g_command_names[cmd]) : "";
  if (!f || !f->queries_enabled() ||
      !f->account_passes(r.priv_user, priv_host(thd)) ||
      !f->database_passes(sv(e->table_database)) ||
      !f->command_passes(cmd)) {
    g_events_filtered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  r.kind = EventKind::kTableAccess;
  r.connection_id = e->connection_id;
  r.table_op = op;
  r.table_db = sv(e->table_database);
  r.table = sv(e->table_name);
  std::string storage;
  r.query = shape_query(sv(e->query), &storage, &r.query_truncated);
  g_log->append(r);
}

// Is `name` assigned with SET PERSIST_ONLY in the statement thd runs?
bool set_persist_only(MYSQL_THD thd, std::string_view name) {
  for (set_var_base &base : thd->lex->var_list) {
    auto *var = dynamic_cast<set_var *>(&base);
    if (var == nullptr || var->type != OPT_PERSIST_ONLY) continue;
    const char *n = var->m_var_tracker.get_var_name();
    if (n != nullptr && name.size() == strlen(n) &&
        strncasecmp(n, name.data(), name.size()) == 0)
      return true;
  }
  return false;
}

// SET PERSIST_ONLY never calls a variable's check or update function, so
// the privilege check and the record of the change happen here, on the
// event the server raises once the assignment passed its own checks (a
// non-zero return fails the statement). SET GLOBAL and SET PERSIST are
// checked and recorded by the variables' own functions.
int notify_variable_set(MYSQL_THD thd, const mysql_event_global_variable *e) {
  const std::string_view name = sv(e->variable_name);
  constexpr std::string_view prefix = "audit_log_";
  if (name.size() <= prefix.size() ||
      strncasecmp(name.data(), prefix.data(), prefix.size()) != 0)
    return 0;
  if (!set_persist_only(thd, name)) return 0;
  if (deny_without_admin(thd)) return 1;
  std::string var(name.substr(prefix.size()));
  for (char &c : var) c = static_cast<char>(tolower(static_cast<unsigned char>(c)));
  audit_setting(thd, var.c_str(),
                std::string(sv(e->variable_value)) + " (PERSIST_ONLY: from the next start)");
  return 0;
}

int audit_notify(MYSQL_THD thd, mysql_event_class_t cls, const void *ev) {
  if (g_log == nullptr) return 0;
  if (cls == MYSQL_AUDIT_GLOBAL_VARIABLE_CLASS) {
    // Outside the try below: its refusal must reach the server.
    try {
      return notify_variable_set(
          thd, static_cast<const mysql_event_global_variable *>(ev));
    } catch (...) {
      return 0;
    }
  }
  if (cls == MYSQL_AUDIT_QUERY_CLASS) {
    // Likewise: a refused RESET PERSIST fails here.
    try {
      return notify_query_start(thd,
                                static_cast<const mysql_event_query *>(ev));
    } catch (...) {
      return 0;
    }
  }
  try {
    switch (cls) {
      case MYSQL_AUDIT_CONNECTION_CLASS:
        notify_connection(thd, static_cast<const mysql_event_connection *>(ev));
        break;
      case MYSQL_AUDIT_GENERAL_CLASS:
        notify_general(thd, static_cast<const mysql_event_general *>(ev));
        break;
      case MYSQL_AUDIT_TABLE_ACCESS_CLASS:
        notify_table(thd, static_cast<const mysql_event_table_access *>(ev));
        break;
      default:
        break;
    }
  } catch (...) {
    // Never fail a statement because of the audit log (out of memory here
    // loses this record only).
  }
  return 0;
}

// ---- plugin life cycle ----

st_mysql_audit audit_descriptor = {
    MYSQL_AUDIT_INTERFACE_VERSION,
    nullptr,  // release_thd
    audit_notify,
    {static_cast<unsigned long>(MYSQL_AUDIT_GENERAL_STATUS),
     static_cast<unsigned long>(MYSQL_AUDIT_CONNECTION_CONNECT |
                                MYSQL_AUDIT_CONNECTION_DISCONNECT |
                                MYSQL_AUDIT_CONNECTION_CHANGE_USER),
     0,  // parse
     0,  // authorization
     0,  // table access: set in audit_init
     static_cast<unsigned long>(MYSQL_AUDIT_GLOBAL_VARIABLE_SET),
     0, 0, 0,  // startup, shutdown, command
     // query: RESET PERSIST is checked at its start (notify_query_start)
     static_cast<unsigned long>(MYSQL_AUDIT_QUERY_START |
                                MYSQL_AUDIT_QUERY_NESTED_START),
     0, 0, 0}};

int audit_init(MYSQL_PLUGIN plugin) {
  g_plugin = plugin;
  try {
    g_command_names.clear();
    g_command_index.clear();
    for (unsigned i = 0; i < static_cast<unsigned>(SQLCOM_END); ++i) {
      g_command_names.emplace_back(sv(sql_statement_names[i]));
      g_command_index.emplace(g_command_names.back(), i);
    }
    std::string error;
    auto filter = Filter::build(current_spec(), g_command_names, &error);
    if (!filter) {
      log_message(true, "invalid audit log filter settings: " + error);
      return 1;
    }
    g_filter.publish(filter);
    g_max_query_length = sv_max_query_length;
    g_redact = sv_redact_literals;
    g_table_access = sv_table_access;
    // The server reads the event mask after init, once: table events are
    // always wanted, since the database lists (dynamic) match a statement
    // on the databases of its tables (notify_table); with no list set and
    // audit_log_table_access=OFF each one returns at once.
    audit_descriptor.class_mask[MYSQL_AUDIT_TABLE_ACCESS_CLASS] =
        MYSQL_AUDIT_TABLE_ACCESS_ALL;

    g_registry = mysql_plugin_registry_acquire();
    if (g_registry == nullptr) {
      log_message(true, "cannot acquire the plugin registry");
      return 1;
    }
    my_h_service h = nullptr;
    if (g_registry->acquire("global_grants_check", &h) || h == nullptr) {
      log_message(true, "cannot acquire the global_grants_check service");
      mysql_plugin_registry_release(g_registry);
      g_registry = nullptr;
      return 1;
    }
    g_grants = reinterpret_cast<SERVICE_TYPE(global_grants_check) *>(h);

    strata_audit::Options o;
    o.path = sv(sv_file).empty() ? "audit.log" : sv_file;
    o.format = static_cast<strata_audit::Format>(sv_format);
    o.strategy = static_cast<strata_audit::Strategy>(sv_strategy);
    o.buffer_size = static_cast<size_t>(sv_buffer_size);
    o.server_id = server_id;
    o.rotate_on_size = sv_rotate_on_size;
    o.rotations = static_cast<unsigned>(sv_rotations);
    o.log = log_message;
    o.handler = static_cast<strata_audit::Handler>(sv_handler);
    o.syslog_ident = sv(sv_syslog_ident);
    o.syslog_priority = facility_values[sv_syslog_facility] |
                        priority_values[sv_syslog_priority];
    auto log = std::make_unique<AuditLog>(std::move(o));
    if (log->start(&error) != 0) {
      log_message(true, "cannot open the audit log: " + error);
      g_registry->release(h);
      g_grants = nullptr;
      mysql_plugin_registry_release(g_registry);
      g_registry = nullptr;
      return 1;
    }
    g_log = log.release();
    Record start;
    start.kind = EventKind::kAuditStart;
    start.value = server_version;
    g_log->append(start);
    strata_park_register_audit(&kParkAudit);
    return 0;
  } catch (...) {
    log_message(true, "audit log initialisation failed (out of memory?)");
    return 1;
  }
}

int audit_deinit(void *) {
  // Waits until no status_sent call is in progress.
  strata_park_register_audit(nullptr);
  if (g_log != nullptr) {
    write_all_deferred();
    Record stop;
    stop.kind = EventKind::kAuditStop;
    stop.value = server_version;
    g_log->append(stop);
    AuditLog *log = g_log;
    g_log = nullptr;
    log->stop();
    delete log;
  }
  g_filter.publish(nullptr);
  if (g_registry != nullptr) {
    if (g_grants != nullptr)
      g_registry->release(reinterpret_cast<my_h_service>(
          const_cast<SERVICE_TYPE_NO_CONST(global_grants_check) *>(g_grants)));
    g_grants = nullptr;
    mysql_plugin_registry_release(g_registry);
    g_registry = nullptr;
  }
  g_plugin = nullptr;
  return 0;
}

}  // namespace

mysql_declare_plugin(audit_log){
    MYSQL_AUDIT_PLUGIN,
    &audit_descriptor,
    "audit_log",
    "Strata",
    "Compliance audit log (Percona audit_log compatible variables and "
    "formats)",
    PLUGIN_LICENSE_GPL,
    audit_init,
    audit_check_uninstall,
    audit_deinit,
    0x0100,
    status_variables,
    system_variables,
    nullptr,
    0,
} mysql_declare_plugin_end;
