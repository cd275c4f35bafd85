// Our OLD, NEW and CSV records against the structure of Percona Server's
// audit_log records, as its documentation shows them (the expected records
// below are written from that structure, with values of our own): the same
// fields, named alike, in the same order, the timestamp printed as
// "YYYY-MM-DDTHH:MM:SS UTC", the same escaping. A small parser for each
// format reads our output back the way a consumer of Percona's files would.
//
// Layout: Percona puts each XML attribute or element on a line of its own;
// we write each record on one line (a space between attributes, nothing
// between elements), which XML parsers do not tell apart and which keeps
// one record per line for crash repair and syslog. OLD and NEW files are
// one XML document: <?xml ...?><AUDIT> ... </AUDIT> (footer at a clean
// close), as Percona writes them.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <utility>
#include <vector>

#include "format.h"

using namespace strata_audit;

namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Percona's field lists per record kind (names as in OLD and NEW; JSON and
// CSV use the same order).
const std::vector<std::string> kQueryFields = {
    "NAME", "RECORD", "TIMESTAMP", "COMMAND_CLASS", "CONNECTION_ID", "STATUS",
    "SQLTEXT", "USER", "HOST", "OS_USER", "IP", "DB"};
const std::vector<std::string> kConnectFields = {
    "NAME", "RECORD", "TIMESTAMP", "CONNECTION_ID", "STATUS", "USER",
    "PRIV_USER", "OS_LOGIN", "PROXY_USER", "HOST", "IP", "DB"};
const std::vector<std::string> kAuditFields = {
    "NAME", "RECORD", "TIMESTAMP", "MYSQL_VERSION", "STARTUP_OPTIONS",
    "OS_VERSION"};

std::string xml_unescape(const std::string &s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out += s[i];
      continue;
    }
    const size_t semi = s.find(';', i);
    const std::string ent = s.substr(i + 1, semi - i - 1);
    if (ent == "lt") out += '<';
    else if (ent == "gt") out += '>';
    else if (ent == "amp") out += '&';
    else if (ent == "quot") out += '"';
    else if (ent[0] == '#') out += static_cast<char>(std::stoi(ent.substr(1)));
    else ADD_FAILURE() << "unknown entity " << ent;
    i = semi;
  }
  return out;
}

