#include <gtest/gtest.h>

#include "filter.h"

using namespace strata_audit;

namespace {

const std::vector<std::string> kCommands = {
    "select", "create_table", "insert", "update", "grant", "drop_table",
    "create_user", "set_option", "delete"};
enum { kSelect, kCreateTable, kInsert, kUpdate, kGrant, kDropTable,
       kCreateUser, kSetOption, kDelete };

std::shared_ptr<const Filter> build(const FilterSpec &s, std::string *err = nullptr) {
  std::string e;
  auto f = Filter::build(s, kCommands, &e);
  if (err) *err = e;
  return f;
}

}  // namespace

TEST(Filter, Policy) {
  FilterSpec s;
  s.policy = Policy::kLogins;
  auto f = build(s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->logins_enabled());
  EXPECT_FALSE(f->queries_enabled());
  s.policy = Policy::kNone;
  f = build(s);
  EXPECT_FALSE(f->logins_enabled());
  EXPECT_FALSE(f->queries_enabled());
}

TEST(Filter, Accounts) {
  FilterSpec s;
  s.include_accounts = "app@%, 'admin'@'localhost' , ro@10.0.0.%, `o,dd`@'h,st'";
  auto f = build(s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->account_passes("app", "%"));
  EXPECT_TRUE(f->account_passes("admin", "localhost"));
  EXPECT_TRUE(f->account_passes("admin", "LocalHost"));  // hosts ignore case
  EXPECT_FALSE(f->account_passes("Admin", "localhost"));  // users do not
  EXPECT_FALSE(f->account_passes("admin", "%"));
  EXPECT_TRUE(f->account_passes("ro", "10.0.0.%"));
  EXPECT_FALSE(f->account_passes("ro", "10.0.0.7"));
  EXPECT_TRUE(f->account_passes("o,dd", "h,st"));
  EXPECT_FALSE(f->account_passes("root", "localhost"));

  FilterSpec x;
  x.exclude_accounts = "monitor@localhost, ''@localhost";
  f = build(x);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->account_passes("monitor", "localhost"));
  EXPECT_FALSE(f->account_passes("", "localhost"));  // the anonymous account
  EXPECT_TRUE(f->account_passes("root", "localhost"));
}

TEST(Filter, AccountNamesAreLiteral) {
  // An entry names an account as CREATE USER does: '_' and '%' in it are
  // characters, compared with the account the session authenticated as.
  FilterSpec x;
  x.exclude_accounts = "svc_backup@%";
  auto f = build(x);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->account_passes("svc_backup", "%"));
  EXPECT_TRUE(f->account_passes("svcXbackup", "%"));
  EXPECT_TRUE(f->account_passes("svc_backupX", "%"));
  EXPECT_TRUE(f->account_passes("svc_backup", "localhost"));

  FilterSpec i;
  i.include_accounts = "app_ro@10.0.0.%";
  f = build(i);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->account_passes("app_ro", "10.0.0.%"));
  EXPECT_FALSE(f->account_passes("appXro", "10.0.0.%"));
  EXPECT_FALSE(f->account_passes("app_ro", "10.0.0.7"));
  EXPECT_FALSE(f->account_passes("app_ro", "10.0.0._"));
}

TEST(Filter, DatabaseNamesAreLiteral) {
  FilterSpec x;
  x.exclude_databases = "pay_roll";
  auto f = build(x);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->database_passes("pay_roll"));
  EXPECT_TRUE(f->database_passes("payXroll"));
  FilterSpec y;
  y.exclude_databases = "tmp%";
  f = build(y);
  EXPECT_TRUE(f->database_passes("tmp_payroll"));
  EXPECT_FALSE(f->database_passes("tmp%"));
}

TEST(Filter, Databases) {
  FilterSpec s;
  s.exclude_databases = "mysql,sys, `odd,name`";
  auto f = build(s);
  ASSERT_TRUE(f);
  EXPECT_FALSE(f->database_passes("mysql"));
  EXPECT_FALSE(f->database_passes("odd,name"));
  EXPECT_TRUE(f->database_passes("Mysql"));  // names compare byte for byte
  EXPECT_TRUE(f->database_passes("shop"));
  EXPECT_TRUE(f->database_passes(""));
  FilterSpec i;
  i.include_databases = "shop";
  f = build(i);
  EXPECT_TRUE(f->database_passes("shop"));
  EXPECT_FALSE(f->database_passes(""));
}

