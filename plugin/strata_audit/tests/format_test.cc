#include <gtest/gtest.h>

#include <ctime>
#include <vector>

#include "format.h"

using namespace strata_audit;

namespace {
Stamp stamp() {
  Stamp s;
  s.record_id = 42;
  s.time_us = 1795400345123456;  // 2026-11-22T...
  s.server_id = 7;
  s.log_start = "2026-11-23T02:00:00";
  return s;
}
}  // namespace

TEST(Format, TimeHasMicroseconds) {
  std::string t;
  append_time(&t, 1000000LL * 86400 + 5, true);
  EXPECT_EQ(t, "1970-01-02T00:00:00.000005");
}

TEST(Format, JsonQuery) {
  Record r;
  r.kind = EventKind::kQuery;
  r.connection_id = 9;
  r.status = 1146;
  r.user = "root";
  r.priv_user = "root";
  r.host = "localhost";
  r.ip = "127.0.0.1";
  r.db = "test";
  r.command = "Query";
  r.command_class = "select";
  r.query = "select \"x\"\n from t";
  r.rows_sent = 3;
  r.rows_examined = 10;
  r.query_time_us = 77;
  std::string out;
  format_record(Format::kJson, r, stamp(), &out);
  std::string ts;
  append_time(&ts, stamp().time_us, true);
  EXPECT_EQ(out,
            "{\"audit_record\":{\"name\":\"Query\",\"record\":\"42_2026-11-23T02:00:00\","
            "\"record_id\":42,\"timestamp\":\"" + ts + " UTC\",\"server_id\":7,"
            "\"command_class\":\"select\",\"connection_id\":\"9\",\"status\":1146,"
            "\"sqltext\":\"select \\\"x\\\"\\n from t\","
            "\"user\":\"root[root] @ localhost [127.0.0.1]\",\"host\":\"localhost\","
            "\"os_user\":\"\",\"ip\":\"127.0.0.1\",\"db\":\"test\",\"command\":\"Query\","
            "\"rows_sent\":3,\"rows_examined\":10,\"query_time_us\":77}}\n");
}

TEST(Format, JsonConnectFields) {
  Record r;
  r.kind = EventKind::kConnect;
  r.connection_id = 5;
  r.status = 1045;
  r.user = "bob";
  r.host = "h";
  std::string out;
  format_record(Format::kJson, r, stamp(), &out);
  EXPECT_NE(out.find("\"name\":\"Connect\""), std::string::npos);
  EXPECT_NE(out.find("\"status\":1045"), std::string::npos);
  EXPECT_NE(out.find("\"os_login\":\"\""), std::string::npos);
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(out.find('\n'), out.size() - 1);
}

TEST(Format, CsvIsOneLineWithPerconaColumns) {
  Record r;
  r.kind = EventKind::kQuery;
  r.connection_id = 9;
  r.command_class = "insert";
  r.query = "insert into t values('a\"b'),('c\nd')";
  std::string out;
  format_record(Format::kCsv, r, stamp(), &out);
  EXPECT_EQ(out.find('\n'), out.size() - 1);
  EXPECT_EQ(out.rfind("\"Query\",\"42_2026-11-23T02:00:00\",", 0), 0u);
  EXPECT_NE(out.find("\"insert into t values('a\"\"b'),('c\\nd')\""), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 4), ",\"\"\n");  // db last: no server_id
}

TEST(Format, OldXmlEscapes) {
  Record r;
  r.kind = EventKind::kQuery;
  r.query = "select '<&>\"'";
  std::string out;
  format_record(Format::kOld, r, stamp(), &out);
  EXPECT_EQ(out.rfind("<AUDIT_RECORD NAME=\"Query\" RECORD=\"42_", 0), 0u);
  EXPECT_NE(out.find("SQLTEXT=\"select '&lt;&amp;&gt;&quot;'\""), std::string::npos);
  EXPECT_EQ(out.substr(out.size() - 3), "/>\n");
}