// <AUDIT_RECORD A="v" B="v"/> with any whitespace between attributes.
bool parse_old(const std::string &rec, Fields *f) {
  static const std::regex head(R"re(^<AUDIT_RECORD\s+)re");
  std::smatch m;
  if (!std::regex_search(rec, m, head)) return false;
  std::string rest = m.suffix();
  static const std::regex attr(R"re(^([A-Z_]+)="([^"<]*)"\s*)re");
  while (std::regex_search(rest, m, attr)) {
    f->emplace_back(m[1], xml_unescape(m[2]));
    rest = m.suffix();
  }
  return rest == "/>\n";
}

// <AUDIT_RECORD><A>v</A>...</AUDIT_RECORD> with any whitespace between.
bool parse_new(const std::string &rec, Fields *f) {
  static const std::regex head(R"re(^<AUDIT_RECORD>\s*)re");
  std::smatch m;
  if (!std::regex_search(rec, m, head)) return false;
  std::string rest = m.suffix();
  static const std::regex elem(R"re(^<([A-Z_]+)>([^<]*)</([A-Z_]+)>\s*)re");
  while (std::regex_search(rest, m, elem)) {
    if (m[1] != m[3]) return false;
    f->emplace_back(m[1], xml_unescape(m[2]));
    rest = m.suffix();
  }
  return rest == "</AUDIT_RECORD>\n";
}

// RFC 4180 fields; quoted[i] says whether field i was quoted.
bool parse_csv(const std::string &rec, std::vector<std::string> *v,
               std::vector<bool> *quoted) {
  size_t i = 0;
  for (;;) {
    std::string field;
    bool q = false;
    if (i < rec.size() && rec[i] == '"') {
      q = true;
      ++i;
      for (;;) {
        if (i >= rec.size()) return false;
        if (rec[i] == '"') {
          if (i + 1 < rec.size() && rec[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        field += rec[i++];
      }
    } else {
      while (i < rec.size() && rec[i] != ',' && rec[i] != '\n') field += rec[i++];
    }
    v->push_back(field);
    quoted->push_back(q);
    if (i < rec.size() && rec[i] == ',') {
      ++i;
      continue;
    }
    return i + 1 == rec.size() && rec[i] == '\n';
  }
}

std::vector<std::string> names(const Fields &f) {
  std::vector<std::string> n;
  for (const auto &p : f) n.push_back(p.first);
  return n;
}

std::string value(const Fields &f, const std::string &name) {
  for (const auto &p : f)
    if (p.first == name) return p.second;
  return "<missing>";
}

Stamp stamp() {
  Stamp s;
  s.record_id = 3;
  s.time_us = 1795400345123456;  // 2026-11-23T02:19:05.123456 UTC
  s.server_id = 7;
  s.log_start = "2026-11-23T02:00:00";
  return s;
}

Record query() {
  Record r;
  r.kind = EventKind::kQuery;
  r.connection_id = 12;
  r.status = 0;
  r.user = "app";
  r.priv_user = "app";
  r.host = "localhost";
  r.ip = "";
  r.db = "shop";
  r.command = "Query";
  r.command_class = "select";
  r.query = "select id from orders where note = 'x'";
  r.rows_sent = 1;
  return r;
}

Record connect() {
  Record r;
  r.kind = EventKind::kConnect;
  r.connection_id = 12;
  r.status = 1045;
  r.user = "app";
  r.priv_user = "app";
  r.host = "localhost";
  r.db = "shop";
  return r;
}

Record audit_start() {
  Record r;
  r.kind = EventKind::kAuditStart;
  r.value = "9.7.0-strata";
  return r;
}

std::string fmt(Format f, const Record &r) {
  std::string out;
  format_record(f, r, stamp(), &out);
  return out;
}

const std::regex kPerconaTime(R"re(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d UTC$)re");

}  // namespace

TEST(PerconaFormat, OldQueryIsPerconasRecordOnOneLine) {
  // A Query record as Percona's documentation shows it, written with our
  // values and our one-line layout.
  EXPECT_EQ(fmt(Format::kOld, query()),
            "<AUDIT_RECORD NAME=\"Query\" RECORD=\"3_2026-11-23T02:00:00\" "
            "TIMESTAMP=\"2026-11-23T02:19:05 UTC\" COMMAND_CLASS=\"select\" "
            "CONNECTION_ID=\"12\" STATUS=\"0\" "
            "SQLTEXT=\"select id from orders where note = 'x'\" "
            "USER=\"app[app] @ localhost []\" HOST=\"localhost\" OS_USER=\"\" "
            "IP=\"\" DB=\"shop\"/>\n");
}

TEST(PerconaFormat, OldRecordsHavePerconasAttributesInOrder) {
  Fields f;
  ASSERT_TRUE(parse_old(fmt(Format::kOld, query()), &f)) << fmt(Format::kOld, query());
  EXPECT_EQ(names(f), kQueryFields);
  EXPECT_TRUE(std::regex_match(value(f, "TIMESTAMP"), kPerconaTime)) << value(f, "TIMESTAMP");
  f.clear();
  ASSERT_TRUE(parse_old(fmt(Format::kOld, connect()), &f));
  EXPECT_EQ(names(f), kConnectFields);
  EXPECT_EQ(value(f, "STATUS"), "1045");
  EXPECT_EQ(value(f, "PRIV_USER"), "app");
  f.clear();
  ASSERT_TRUE(parse_old(fmt(Format::kOld, audit_start()), &f));
  EXPECT_EQ(names(f), kAuditFields);
  EXPECT_EQ(value(f, "NAME"), "Audit");
  EXPECT_EQ(value(f, "MYSQL_VERSION"), "9.7.0-strata");
}

TEST(PerconaFormat, XmlEscapingIsPerconas) {
  // Percona: < > & " as entities, control characters as &#N; (tab, newline
  // and carriage return too), NUL as '?'; everything else as it is.
  Record r = query();
  const std::string text("a<b>&\"c'\td\ne\rf\x01g\x1fh", 18);
  const std::string with_nul = text + std::string(1, '\0') + "i";
  r.query = with_nul;  // a view: the string must outlive r
  Fields f;
  const std::string out = fmt(Format::kOld, r);
  ASSERT_TRUE(parse_old(out, &f)) << out;
  EXPECT_NE(out.find("SQLTEXT=\"a&lt;b&gt;&amp;&quot;c'&#9;d&#10;e&#13;f&#1;g&#31;h?i\""),
            std::string::npos) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1);  // one line
}

TEST(PerconaFormat, CsvRecordsHavePerconasColumns) {
  // Query: "name","record","timestamp","command_class","connection_id",
  // status,"sqltext","user","host","os_user","ip","db" (status unquoted).
  std::vector<std::string> v;
  std::vector<bool> q;
  const std::string out = fmt(Format::kCsv, query());
  ASSERT_TRUE(parse_csv(out, &v, &q)) << out;
  EXPECT_EQ(v, (std::vector<std::string>{
                   "Query", "3_2026-11-23T02:00:00", "2026-11-23T02:19:05 UTC",
                   "select", "12", "0", "select id from orders where note = 'x'",
                   "app[app] @ localhost []", "localhost", "", "", "shop"}));
  EXPECT_EQ(q, (std::vector<bool>{true, true, true, true, true, false, true,
                                  true, true, true, true, true}));
  EXPECT_EQ(out,
            "\"Query\",\"3_2026-11-23T02:00:00\",\"2026-11-23T02:19:05 UTC\","
            "\"select\",\"12\",0,\"select id from orders where note = 'x'\","
            "\"app[app] @ localhost []\",\"localhost\",\"\",\"\",\"shop\"\n");
  // Connect: ...,"connection_id",status,"user","priv_user","os_login",
  // "proxy_user","host","ip","db".
  v.clear();
  q.clear();
  ASSERT_TRUE(parse_csv(fmt(Format::kCsv, connect()), &v, &q));
  EXPECT_EQ(v, (std::vector<std::string>{
                   "Connect", "3_2026-11-23T02:00:00", "2026-11-23T02:19:05 UTC",
                   "12", "1045", "app", "app", "", "", "localhost", "", "shop"}));
  EXPECT_EQ(q[4], false);
  // Audit: "name","record","timestamp","mysql_version","startup_options",
  // "os_version".
  v.clear();
  q.clear();
  ASSERT_TRUE(parse_csv(fmt(Format::kCsv, audit_start()), &v, &q));
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0], "Audit");
  EXPECT_EQ(v[3], "9.7.0-strata");
}

TEST(PerconaFormat, CsvDoublesQuotesAndKeepsOneRecordPerLine) {
  // Percona doubles '"' and leaves other bytes alone; a raw newline inside
  // a quoted field would be valid CSV, but a record cut by a crash could
  // then not be told from a whole one, so newlines (and carriage returns)
  // are written as \n and \r and a backslash as \\ (docs/audit_log.md).
  Record r = query();
  r.query = "insert into t values ('a\"b', 'c\\d')";
  std::vector<std::string> v;
  std::vector<bool> q;
  ASSERT_TRUE(parse_csv(fmt(Format::kCsv, r), &v, &q));
  EXPECT_EQ(v[6], "insert into t values ('a\"b', 'c\\\\d')");
  r.query = "select 1\nfrom dual";
  const std::string out = fmt(Format::kCsv, r);
  EXPECT_EQ(out.find('\n'), out.size() - 1);
}

TEST(PerconaFormat, NewRecordsHavePerconasElementsInOrder) {
  EXPECT_EQ(fmt(Format::kNew, query()),
            "<AUDIT_RECORD><NAME>Query</NAME>"
            "<RECORD>3_2026-11-23T02:00:00</RECORD>"
            "<TIMESTAMP>2026-11-23T02:19:05 UTC</TIMESTAMP>"
            "<COMMAND_CLASS>select</COMMAND_CLASS><CONNECTION_ID>12</CONNECTION_ID>"
            "<STATUS>0</STATUS>"
            "<SQLTEXT>select id from orders where note = 'x'</SQLTEXT>"
            "<USER>app[app] @ localhost []</USER><HOST>localhost</HOST>"
            "<OS_USER></OS_USER><IP></IP><DB>shop</DB></AUDIT_RECORD>\n");
  Fields f;
  ASSERT_TRUE(parse_new(fmt(Format::kNew, connect()), &f));
  EXPECT_EQ(names(f), kConnectFields);
  f.clear();
  ASSERT_TRUE(parse_new(fmt(Format::kNew, audit_start()), &f));
  EXPECT_EQ(names(f), kAuditFields);
  f.clear();
  Record r = query();
  r.query = "select '<x>' & \"y\"\n";
  ASSERT_TRUE(parse_new(fmt(Format::kNew, r), &f));
  EXPECT_EQ(value(f, "SQLTEXT"), "select '<x>' & \"y\"\n");
}

TEST(PerconaFormat, OurOwnKindsHaveTheQueryFieldsFirst) {
  Record t = query();
  t.kind = EventKind::kTableAccess;
  t.table_op = "update";
  t.table_db = "payroll";
  t.table = "t";
  Record c = query();
  c.kind = EventKind::kAuditConfig;
  c.variable = "audit_log_policy";
  c.value = "ALL";
  for (Format fm : {Format::kOld, Format::kNew}) {
    Fields f;
    const std::string out = fmt(fm, t);
    ASSERT_TRUE(fm == Format::kOld ? parse_old(out, &f) : parse_new(out, &f)) << out;
    std::vector<std::string> want = kQueryFields;
    want.insert(want.end(), {"TABLE_OP", "TABLE_DB", "TABLE"});
    EXPECT_EQ(names(f), want);
    EXPECT_EQ(value(f, "NAME"), "TableAccess");
    f.clear();
    const std::string out2 = fmt(fm, c);
    ASSERT_TRUE(fm == Format::kOld ? parse_old(out2, &f) : parse_new(out2, &f)) << out2;
    want = kQueryFields;
    want.insert(want.end(), {"VARIABLE", "VALUE"});
    EXPECT_EQ(names(f), want);
  }
  std::vector<std::string> v;
  std::vector<bool> q;
  ASSERT_TRUE(parse_csv(fmt(Format::kCsv, c), &v, &q));
  ASSERT_EQ(v.size(), 14u);
  EXPECT_EQ(v[12], "audit_log_policy");
  EXPECT_EQ(v[13], "ALL");
}

TEST(PerconaFormat, FormatNames) {
  EXPECT_EQ(parse_format("new"), Format::kNew);
  EXPECT_EQ(format_name(Format::kNew), "NEW");
  EXPECT_EQ(file_header(Format::kNew), file_header(Format::kOld));
  EXPECT_EQ(file_header(Format::kOld),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AUDIT>\n");
  EXPECT_EQ(file_footer(Format::kOld), "</AUDIT>\n");
  EXPECT_EQ(file_header(Format::kCsv), "");
  EXPECT_EQ(file_footer(Format::kJson), "");
}
