// One audit event, as the plugin glue hands it to the core.
//
// All string_views point into memory owned by the caller (the server's event
// structures) and are only read during AuditLog::append(); the core never
// keeps them. The sink adds what must be assigned in file order when it
// reserves the record's place: the record id, the timestamp and the server
// id (see Stamp).
#pragma once

#include <cstdint>
#include <string_view>

namespace strata_audit {

enum class EventKind : uint8_t {
  kConnect,       // login (status != 0: failed login)
  kDisconnect,    // "Quit"
  kChangeUser,    // COM_CHANGE_USER
  kQuery,         // one statement/command after it ran
  kTableAccess,   // table read/insert/update/delete (table_op says which)
  kAuditConfig,   // an audit_log_* setting changed (always recorded)
  kAuditStart,    // the log was opened (plugin start)
  kAuditStop,     // the log is being closed (plugin stop); keep it last
                  // (raw_record.cc checks kinds against it)
};

// The record's "name" field, as Percona's audit_log names them.
std::string_view event_name(EventKind kind);

struct Record {
  EventKind kind = EventKind::kQuery;
  uint64_t connection_id = 0;
  int status = 0;  // MySQL error code, 0 = success

  // Who.
  std::string_view user;       // login user
  std::string_view priv_user;  // account matched (mysql.user)
  std::string_view host;
  std::string_view ip;
  std::string_view os_user;     // external user (auth plugins)
  std::string_view proxy_user;
  std::string_view db;

  // What (queries and table access).
  std::string_view command;        // "Query", "Execute", ...
  std::string_view command_class;  // sql command name: "select", "create_table"
  std::string_view query;          // after truncation/redaction
  bool query_truncated = false;
  uint64_t rows_sent = 0;
  uint64_t rows_examined = 0;
  uint64_t query_time_us = 0;  // wall time of the statement
  std::string_view table_op;   // "read", "insert", "update", "delete"
  std::string_view table_db;
  std::string_view table;

  // Settings changes and start/stop.
  std::string_view variable;
  std::string_view value;
};

// Assigned by the sink, in file order.
struct Stamp {
  uint64_t record_id = 0;
  int64_t time_us = 0;          // microseconds since the Unix epoch, UTC
  uint64_t server_id = 0;
  std::string_view log_start;   // "YYYY-MM-DDTHH:MM:SS" of the log's start
};

}  // namespace strata_audit