TEST(Filter, AStatementIsMatchedOnTheDatabasesItTouched) {
  // USE test; UPDATE payroll.t ...: the current database is test, the
  // server reports a table of payroll.
  FilterSpec i;
  i.include_databases = "payroll";
  auto f = build(i);
  ASSERT_TRUE(f);
  TouchedDatabases t;
  t.add("payroll");
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "test", kUpdate));
  t.add("test");  // any touched database listed: recorded
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "test", kUpdate));
  t.clear();
  t.add("test");  // USE payroll; SELECT FROM test.t: payroll not touched
  EXPECT_FALSE(f->statement_databases_pass(t.names(), "payroll", kSelect));
  t.clear();  // no table (SELECT 1, SET ...): the current database
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "payroll", kSelect));
  EXPECT_FALSE(f->statement_databases_pass(t.names(), "test", kSetOption));
  // DDL and DCL without tables reported (DROP TABLE payroll.t, GRANT ON
  // payroll.*) may name any database: they pass.
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "test", kDropTable));
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "test", kGrant));
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "", kCreateTable));

  FilterSpec x;
  x.exclude_databases = "scratch";
  f = build(x);
  ASSERT_TRUE(f);
  t.clear();
  t.add("scratch");
  EXPECT_FALSE(f->statement_databases_pass(t.names(), "scratch", kInsert));
  EXPECT_FALSE(f->statement_databases_pass(t.names(), "payroll", kInsert));
  t.add("payroll");  // not all touched databases excluded: recorded
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "scratch", kInsert));
  t.clear();
  EXPECT_FALSE(f->statement_databases_pass(t.names(), "scratch", kSelect));
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "scratch", kDropTable));
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "payroll", kSelect));

  FilterSpec none;
  f = build(none);
  t.clear();
  EXPECT_TRUE(f->statement_databases_pass(t.names(), "", kSelect));
  EXPECT_FALSE(f->filters_databases());
}

TEST(Filter, TouchedDatabasesKeepEachNameOnce) {
  TouchedDatabases t;
  for (int i = 0; i < 3; ++i) {
    t.add("a");
    t.add("b");
    t.add("");  // no database: ignored
  }
  EXPECT_EQ(t.names(), (std::vector<std::string>{"a", "b"}));
  t.clear();
  EXPECT_TRUE(t.names().empty());
}

TEST(Filter, CommandsAndGroups) {
  FilterSpec s;
  s.include_commands = "DDL,dcl";
  auto f = build(s);
  ASSERT_TRUE(f);
  EXPECT_TRUE(f->command_passes(kCreateTable));
  EXPECT_TRUE(f->command_passes(kDropTable));
  EXPECT_TRUE(f->command_passes(kGrant));
  EXPECT_TRUE(f->command_passes(kCreateUser));  // DCL, not DDL, but listed
  EXPECT_FALSE(f->command_passes(kSelect));
  EXPECT_FALSE(f->command_passes(kInsert));
  EXPECT_FALSE(f->command_passes(999));  // unknown fails an include list

  FilterSpec e;
  e.exclude_commands = "select";
  f = build(e);
  EXPECT_FALSE(f->command_passes(kSelect));
  EXPECT_TRUE(f->command_passes(kInsert));
  EXPECT_TRUE(f->command_passes(999));

  EXPECT_EQ(command_group("create_user"), "dcl");
  EXPECT_EQ(command_group("alter_table"), "ddl");
  EXPECT_EQ(command_group("insert_select"), "dml");
  EXPECT_EQ(command_group("select"), "");
}

TEST(Filter, BadSettingsAreRefusedWithReasons) {
  std::string err;
  FilterSpec a;
  a.include_accounts = "x@y";
  a.exclude_accounts = "z@w";
  EXPECT_FALSE(build(a, &err));
  EXPECT_NE(err.find("cannot both be set"), std::string::npos);

  FilterSpec b;
  b.include_accounts = "nohost";
  EXPECT_FALSE(build(b, &err));
  EXPECT_NE(err.find("user@host"), std::string::npos);

  FilterSpec c;
  c.include_commands = "select,frobnicate";
  EXPECT_FALSE(build(c, &err));
  EXPECT_NE(err.find("frobnicate"), std::string::npos);

  FilterSpec d;
  d.exclude_databases = "a,,b";
  EXPECT_FALSE(build(d, &err));
}
