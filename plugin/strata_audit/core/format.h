// Record formats. One call appends exactly one record, terminated by '\n'.
//
// JSON (default): one JSON object per line, the field names of Percona
//   Server's audit_log JSON format under "audit_record", plus record_id,
//   server_id and microsecond timestamps, and the query details
//   (rows_sent, rows_examined, query_time_us).
// CSV: Percona's CSV column order, followed by server_id; one line per
//   record (newlines inside values are escaped, quotes doubled).
// OLD: Percona's "OLD" XML attribute format (<AUDIT_RECORD .../>), one
//   record per line here.
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "record.h"

namespace strata_audit {

enum class Format : uint8_t { kJson, kCsv, kOld };

std::optional<Format> parse_format(std::string_view name);  // case-insensitive
std::string_view format_name(Format f);

void format_record(Format f, const Record &r, const Stamp &s,
                   std::string *out);

// "YYYY-MM-DDTHH:MM:SS" (UTC) and, with micros, ".uuuuuu" appended.
void append_time(std::string *out, int64_t time_us, bool micros);

}  // namespace strata_audit
