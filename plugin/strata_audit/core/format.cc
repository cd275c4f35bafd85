#include "format.h"

#include <charconv>
#include <ctime>

#include "json.h"

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
  return std::nullopt;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::kJson: return "JSON";
    case Format::kCsv: return "CSV";
    case Format::kOld: return "OLD";
  }
  return "?";
}

namespace {

void append_uint(std::string *out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void append_int(std::string *out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void append_2(std::string *out, int v) {
  out->push_back(static_cast<char>('0' + v / 10 % 10));
  out->push_back(static_cast<char>('0' + v % 10));
}

// "root[root] @ localhost [127.0.0.1]", as Percona writes the user of a query.
std::string_view percona_user(const Record &r, std::string *tmp) {
  tmp->clear();
  tmp->append(r.user);
  tmp->push_back('[');
  tmp->append(r.priv_user);
  tmp->append("] @ ");
  tmp->append(r.host);
  tmp->append(" [");
  tmp->append(r.ip);
  tmp->push_back(']');
  return *tmp;
}

void append_record_field(std::string *out, const Stamp &s) {
  append_uint(out, s.record_id);
  out->push_back('_');
  out->append(s.log_start);
}

// ---- JSON ----

class JsonObject {
 public:
  explicit JsonObject(std::string *out) : out_(out) {}
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
    out_->push_back('"');
    append_uint(out_, v);
    out_->push_back('"');
  }
  void raw(std::string_view key, std::string_view v) {
    sep(key);
    out_->append(v);
  }
  std::string *out() { return out_; }
  void sep(std::string_view key) {
    if (!first_) out_->push_back(',');
    first_ = false;
    out_->push_back('"');
    out_->append(key);  // keys are our literals: no escaping needed
    out_->append("\":");
  }

 private:
  std::string *out_;
  bool first_ = true;
};

// The stamped fields; they follow "name", so they start with a comma.
void json_stamp(const Stamp &s, std::string *out) {
  out->append(",\"record\":\"");
  append_record_field(out, s);
  out->append("\",\"record_id\":");
  append_uint(out, s.record_id);
  out->append(",\"timestamp\":\"");
  append_time(out, s.time_us, true);
  out->append(" UTC\"");
}

void format_json(const Record &r, const Stamp &s, std::string *out,
                 StampSpan *span) {
  out->append("{\"audit_record\":{");
  JsonObject o(out);
  o.str("name", event_name(r.kind));
  span->begin = out->size();
  json_stamp(s, out);
  span->end = out->size();
  o.u64("server_id", s.server_id);
  thread_local std::string tmp;  // reused: no allocation per record
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
      o.str("user", percona_user(r, &tmp));
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
      o.str("user", percona_user(r, &tmp));
      o.str("variable", r.variable);
      o.str("value", r.value);
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      o.str("mysql_version", r.value);
      break;
  }
  out->append("}}\n");
}

// ---- CSV ----

void append_csv_string(std::string *out, std::string_view v) {
  out->push_back('"');
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"') {
      out->append("\"\"");
    } else if (c == '\\') {
      out->append("\\\\");
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c < 0x20) {
      static constexpr char kHex[] = "0123456789abcdef";
      out->append("\\x");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 0xf]);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

void csv_stamp(const Stamp &s, std::string *out) {
  out->append(",\"");
  append_record_field(out, s);
  out->append("\",\"");
  append_time(out, s.time_us, true);
  out->append(" UTC\"");
}

void format_csv(const Record &r, const Stamp &s, std::string *out,
                StampSpan *span) {
  auto str = [&](std::string_view v) {
    out->push_back(',');
    append_csv_string(out, v);
  };
  auto num = [&](int64_t v) {
    out->push_back(',');
    append_int(out, v);
  };
  append_csv_string(out, event_name(r.kind));
  span->begin = out->size();
  csv_stamp(s, out);
  span->end = out->size();
  thread_local std::string tmp;  // reused: no allocation per record
  switch (r.kind) {
    case EventKind::kConnect:
    case EventKind::kDisconnect:
    case EventKind::kChangeUser:
      out->append(",\"");
      append_uint(out, r.connection_id);
      out->push_back('"');
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
      str(r.command_class);
      out->append(",\"");
      append_uint(out, r.connection_id);
      out->push_back('"');
      num(r.status);
      str(r.query);
      str(percona_user(r, &tmp));
      str(r.host);
      str(r.os_user);
      str(r.ip);
      str(r.db);
      break;
    case EventKind::kAuditConfig:
      out->append(",\"");
      append_uint(out, r.connection_id);
      out->push_back('"');
      str(percona_user(r, &tmp));
      str(r.variable);
      str(r.value);
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      str(r.value);
      break;
  }
  out->push_back(',');
  append_uint(out, s.server_id);
  out->push_back('\n');
}

// ---- OLD (XML attributes) ----

