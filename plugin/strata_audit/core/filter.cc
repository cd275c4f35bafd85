#include "filter.h"

#include <algorithm>

namespace strata_audit {

namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? c - 'A' + 'a' : c; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits on commas outside quotes ('...', "...", `...`).
std::vector<std::string_view> split_commas(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  char quote = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && quote != 0) {
      if (s[i] == quote) quote = 0;
      continue;
    }
    if (i < s.size() && (s[i] == '\'' || s[i] == '"' || s[i] == '`')) {
      quote = s[i];
      continue;
    }
    if (i == s.size() || s[i] == ',') {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

// The '@' that separates user and host: the last one outside quotes.
size_t account_at(std::string_view s) {
  size_t at = std::string_view::npos;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (quote != 0) {
      if (s[i] == quote) quote = 0;
    } else if (s[i] == '\'' || s[i] == '"' || s[i] == '`') {
      quote = s[i];
    } else if (s[i] == '@') {
      at = i;
    }
  }
  return at;
}

bool equal_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

// Strips one level of matching quotes ('x', "x", `x`).
std::string_view unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"' || s.front() == '`') &&
      s.back() == s.front())
    return s.substr(1, s.size() - 2);
  return s;
}

bool both_set(const std::string &a, const std::string &b) {
  return !trim(a).empty() && !trim(b).empty();
}

}  // namespace

std::string_view command_group(std::string_view n) {
  static constexpr std::string_view kDcl[] = {
      "grant",        "revoke",       "revoke_all",     "create_user",
      "drop_user",    "rename_user",  "alter_user",     "alter_user_default_role",
      "set_password", "create_role",  "drop_role",      "grant_roles",
      "revoke_roles", "set_role"};
  static constexpr std::string_view kDml[] = {
      "insert", "insert_select", "update",  "update_multi",   "delete",
      "delete_multi", "replace", "replace_select", "load", "call"};
  for (auto d : kDcl)
    if (n == d) return "dcl";
  for (auto d : kDml)
    if (n == d) return "dml";
  if (n.starts_with("create_") || n.starts_with("alter_") ||
      n.starts_with("drop_") || n.starts_with("rename_") || n == "truncate")
    return "ddl";
  return "";
}

void TouchedDatabases::add(std::string_view db) {
  if (db.empty()) return;
  for (const auto &n : names_)
    if (n == db) return;
  names_.emplace_back(db);
}

std::shared_ptr<const Filter> Filter::build(
    const FilterSpec &spec, const std::vector<std::string> &known_commands,
    std::string *error) {
  auto f = std::make_shared<Filter>();
  f->policy_ = spec.policy;

  if (both_set(spec.include_accounts, spec.exclude_accounts)) {
    *error = "audit_log_include_accounts and audit_log_exclude_accounts cannot both be set";
    return nullptr;
  }
  if (both_set(spec.include_databases, spec.exclude_databases)) {
    *error = "audit_log_include_databases and audit_log_exclude_databases cannot both be set";
    return nullptr;
  }
  if (both_set(spec.include_commands, spec.exclude_commands)) {
    *error = "audit_log_include_commands and audit_log_exclude_commands cannot both be set";
    return nullptr;
  }

  // Accounts.
  f->accounts_include_ = !trim(spec.include_accounts).empty();
  const std::string &acc =
      f->accounts_include_ ? spec.include_accounts : spec.exclude_accounts;
  if (!trim(acc).empty()) {
    for (auto item : split_commas(acc)) {
      const size_t at = account_at(item);
      if (item.empty() || at == std::string_view::npos) {
        *error = "account '" + std::string(item) +
                 "' is not of the form user@host";
        return nullptr;
      }
      Account a{std::string(unquote(trim(item.substr(0, at)))),
                std::string(unquote(trim(item.substr(at + 1))))};
      if (a.host.empty()) {
        *error = "account '" + std::string(item) + "' has an empty host";
        return nullptr;
      }
      f->accounts_.push_back(std::move(a));
    }
  }

  // Databases.
  f->databases_include_ = !trim(spec.include_databases).empty();
  const std::string &dbs =
      f->databases_include_ ? spec.include_databases : spec.exclude_databases;
  if (!trim(dbs).empty()) {
    for (auto item : split_commas(dbs)) {
      std::string_view name = unquote(item);
      if (name.empty()) {
        *error = "empty database name in list '" + dbs + "'";
        return nullptr;
      }
      f->databases_.emplace_back(name);
    }
  }

  // Commands.
  f->commands_include_ = !trim(spec.include_commands).empty();
  const std::string &cmds =
      f->commands_include_ ? spec.include_commands : spec.exclude_commands;
  f->command_ok_.assign(known_commands.size(), 1);
  f->ddl_or_dcl_.assign(known_commands.size(), 0);
  for (size_t i = 0; i < known_commands.size(); ++i) {
    const std::string_view g = command_group(known_commands[i]);
    f->ddl_or_dcl_[i] = g == "ddl" || g == "dcl";
  }
  if (!trim(cmds).empty()) {
    std::vector<uint8_t> listed(known_commands.size(), 0);
    for (auto item : split_commas(cmds)) {
      std::string name;
      for (char c : item) name.push_back(lower(c));
      bool found = false;
      for (size_t i = 0; i < known_commands.size(); ++i) {
        if (known_commands[i] == name || command_group(known_commands[i]) == name) {
          listed[i] = 1;
          found = true;
        }
      }
      if (!found && name != "ddl" && name != "dml" && name != "dcl") {
        *error = "unknown command '" + std::string(item) +
                 "' (use sql command names such as select, insert, "
                 "create_table, or the groups ddl, dml, dcl)";
        return nullptr;
      }
    }
    for (size_t i = 0; i < listed.size(); ++i)
      f->command_ok_[i] = f->commands_include_ ? listed[i] : !listed[i];
  }
  return f;
}

bool Filter::account_passes(std::string_view priv_user,
                            std::string_view priv_host) const {
  if (accounts_.empty()) return true;
  bool listed = false;
  for (const auto &a : accounts_) {
    if (a.user == priv_user && equal_ci(a.host, priv_host)) {
      listed = true;
      break;
    }
  }
  return accounts_include_ ? listed : !listed;
}

bool Filter::database_passes(std::string_view db) const {
  if (databases_.empty()) return true;
  const bool listed =
      std::find(databases_.begin(), databases_.end(), db) != databases_.end();
  return databases_include_ ? listed : !listed;
}

bool Filter::statement_databases_pass(const std::vector<std::string> &touched,
                                      std::string_view current_db,
                                      size_t command) const {
  if (databases_.empty()) return true;
  if (touched.empty()) {
    // The server reports tables only for DML. DDL and DCL name their
    // objects in the statement text, in any database: they pass, so that
    // DROP TABLE payroll.t from another database cannot hide.
    if (command < ddl_or_dcl_.size() && ddl_or_dcl_[command] != 0) return true;
    return database_passes(current_db);
  }
  // Include: recorded if any is listed; exclude: dropped only if all are
  // listed. Either way: recorded iff some touched database passes alone.
  for (const auto &db : touched)
    if (database_passes(db)) return true;
  return false;
}

bool Filter::command_passes(size_t command) const {
  if (command < command_ok_.size()) return command_ok_[command] != 0;
  return !commands_include_;
}

}  // namespace strata_audit
