#include "format.h"

#include <charconv>
#include <climits>
#include <sys/utsname.h>

#include <cstring>
#include <ctime>

#include "json.h"
#include "text_out.h"

namespace strata_audit {

std::string_view event_name(EventKind kind) {
  switch (kind) {
    case EventKind::kConnect: return "Connect";
    case EventKind::kDisconnect: return "Quit";
    case EventKind::kChangeUser: return "Change user";
    case EventKind::kQuery: return "Query";
    case EventKind::kTableAccess: return "TableAccess";
    case EventKind::kAuditConfig: return "Audit_config";
    case EventKind::kAuditStart: return "Audit";
    case EventKind::kAuditStop: return "NoAudit";
  }
  return "Unknown";
}

std::optional<Format> parse_format(std::string_view name) {
  auto eq = [&](std::string_view w) {
    if (w.size() != name.size()) return false;
    for (size_t i = 0; i < w.size(); ++i) {
      char c = name[i];
      if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
      if (c != w[i]) return false;
    }
    return true;
  };
  if (eq("JSON")) return Format::kJson;
  if (eq("CSV")) return Format::kCsv;
  if (eq("OLD")) return Format::kOld;
  if (eq("NEW")) return Format::kNew;
  return std::nullopt;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::kJson: return "JSON";
    case Format::kCsv: return "CSV";
    case Format::kOld: return "OLD";
    case Format::kNew: return "NEW";
  }
  return "?";
}

std::string_view file_header(Format f) {
  if (f == Format::kOld || f == Format::kNew)
    return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AUDIT>\n";
  return "";
}

std::string_view file_footer(Format f) {
  if (f == Format::kOld || f == Format::kNew) return "</AUDIT>\n";
  return "";
}

namespace {

void append_uint(TextOut &out, uint64_t v) {
  char *p = out.reserve(20);
  out.commit(static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - p));
}

void append_int(TextOut &out, int64_t v) {
  char *p = out.reserve(20);
  out.commit(static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - p));
}

char *put_2(char *p, int v) {
  p[0] = static_cast<char>('0' + v / 10 % 10);
  p[1] = static_cast<char>('0' + v % 10);
  return p + 2;
}

// "YYYY-MM-DDTHH:MM:SS" of a Unix time in seconds. Consecutive records
// mostly fall in the same second: the text is kept per thread and the
// calendar arithmetic runs once a second.
void append_seconds(TextOut &out, int64_t secs) {
  thread_local int64_t cached_secs = INT64_MIN;
  thread_local char cached[32];
  thread_local size_t cached_len = 0;
  if (secs != cached_secs) {
    const CivilTime t = civil_time(secs);
    char *p = std::to_chars(cached, cached + 20, t.year).ptr;
    *p++ = '-';
    p = put_2(p, t.month);
    *p++ = '-';
    p = put_2(p, t.day);
    *p++ = 'T';
    p = put_2(p, t.hour);
    *p++ = ':';
    p = put_2(p, t.minute);
    *p++ = ':';
    p = put_2(p, t.second);
    cached_len = static_cast<size_t>(p - cached);
    cached_secs = secs;
  }
  out.put(std::string_view(cached, cached_len));
}

void append_time(TextOut &out, int64_t time_us, bool micros) {
  int64_t secs = time_us / 1000000;
  int64_t us = time_us % 1000000;
  if (us < 0) {
    us += 1000000;
    --secs;
  }
  append_seconds(out, secs);
  if (micros) {
    char *p = out.reserve(7);
    p[0] = '.';
    for (int i = 6; i >= 1; --i) {
      p[i] = static_cast<char>('0' + us % 10);
      us /= 10;
    }
    out.commit(7);
  }
}

// "root[root] @ localhost [127.0.0.1]", as Percona writes the user of a query.
std::string_view percona_user(const Record &r, std::string *tmp) {
  tmp->clear();
  TextOut o(tmp);
  o.put(r.user);
  o.put('[');
  o.put(r.priv_user);
  o.put("] @ ");
  o.put(r.host);
  o.put(" [");
  o.put(r.ip);
  o.put(']');
  return std::string_view(tmp->data(), o.size());  // trimmed to this by ~TextOut
}

void append_record_field(TextOut &out, const Stamp &s) {
  append_uint(out, s.record_id);
  out.put('_');
  out.put(s.log_start);
}

// ---- JSON ----