void append_xml_attr(std::string *out, std::string_view name,
                     std::string_view v) {
  out->push_back(' ');
  out->append(name);
  out->append("=\"");
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '<': out->append("&lt;"); break;
      case '>': out->append("&gt;"); break;
      case '&': out->append("&amp;"); break;
      case '"': out->append("&quot;"); break;
      case '\n': out->append("&#10;"); break;
      case '\r': out->append("&#13;"); break;
      case '\t': out->append("&#9;"); break;
      default:
        if (c < 0x20) {
          out->append("&#");
          append_uint(out, c);
          out->push_back(';');
        } else {
          out->push_back(ch);
        }
    }
  }
  out->push_back('"');
}

void old_stamp(const Stamp &s, std::string *out) {
  thread_local std::string tmp;  // reused: no allocation per record
  tmp.clear();
  append_record_field(&tmp, s);
  append_xml_attr(out, "RECORD", tmp);
  tmp.clear();
  append_time(&tmp, s.time_us, true);
  tmp.append(" UTC");
  append_xml_attr(out, "TIMESTAMP", tmp);
}

void format_old(const Record &r, const Stamp &s, std::string *out,
                StampSpan *span) {
  thread_local std::string tmp;  // reused: no allocation per record
  out->append("<AUDIT_RECORD");
  append_xml_attr(out, "NAME", event_name(r.kind));
  span->begin = out->size();
  old_stamp(s, out);
  span->end = out->size();
  tmp.clear();
  append_uint(&tmp, s.server_id);
  append_xml_attr(out, "SERVER_ID", tmp);
  auto num = [&](std::string_view name, int64_t v) {
    std::string n;
    append_int(&n, v);
    append_xml_attr(out, name, n);
  };
  switch (r.kind) {
    case EventKind::kConnect:
    case EventKind::kDisconnect:
    case EventKind::kChangeUser:
      num("CONNECTION_ID", static_cast<int64_t>(r.connection_id));
      num("STATUS", r.status);
      append_xml_attr(out, "USER", r.user);
      append_xml_attr(out, "PRIV_USER", r.priv_user);
      append_xml_attr(out, "OS_LOGIN", r.os_user);
      append_xml_attr(out, "PROXY_USER", r.proxy_user);
      append_xml_attr(out, "HOST", r.host);
      append_xml_attr(out, "IP", r.ip);
      append_xml_attr(out, "DB", r.db);
      break;
    case EventKind::kQuery:
    case EventKind::kTableAccess:
      append_xml_attr(out, "COMMAND_CLASS", r.command_class);
      num("CONNECTION_ID", static_cast<int64_t>(r.connection_id));
      num("STATUS", r.status);
      append_xml_attr(out, "SQLTEXT", r.query);
      append_xml_attr(out, "USER", percona_user(r, &tmp));
      append_xml_attr(out, "HOST", r.host);
      append_xml_attr(out, "OS_USER", r.os_user);
      append_xml_attr(out, "IP", r.ip);
      append_xml_attr(out, "DB", r.db);
      break;
    case EventKind::kAuditConfig:
      num("CONNECTION_ID", static_cast<int64_t>(r.connection_id));
      append_xml_attr(out, "USER", percona_user(r, &tmp));
      append_xml_attr(out, "VARIABLE", r.variable);
      append_xml_attr(out, "VALUE", r.value);
      break;
    case EventKind::kAuditStart:
    case EventKind::kAuditStop:
      append_xml_attr(out, "MYSQL_VERSION", r.value);
      break;
  }
  out->append("/>\n");
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
  int64_t secs = time_us / 1000000;
  int64_t us = time_us % 1000000;
  if (us < 0) {
    us += 1000000;
    --secs;
  }
  const CivilTime t = civil_time(secs);
  append_int(out, t.year);
  out->push_back('-');
  append_2(out, t.month);
  out->push_back('-');
  append_2(out, t.day);
  out->push_back('T');
  append_2(out, t.hour);
  out->push_back(':');
  append_2(out, t.minute);
  out->push_back(':');
  append_2(out, t.second);
  if (micros) {
    char buf[8];
    for (int i = 5; i >= 0; --i) {
      buf[i] = static_cast<char>('0' + us % 10);
      us /= 10;
    }
    out->push_back('.');
    out->append(buf, 6);
  }
}

void format_record(Format f, const Record &r, const Stamp &s,
                   std::string *out, StampSpan *span) {
  StampSpan ignored;
  if (span == nullptr) span = &ignored;
  switch (f) {
    case Format::kJson: format_json(r, s, out, span); return;
    case Format::kCsv: format_csv(r, s, out, span); return;
    case Format::kOld: format_old(r, s, out, span); return;
  }
}

void format_stamp(Format f, const Stamp &s, std::string *out) {
  switch (f) {
    case Format::kJson: json_stamp(s, out); return;
    case Format::kCsv: csv_stamp(s, out); return;
    case Format::kOld: old_stamp(s, out); return;
  }
}

}  // namespace strata_audit
