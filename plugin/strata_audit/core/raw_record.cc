#include "raw_record.h"

#include <cstring>

namespace strata_audit {

size_t raw_size(const Record &r) {
  size_t n = sizeof(RawHeader);
  for (auto field : kStringFields) n += (r.*field).size();
  return n;
}

void encode_raw(const Record &r, char *out) {
  RawHeader h{};
  h.size = static_cast<uint32_t>(raw_size(r));
  h.kind = static_cast<uint8_t>(r.kind);
  h.query_truncated = r.query_truncated ? 1 : 0;
  h.status = r.status;
  h.connection_id = r.connection_id;
  h.rows_sent = r.rows_sent;
  h.rows_examined = r.rows_examined;
  h.query_time_us = r.query_time_us;
  char *p = out + sizeof(RawHeader);
  for (size_t i = 0; i < kStringFieldCount; ++i) {
    const std::string_view v = r.*kStringFields[i];
    h.lengths[i] = static_cast<uint32_t>(v.size());
    if (!v.empty()) std::memcpy(p, v.data(), v.size());
    p += v.size();
  }
  std::memcpy(out, &h, sizeof(h));
}

void set_raw_time(char *raw, int64_t time_us) {
  std::memcpy(raw + offsetof(RawHeader, time_us), &time_us, sizeof(time_us));
}

uint32_t raw_record_size(const char *raw) {
  uint32_t size;
  std::memcpy(&size, raw + offsetof(RawHeader, size), sizeof(size));
  return size;
}

bool decode_raw(std::string_view raw, Record *r, int64_t *time_us) {
  if (raw.size() < sizeof(RawHeader)) return false;
  RawHeader h;
  std::memcpy(&h, raw.data(), sizeof(h));
  if (h.size != raw.size()) return false;
  if (h.kind > static_cast<uint8_t>(EventKind::kAuditStop)) return false;
  r->kind = static_cast<EventKind>(h.kind);
  r->query_truncated = h.query_truncated != 0;
  r->status = h.status;
  r->connection_id = h.connection_id;
  r->rows_sent = h.rows_sent;
  r->rows_examined = h.rows_examined;
  r->query_time_us = h.query_time_us;
  *time_us = h.time_us;
  size_t at = sizeof(RawHeader);
  for (size_t i = 0; i < kStringFieldCount; ++i) {
    if (h.lengths[i] > raw.size() - at) return false;
    r->*kStringFields[i] = raw.substr(at, h.lengths[i]);
    at += h.lengths[i];
  }
  return at == raw.size();
}

}  // namespace strata_audit