class JsonObject {
 public:
  explicit JsonObject(TextOut &out) : out_(out) {}
  void str(std::string_view key, std::string_view v) {
    sep(key);
    append_json_string(out_, v);
  }
  void u64(std::string_view key, uint64_t v) {
    sep(key);
    append_uint(out_, v);
  }
  void i64(std::string_view key, int64_t v) {
    sep(key);
    append_int(out_, v);
  }
  // A number written as a string (Percona writes connection_id that way).
  void u64_str(std::string_view key, uint64_t v) {
    sep(key);
    out_.put('"');
    append_uint(out_, v);
    out_.put('"');
  }
  void raw(std::string_view key, std::string_view v) {
    sep(key);
    out_.put(v);
  }
  // "user":"root[root] @ localhost [127.0.0.1]", escaped piece by piece.
  void percona_user(const Record &r) {
    sep("user");
    out_.put('"');
    append_json_chars(out_, r.user);
    out_.put('[');
    append_json_chars(out_, r.priv_user);
    out_.put("] @ ");
    append_json_chars(out_, r.host);
    out_.put(" [");
    append_json_chars(out_, r.ip);
    out_.put("]\"");
  }
  void sep(std::string_view key) {
    // keys are our literals: no escaping needed
    char *p = out_.reserve(key.size() + 4);
    size_t n = 0;
    if (!first_) p[n++] = ',';
    first_ = false;
    p[n++] = '"';
    std::memcpy(p + n, key.data(), key.size());
    n += key.size();
    p[n++] = '"';
    p[n++] = ':';
    out_.commit(n);
  }

 private:
  TextOut &out_;
  bool first_ = true;
};

// The stamped fields; they follow "name", so they start with a comma.
void json_stamp(const Stamp &s, TextOut &out) {
  out.put(",\"record\":\"");
  append_record_field(out, s);
  out.put("\",\"record_id\":");
  append_uint(out, s.record_id);
  out.put(",\"timestamp\":\"");
  append_time(out, s.time_us, true);
  out.put(" UTC\"");
}

void format_json(const Record &r, const Stamp &s, TextOut &out,
                 StampSpan *span) {
  out.put("{\"audit_record\":{");
  JsonObject o(out);
  o.str("name", event_name(r.kind));
  span->begin = out.size();
  json_stamp(s, out);
  span->end = out.size();
  o.u64("server_id", s.server_id);
  switch (r.kind) {
    case EventKind::kConnect:
    case EventKind::kDisconnect:
    case EventKind::kChangeUser:
      o.u64_str("connection_id", r.connection_id);
      o.i64("status", r.status);
      o.str("user", r.user);
      o.str("priv_user", r.priv_user);
      o.str("os_login", r.os_user);
      o.str("proxy_user", r.proxy_user);
      o.str("host", r.host);
      o.str("ip", r.ip);
      o.str("db", r.db);
      break;
    case EventKind::kQuery:
    case EventKind::kTableAccess:
      o.str("command_class", r.command_class);
      o.u64_str("connection_id", r.connection_id);
      o.i64("status", r.status);
      o.str("sqltext", r.query);
      if (r.query_truncated) o.raw("sqltext_truncated", "true");
      o.percona_user(r);
      o.str("host", r.host);
      o.str("os_user", r.os_user);
      o.str("ip", r.ip);
      o.str("db", r.db);
      if (r.kind == EventKind::kQuery) {
        o.str("command", r.command);
        o.u64("rows_sent", r.rows_sent);
        o.u64("rows_examined", r.rows_examined);
        o.u64("query_time_us", r.query_time_us);
      } else {
        o.str("table_op", r.table_op);
        o.str("table_db", r.table_db);
        o.str("table", r.table);
      }
      break;
    case EventKind::kAuditConfig:
      o.u64_str("connection_id", r.connection_id);
      o.percona_user(r);
      o.str("variable", r.variable);
      o.str("value", r.value);
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      o.str("mysql_version", r.value);
      break;
  }
  out.put("}}\n");
}

// ---- CSV ----

void append_csv_string(TextOut &out, std::string_view v) {
  out.put('"');
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out.put("\"\"");
    } else if (c == '\\') {
      out.put("\\\\");
    } else if (c == '\n') {
      out.put("\\n");
    } else if (c == '\r') {
      out.put("\\r");
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out.put("\\x");
      out.put(kHex[c >> 4]);
      out.put(kHex[c & 0xf]);
    } else {
      out.put(ch);
    }
  }
  out.put('"');
}

// The time as Percona's OLD, NEW and CSV formats print it.
void percona_time(TextOut &out, int64_t time_us) {
  append_time(out, time_us, false);
  out.put(" UTC");
}

// "x86_64-Linux": what Percona's Audit records call OS_VERSION (its build's
// machine and system type); here the running system's, read once.
std::string_view os_version() {
  static const std::string v = [] {
    struct utsname u;
    if (::uname(&u) != 0) return std::string();
    return std::string(u.machine) + "-" + u.sysname;
  }();
  return v;
}

