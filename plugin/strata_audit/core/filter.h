// Which events are recorded: the policy and the include/exclude lists.
//
// A Filter is immutable once built (Filter::build validates everything and
// returns an error text for the DBA on bad input), so the plugin swaps a
// whole new Filter in on SET GLOBAL and sessions read it without locks other
// than the shared_ptr's reference count.
//
// Semantics (Percona Server's audit_log, whose variable names these are;
// docs/audit_log.md says why and where we differ):
// - policy ALL: logins and queries; LOGINS: connect/disconnect/change user
//   (failed logins included); QUERIES: statements and table access; NONE.
// - accounts: "user@host" entries, comma separated; quotes or backquotes
//   around either part are allowed (and needed for a ',' in a name). An
//   entry names an account as CREATE USER does and is compared with the
//   account the session authenticated as (CURRENT_USER(): the priv_user and
//   priv_host of the security context), never with the client's host:
//   '%' and '_' are ordinary characters there, so "svc_backup@%" is the
//   account 'svc_backup'@'%' and nothing else. User names compare
//   byte for byte; host names ignore ASCII case (MySQL stores them in lower
//   case). Applies to all events but failed logins (no account yet: the
//   glue records them whatever the lists say). include and exclude are
//   mutually exclusive (one must be empty).
// - databases: names, compared byte for byte ('%' and '_' are characters;
//   backquotes allowed). A statement is matched on the databases it touched
//   (the tables the server reported for it): an include list records it if
//   ANY of them is listed, an exclude list drops it only if ALL of them
//   are. A statement the server reports no table for is matched on the
//   session's current database, except DDL and DCL statements, which pass
//   database lists (they can name any database and the server does not say
//   which). Table access records: the table's database.
// - commands: sql command names as in Com_xxx ("select", "create_table") or
//   the groups "ddl", "dml", "dcl"; applies to statements and table access.
// - settings changes (audit_log_*) are always recorded, whatever the filter.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata_audit {

enum class Policy : uint8_t { kAll, kLogins, kQueries, kNone };

struct FilterSpec {
  Policy policy = Policy::kAll;
  std::string include_accounts, exclude_accounts;
  std::string include_databases, exclude_databases;
  std::string include_commands, exclude_commands;
};

// The group ("ddl", "dml", "dcl") of an sql command name, or "" for none.
std::string_view command_group(std::string_view command_name);

// The databases one statement touched, collected while it runs from the
// server's table access events. strata_audit.cc keeps one per session
// thread and clears it once the statement's record is decided. Not
// thread-safe (one session's events come on one thread).
class TouchedDatabases {
 public:
  // Empty names (no database) are ignored; each name is kept once.
  void add(std::string_view db);
  void clear() { names_.clear(); }
  const std::vector<std::string> &names() const { return names_; }

 private:
  std::vector<std::string> names_;  // few: a linear search is cheapest
};

class Filter {
 public:
  // known_commands[i] is the name of sql command i (the server's
  // sql_statement_names order); lists name commands by these names.
  // On error returns nullptr and sets *error to a sentence for the DBA.
  static std::shared_ptr<const Filter> build(
      const FilterSpec &spec, const std::vector<std::string> &known_commands,
      std::string *error);

  Policy policy() const { return policy_; }
  bool logins_enabled() const {
    return policy_ == Policy::kAll || policy_ == Policy::kLogins;
  }
  bool queries_enabled() const {
    return policy_ == Policy::kAll || policy_ == Policy::kQueries;
  }
  // priv_user, priv_host: the account the session authenticated as.
  bool account_passes(std::string_view priv_user,
                      std::string_view priv_host) const;
  // One database: a table access record's table.
  bool database_passes(std::string_view db) const;
  // A statement: the databases it touched (maybe none), the session's
  // current database and the statement's command (index into
  // known_commands). An include list passes it if ANY touched database is
  // listed, an exclude list drops it only if ALL are; with none touched,
  // DDL and DCL pass and others are matched on current_db.
  bool statement_databases_pass(const std::vector<std::string> &touched,
                                std::string_view current_db,
                                size_t command) const;
  // Whether a database list is set (else the touched set is not needed).
  bool filters_databases() const { return !databases_.empty(); }
  // command: index into known_commands; out of range = unknown (passes
  // unless an include list of commands is set).
  bool command_passes(size_t command) const;

 private:
  struct Account {
    std::string user, host;
  };
  Policy policy_ = Policy::kAll;
  std::vector<Account> accounts_;
  bool accounts_include_ = false;  // else exclude (when non-empty)
  std::vector<std::string> databases_;
  bool databases_include_ = false;
  std::vector<uint8_t> command_ok_;  // per known command
  std::vector<uint8_t> ddl_or_dcl_;  // per known command
  bool commands_include_ = false;    // unknown commands fail an include list
};

}  // namespace strata_audit
