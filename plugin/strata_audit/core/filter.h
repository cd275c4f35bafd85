// Which events are recorded: the policy and the include/exclude lists.
//
// A Filter is immutable once built (Filter::build validates everything and
// returns an error text for the DBA on bad input), so the plugin swaps a
// whole new Filter in on SET GLOBAL and sessions read it without locks other
// than the shared_ptr's reference count.
//
// Semantics (Percona audit_log compatible, with Strata extensions):
// - policy ALL: logins and queries; LOGINS: connect/disconnect/change user
//   (failed logins included); QUERIES: statements and table access; NONE.
// - accounts: "user@host" entries, comma separated; quotes or backquotes
//   around either part are allowed; '%' and '_' are wildcards as in GRANT.
//   The host part matches the client's host name or its IP. Applies to all
//   events. include and exclude are mutually exclusive (one must be empty).
// - databases: names (wildcards allowed); applies to statements and table
//   access, matched against the session's current database (table access:
//   the table's database).
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

// LIKE-style match: '%' any run, '_' one byte; case-insensitive iff ci.
bool wildcard_match(std::string_view pattern, std::string_view s, bool ci);

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
  bool account_passes(std::string_view user, std::string_view host,
                      std::string_view ip) const;
  bool database_passes(std::string_view db) const;
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
  bool commands_include_ = false;    // unknown commands fail an include list
};

}  // namespace strata_audit