void csv_stamp(const Stamp &s, TextOut &out) {
  out.put(",\"");
  append_record_field(out, s);
  out.put("\",\"");
  percona_time(out, s.time_us);
  out.put('"');
}

// Percona's CSV columns per record (name, record and timestamp first), and
// for our own kinds (TableAccess, Audit_config) the Query columns followed
// by theirs. No server_id: the columns are exactly Percona's.
void format_csv(const Record &r, const Stamp &s, TextOut &out,
                StampSpan *span) {
  auto str = [&](std::string_view v) {
    out.put(',');
    append_csv_string(out, v);
  };
  auto num = [&](int64_t v) {
    out.put(',');
    append_int(out, v);
  };
  auto quoted_num = [&](uint64_t v) {
    out.put(",\"");
    append_uint(out, v);
    out.put('"');
  };
  append_csv_string(out, event_name(r.kind));
  span->begin = out.size();
  csv_stamp(s, out);
  span->end = out.size();
  thread_local std::string tmp;  // reused: no allocation per record
  switch (r.kind) {
    case EventKind::kConnect:
    case EventKind::kDisconnect:
    case EventKind::kChangeUser:
      quoted_num(r.connection_id);
      num(r.status);
      str(r.user);
      str(r.priv_user);
      str(r.os_user);
      str(r.proxy_user);
      str(r.host);
      str(r.ip);
      str(r.db);
      break;
    case EventKind::kQuery:
    case EventKind::kTableAccess:
    case EventKind::kAuditConfig:
      str(r.command_class);
      quoted_num(r.connection_id);
      num(r.status);
      str(r.query);
      str(percona_user(r, &tmp));
      str(r.host);
      str(r.os_user);
      str(r.ip);
      str(r.db);
      if (r.kind == EventKind::kTableAccess) {
        str(r.table_op);
        str(r.table_db);
        str(r.table);
      } else if (r.kind == EventKind::kAuditConfig) {
        str(r.variable);
        str(r.value);
      }
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      str(r.value);   // mysql_version
      str("");        // startup_options: not recorded
      str(os_version());
      break;
  }
  out.put('\n');
}

// ---- OLD (XML attributes) and NEW (XML elements) ----

// Percona's XML escaping: < > & " as entities, control characters as
// numeric references (tab, newline, carriage return too), NUL as '?'.
void append_xml_escaped(TextOut &out, std::string_view v) {
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '<': out.put("&lt;"); break;
      case '>': out.put("&gt;"); break;
      case '&': out.put("&amp;"); break;
      case '"': out.put("&quot;"); break;
      case 0: out.put('?'); break;
      default:
        if (c < 0x20) {
          out.put("&#");
          append_uint(out, c);
          out.put(';');
        } else {
          out.put(ch);
        }
    }
  }
}

// One record's fields, as attributes (OLD: <AUDIT_RECORD NAME="..." .../>)
// or elements (NEW: <AUDIT_RECORD><NAME>...</NAME>...</AUDIT_RECORD>), one
// record per line.
class XmlRecord {
 public:
  XmlRecord(TextOut &out, bool elements) : out_(out), elements_(elements) {}
  void begin() { out_.put(elements_ ? "<AUDIT_RECORD>" : "<AUDIT_RECORD"); }
  void end() { out_.put(elements_ ? "</AUDIT_RECORD>\n" : "/>\n"); }
  void str(std::string_view name, std::string_view v) {
    open(name);
    append_xml_escaped(out_, v);
    close(name);
  }
  void num(std::string_view name, int64_t v) {
    open(name);
    append_int(out_, v);
    close(name);
  }
  void time(std::string_view name, int64_t time_us) {
    open(name);
    percona_time(out_, time_us);
    close(name);
  }
  void record_field(const Stamp &s) {
    open("RECORD");
    append_record_field(out_, s);
    close("RECORD");
  }
  void user(const Record &r) {  // "user[priv_user] @ host [ip]"
    open("USER");
    append_xml_escaped(out_, r.user);
    out_.put('[');
    append_xml_escaped(out_, r.priv_user);
    out_.put("] @ ");
    append_xml_escaped(out_, r.host);
    out_.put(" [");
    append_xml_escaped(out_, r.ip);
    out_.put(']');
    close("USER");
  }

