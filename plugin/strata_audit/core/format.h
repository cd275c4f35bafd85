// Record formats. One call appends exactly one record, terminated by '\n'.
//
// JSON (default): one JSON object per line, the field names of Percona
//   Server's audit_log JSON format under "audit_record", plus record_id,
//   server_id and microsecond timestamps, and the query details
//   (rows_sent, rows_examined, query_time_us).
// OLD, NEW, CSV: Percona's formats of those names, field for field: the
//   same fields in the same order, the timestamp as "YYYY-MM-DDTHH:MM:SS
//   UTC", Percona's escaping (tests/percona_format_test.cc checks them
//   against Percona's documented records). OLD is XML attributes
//   (<AUDIT_RECORD NAME="Query" .../>), NEW XML elements
//   (<AUDIT_RECORD><NAME>Query</NAME>...</AUDIT_RECORD>); a file of either
//   is one XML document (file_header(), file_footer()). Where we differ:
//   each record is one line (Percona puts each field on a line; XML does
//   not tell them apart), and CSV writes a newline or carriage return in a
//   value as \n or \r and a backslash as \\ (Percona writes them raw), so
//   that a record cut by a crash is always a cut line. Our own record kinds
//   (TableAccess, Audit_config), which Percona does not write, have the
//   Query fields followed by their own.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "record.h"

namespace strata_audit {

// The order is audit_log_format's (strata_audit.cc's format_names).
enum class Format : uint8_t { kJson, kCsv, kOld, kNew };

std::optional<Format> parse_format(std::string_view name);  // case-insensitive
std::string_view format_name(Format f);

// What a file of this format starts and ends with ("" for none): OLD and
// NEW files are one XML document, <?xml ...?><AUDIT> ... </AUDIT>.
std::string_view file_header(Format f);
std::string_view file_footer(Format f);

// Where, in a formatted record, the text that depends on the Stamp's record
// id, time and log start lies: [begin, end). The server id is not in it.
struct StampSpan {
  size_t begin = 0;
  size_t end = 0;
};

// Appends one record. With span, also says where its stamped text is, so a
// sink can format a record before it reserves the record's place and then
// only replace that span with format_stamp() of the final stamp.
void format_record(Format f, const Record &r, const Stamp &s,
                   std::string *out, StampSpan *span = nullptr);

// The text format_record writes for s in the StampSpan, alone.
void format_stamp(Format f, const Stamp &s, std::string *out);

// UTC calendar time of a Unix time in seconds (any sign), without locks.
struct CivilTime {
  int64_t year;
  int month, day, hour, minute, second;  // month 1-12, day 1-31
};
CivilTime civil_time(int64_t secs);

// "YYYY-MM-DDTHH:MM:SS" (UTC) and, with micros, ".uuuuuu" appended.
void append_time(std::string *out, int64_t time_us, bool micros);

}  // namespace strata_audit
