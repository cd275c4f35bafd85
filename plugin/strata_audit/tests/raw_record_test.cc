#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>

#include "format.h"
#include "raw_record.h"

using namespace strata_audit;

namespace {

// Every field set, strings of different lengths, one with bytes that need
// escaping and one empty.
Record full_record() {
  Record r;
  r.kind = EventKind::kTableAccess;
  r.connection_id = 987654321;
  r.status = 1146;
  r.user = "app";
  r.priv_user = "app_rw";
  r.host = "web-7.example";
  r.ip = "10.0.0.7";
  r.os_user = "";
  r.proxy_user = "proxy@%";
  r.db = "shop";
  r.command = "Query";
  r.command_class = "update";
  r.query = std::string_view("UPDATE t SET a='x\"\n\0y' WHERE id=1", 35);
  r.query_truncated = true;
  r.rows_sent = 3;
  r.rows_examined = 77;
  r.query_time_us = 1234;
  r.table_op = "update";
  r.table_db = "shop";
  r.table = "orders";
  r.variable = "audit_log_policy";
  r.value = "ALL";
  return r;
}

std::string encode(const Record &r) {
  std::string raw(raw_size(r), '\0');
  encode_raw(r, raw.data());
  return raw;
}

}  // namespace

TEST(RawRecord, RoundTripKeepsEveryField) {
  const Record r = full_record();
  std::string raw = encode(r);
  EXPECT_EQ(raw.size(), raw_size(r));
  EXPECT_EQ(raw_record_size(raw.data()), raw.size());
  set_raw_time(raw.data(), 1795400345123456LL);
  Record d;
  int64_t time_us = 0;
  ASSERT_TRUE(decode_raw(raw, &d, &time_us));
  EXPECT_EQ(time_us, 1795400345123456LL);
  EXPECT_EQ(d.kind, r.kind);
  EXPECT_EQ(d.connection_id, r.connection_id);
  EXPECT_EQ(d.status, r.status);
  EXPECT_EQ(d.query_truncated, r.query_truncated);
  EXPECT_EQ(d.rows_sent, r.rows_sent);
  EXPECT_EQ(d.rows_examined, r.rows_examined);
  EXPECT_EQ(d.query_time_us, r.query_time_us);
  for (auto field : kStringFields) EXPECT_EQ(d.*field, r.*field);
}

TEST(RawRecord, FormattedFromTheCopyExactlyAsFromTheOriginal) {
  const Record r = full_record();
  std::string raw = encode(r);
  Stamp s;
  s.record_id = 42;
  s.time_us = 1795400345000001LL;
  s.server_id = 3;
  s.log_start = "2026-11-25T00:00:00";
  set_raw_time(raw.data(), s.time_us);
  Record d;
  Stamp ds = s;
  ds.time_us = 0;
  ASSERT_TRUE(decode_raw(raw, &d, &ds.time_us));
  for (Format f : {Format::kJson, Format::kCsv, Format::kOld}) {
    std::string want, got;
    format_record(f, r, s, &want);
    format_record(f, d, ds, &got);
    EXPECT_EQ(got, want) << format_name(f);
  }
}

TEST(RawRecord, AnEmptyRecordIsJustTheHeader) {
  Record r;
  EXPECT_EQ(raw_size(r), sizeof(RawHeader));
  const std::string raw = encode(r);
  Record d;
  int64_t t;
  ASSERT_TRUE(decode_raw(raw, &d, &t));
  EXPECT_EQ(d.kind, EventKind::kQuery);
  EXPECT_TRUE(d.query.empty());
}

TEST(RawRecord, InconsistentBytesAreRefused) {
  const std::string raw = encode(full_record());
  Record d;
  int64_t t;
  // Shorter or longer than the size it says.
  EXPECT_FALSE(decode_raw(std::string_view(raw).substr(0, raw.size() - 1), &d, &t));
  EXPECT_FALSE(decode_raw(raw + "x", &d, &t));
  EXPECT_FALSE(decode_raw(std::string_view(raw).substr(0, 10), &d, &t));
  // A string length past the end.
  std::string bad = raw;
  const uint32_t huge = 1u << 30;
  std::memcpy(bad.data() + offsetof(RawHeader, lengths), &huge, sizeof(huge));
  EXPECT_FALSE(decode_raw(bad, &d, &t));
  // Lengths that do not add up to the size.
  bad = raw;
  uint32_t one_less;
  std::memcpy(&one_less, bad.data() + offsetof(RawHeader, lengths), sizeof(one_less));
  --one_less;
  std::memcpy(bad.data() + offsetof(RawHeader, lengths), &one_less, sizeof(one_less));
  EXPECT_FALSE(decode_raw(bad, &d, &t));
  // An unknown event kind.
  bad = raw;
  bad[offsetof(RawHeader, kind)] = 100;
  EXPECT_FALSE(decode_raw(bad, &d, &t));
}