 private:
  void open(std::string_view name) {
    if (elements_) {
      out_.put('<');
      out_.put(name);
      out_.put('>');
    } else {
      out_.put(' ');
      out_.put(name);
      out_.put("=\"");
    }
  }
  void close(std::string_view name) {
    if (elements_) {
      out_.put("</");
      out_.put(name);
      out_.put('>');
    } else {
      out_.put('"');
    }
  }
  TextOut &out_;
  bool elements_;
};

void xml_stamp(const Stamp &s, TextOut &out, bool elements) {
  XmlRecord x(out, elements);
  x.record_field(s);
  x.time("TIMESTAMP", s.time_us);
}

// Percona's fields per record, in its order; for our own kinds
// (TableAccess, Audit_config) the Query fields followed by theirs. No
// SERVER_ID: the fields are exactly Percona's.
void format_xml(const Record &r, const Stamp &s, TextOut &out,
                StampSpan *span, bool elements) {
  XmlRecord x(out, elements);
  x.begin();
  x.str("NAME", event_name(r.kind));
  span->begin = out.size();
  xml_stamp(s, out, elements);
  span->end = out.size();
  switch (r.kind) {
    case EventKind::kConnect:
    case EventKind::kDisconnect:
    case EventKind::kChangeUser:
      x.num("CONNECTION_ID", static_cast<int64_t>(r.connection_id));
      x.num("STATUS", r.status);
      x.str("USER", r.user);
      x.str("PRIV_USER", r.priv_user);
      x.str("OS_LOGIN", r.os_user);
      x.str("PROXY_USER", r.proxy_user);
      x.str("HOST", r.host);
      x.str("IP", r.ip);
      x.str("DB", r.db);
      break;
    case EventKind::kQuery:
    case EventKind::kTableAccess:
    case EventKind::kAuditConfig:
      x.str("COMMAND_CLASS", r.command_class);
      x.num("CONNECTION_ID", static_cast<int64_t>(r.connection_id));
      x.num("STATUS", r.status);
      x.str("SQLTEXT", r.query);
      x.user(r);
      x.str("HOST", r.host);
      x.str("OS_USER", r.os_user);
      x.str("IP", r.ip);
      x.str("DB", r.db);
      if (r.kind == EventKind::kTableAccess) {
        x.str("TABLE_OP", r.table_op);
        x.str("TABLE_DB", r.table_db);
        x.str("TABLE", r.table);
      } else if (r.kind == EventKind::kAuditConfig) {
        x.str("VARIABLE", r.variable);
        x.str("VALUE", r.value);
      }
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      x.str("MYSQL_VERSION", r.value);
      x.str("STARTUP_OPTIONS", "");  // not recorded
      x.str("OS_VERSION", os_version());
      break;
  }
  x.end();
}

}  // namespace

CivilTime civil_time(int64_t secs) {
  // Proleptic Gregorian calendar, UTC, by arithmetic: gmtime_r() takes
  // glibc's process-wide time zone lock on every call, one more lock shared
  // by all sessions on the record path. Days are counted in 400-year eras
  // (146097 days each) of years starting on March 1st, so the leap day is
  // the last day of a year.
  int64_t days = secs / 86400;
  int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  CivilTime t;
  t.hour = static_cast<int>(rem / 3600);
  t.minute = static_cast<int>(rem / 60 % 60);
  t.second = static_cast<int>(rem % 60);
  const int64_t z = days + 719468;  // days since 0000-03-01
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;                      // [0, 146096]
  const int64_t yoe =
      (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;  // [0, 399]
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);  // [0, 365]
  const int64_t mp = (5 * doy + 2) / 153;  // month from March: [0, 11]
  t.day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  t.month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  t.year = yoe + era * 400 + (t.month <= 2 ? 1 : 0);
  return t;
}

void append_time(std::string *out, int64_t time_us, bool micros) {
  TextOut o(out);
  append_time(o, time_us, micros);
}

void format_record(Format f, const Record &r, const Stamp &s,
                   std::string *out, StampSpan *span) {
  StampSpan ignored;
  if (span == nullptr) span = &ignored;
  TextOut o(out);
  switch (f) {
    case Format::kJson: format_json(r, s, o, span); return;
    case Format::kCsv: format_csv(r, s, o, span); return;
    case Format::kOld: format_xml(r, s, o, span, false); return;
    case Format::kNew: format_xml(r, s, o, span, true); return;
  }
}

void format_stamp(Format f, const Stamp &s, std::string *out) {
  TextOut o(out);
  switch (f) {
    case Format::kJson: json_stamp(s, o); return;
    case Format::kCsv: csv_stamp(s, o); return;
    case Format::kOld: xml_stamp(s, o, false); return;
    case Format::kNew: xml_stamp(s, o, true); return;
  }
}

}  // namespace strata_audit