// The sink formats a record with a draft stamp outside its lock and puts in
// the real stamp under it: that must give exactly the record formatted with
// the real stamp, in every format and for every kind of record.
TEST(Format, RestampingTheSpanEqualsFormattingWithTheStamp) {
  const EventKind kinds[] = {EventKind::kConnect, EventKind::kQuery,
                             EventKind::kTableAccess, EventKind::kAuditConfig,
                             EventKind::kAuditStart};
  for (Format f : {Format::kJson, Format::kCsv, Format::kOld, Format::kNew}) {
    for (EventKind k : kinds) {
      Record r;
      r.kind = k;
      r.query = "select 1";
      r.user = "u";
      Stamp draft;
      draft.server_id = stamp().server_id;
      std::string body;
      StampSpan span;
      format_record(f, r, draft, &body, &span);
      ASSERT_LE(span.begin, span.end);
      ASSERT_LE(span.end, body.size());
      std::string restamped = body.substr(0, span.begin);
      format_stamp(f, stamp(), &restamped);
      restamped += body.substr(span.end);
      std::string direct;
      format_record(f, r, stamp(), &direct);
      EXPECT_EQ(restamped, direct) << format_name(f) << " kind " << int(k);
    }
  }
}

TEST(Format, ParseNames) {
  EXPECT_EQ(parse_format("json"), Format::kJson);
  EXPECT_EQ(parse_format("Csv"), Format::kCsv);
  EXPECT_EQ(parse_format("OLD"), Format::kOld);
  EXPECT_FALSE(parse_format("xml"));
}

// The lock-free calendar conversion agrees with gmtime_r, across leap
// years, century rules, negative times and far dates.
TEST(Format, CivilTimeMatchesGmtime) {
  std::vector<int64_t> secs = {0, -1, 86399, 86400, -86400, 951782400 /* 2000-02-29 */,
                               4107542400 /* 2100-03-01 */, -2208988800 /* 1900-01-01 */,
                               253402300799 /* 9999-12-31T23:59:59 */};
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < 200000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    secs.push_back(static_cast<int64_t>(x % 40000000000ull) - 10000000000);
  }
  for (int64_t s : secs) {
    const time_t t = static_cast<time_t>(s);
    struct tm tm;
    ASSERT_NE(gmtime_r(&t, &tm), nullptr);
    const CivilTime c = civil_time(s);
    ASSERT_EQ(c.year, tm.tm_year + 1900) << s;
    ASSERT_EQ(c.month, tm.tm_mon + 1) << s;
    ASSERT_EQ(c.day, tm.tm_mday) << s;
    ASSERT_EQ(c.hour, tm.tm_hour) << s;
    ASSERT_EQ(c.minute, tm.tm_min) << s;
    ASSERT_EQ(c.second, tm.tm_sec) << s;
  }
  std::string out;
  append_time(&out, 951782400LL * 1000000 + 5, true);
  EXPECT_EQ(out, "2000-02-29T00:00:00.000005");
}

// append_time keeps the text of the last second per thread: times that
// move forward, stay in a second, go back and cross a year are all right.
TEST(Format, TimeTextFollowsEverySecondChange) {
  const int64_t base = 1798761599LL;  // 2026-12-31T23:59:59
  const int64_t seq[] = {base, base, base + 1, base + 1, base - 86400, base, base + 2,
                         -1, 0, base + 31536000};
  int64_t micro = 17;
  for (int64_t s : seq) {
    const time_t t = static_cast<time_t>(s);
    struct tm tm;
    ASSERT_NE(gmtime_r(&t, &tm), nullptr);
    char want[64];
    snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%06lld", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
             static_cast<long long>(micro));
    std::string out;
    append_time(&out, s * 1000000 + micro, true);
    EXPECT_EQ(out, want) << s;
    micro = (micro * 7919 + 13) % 1000000;
  }
}
