// A Record copied as it is (its numbers and the bytes of its strings), for
// the ring between sessions and the writer in ASYNCHRONOUS and PERFORMANCE.
//
// Why: formatting a record in the session that raised the event was the
// plugin's cost on point selects: the same few hundred nanoseconds of
// formatting, measured alone, cost several microseconds in situ (cold
// caches between statements, on a CPU the next statement needs). A session
// now only copies the fields, which are mostly short; the writer formats a
// whole batch in one loop (docs/audit_log.md, Overhead).
//
// Layout: a RawHeader (fixed size, below) followed by the bytes of the
// string fields in kStringFields order, with no separators. The header says
// the total size and each string's length. Host byte order and layout:
// encoded and decoded by the same process, never stored or sent.
// The time is not part of Record: it is taken when the record's id is
// reserved and written into the encoded record then (set_raw_time), so
// times and ids increase together in file order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "record.h"

namespace strata_audit {

// The string fields of a Record, in encoding order.
inline constexpr std::string_view Record::*kStringFields[] = {
    &Record::user,          &Record::priv_user, &Record::host,
    &Record::ip,            &Record::os_user,   &Record::proxy_user,
    &Record::db,            &Record::command,   &Record::command_class,
    &Record::query,         &Record::table_op,  &Record::table_db,
    &Record::table,         &Record::variable,  &Record::value,
};
inline constexpr size_t kStringFieldCount =
    sizeof(kStringFields) / sizeof(kStringFields[0]);

struct RawHeader {
  uint32_t size;  // the whole encoded record, this header included
  uint8_t kind;   // EventKind
  uint8_t query_truncated;
  uint16_t unused;
  int32_t status;
  uint32_t unused2;
  uint64_t connection_id;
  uint64_t rows_sent;
  uint64_t rows_examined;
  uint64_t query_time_us;
  int64_t time_us;
  uint32_t lengths[kStringFieldCount];
};
static_assert(sizeof(RawHeader) == 4 + 1 + 1 + 2 + 4 + 4 + 5 * 8 + 4 * 15 + 4,
              "RawHeader has no padding but its tail");

// The encoded size of r. Sizes of 4 GiB and more cannot be encoded (a
// statement is at most max_allowed_packet, 1 GiB): callers check against
// kMaxRawSize.
inline constexpr size_t kMaxRawSize = UINT32_MAX;
size_t raw_size(const Record &r);

// Writes r (raw_size(r) <= kMaxRawSize bytes) with time 0 to out.
void encode_raw(const Record &r, char *out);

// Sets the time of an encoded record.
void set_raw_time(char *raw, int64_t time_us);

// The size of the encoded record that starts at raw (at least 4 bytes).
uint32_t raw_record_size(const char *raw);

// A view of an encoded record: *r's strings point into raw, which must
// outlive their use. False if raw is not a consistent encoded record
// (wrong size or lengths): a bug, never input from outside.
[[nodiscard]] bool decode_raw(std::string_view raw, Record *r,
                              int64_t *time_us);

}  // namespace strata_audit
