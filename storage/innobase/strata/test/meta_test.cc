// Metadata blob and pointer block: round trips, and every malformed input refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "meta.h"

namespace strata::redo {
namespace {

Metadata sample_metadata() {
  Metadata m;
  m.log_format = 6;
  m.log_flags = 0x5;
  m.log_uuid = 0xdeadbeef;
  m.initial_lsn = 8204;
  m.created_at = 1790000000;
  m.bootstrap_complete = true;
  m.creator = "MySQL 9.7.2";
  m.volume_uuid = new_uuid();
  m.created_by = "server-uuid-1";
  return m;
}

TEST(Metadata, RoundTrip) {
  const Metadata m = sample_metadata();
  Metadata back;
  std::string why;
  ASSERT_TRUE(parse_metadata(serialize_metadata(m), &back, &why)) << why;
  EXPECT_EQ(m, back);
}

TEST(Metadata, EveryFlippedByteIsRefused) {
  const std::string good = serialize_metadata(sample_metadata());
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x40);
    Metadata out;
    std::string why;
    EXPECT_FALSE(parse_metadata(bad, &out, &why)) << "byte " << i;
    EXPECT_FALSE(why.empty());
  }
}

TEST(Metadata, EveryTruncationIsRefused) {
  const std::string good = serialize_metadata(sample_metadata());
  for (std::size_t n = 0; n < good.size(); ++n) {
    Metadata out;
    EXPECT_FALSE(parse_metadata(std::string_view(good).substr(0, n), &out, nullptr)) << n;
  }
  Metadata out;
  EXPECT_FALSE(parse_metadata(good + "x", &out, nullptr));
}

TEST(Metadata, LongFieldsAreCut) {
  Metadata m = sample_metadata();
  m.creator = std::string(100, 'c');
  Metadata back;
  ASSERT_TRUE(parse_metadata(serialize_metadata(m), &back, nullptr));
  EXPECT_EQ(back.creator, std::string(32, 'c'));
}

Pointer sample_pointer() {
  Pointer p;
  p.log_uuid = 42;
  p.initial_lsn = 8204;
  p.created_at = 1790000000;
  p.cluster_id = "strata";
  p.volume = "innodb";
  p.volume_uuid = new_uuid();
  return p;
}

TEST(Pointer, RoundTrip) {
  unsigned char block[kPointerBlockSize];
  ASSERT_TRUE(serialize_pointer(sample_pointer(), block));
  Pointer back;
  std::string why;
  ASSERT_TRUE(parse_pointer(block, sizeof block, &back, &why)) << why;
  EXPECT_EQ(sample_pointer().volume, back.volume);
  EXPECT_EQ(sample_pointer().log_uuid, back.log_uuid);
}

TEST(Pointer, EveryFlippedByteOfTheRecordIsRefused) {
  const Pointer p = sample_pointer();
  unsigned char good[kPointerBlockSize];
  ASSERT_TRUE(serialize_pointer(p, good));
  const std::size_t used = 34 + p.cluster_id.size() + p.volume.size() + p.volume_uuid.size() + 4;
  for (std::size_t i = 0; i < used; ++i) {
    unsigned char bad[kPointerBlockSize];
    std::memcpy(bad, good, sizeof bad);
    bad[i] ^= 0x40;
    Pointer out;
    EXPECT_FALSE(parse_pointer(bad, sizeof bad, &out, nullptr)) << "byte " << i;
  }
  Pointer out;
  EXPECT_FALSE(parse_pointer(good, kPointerBlockSize - 1, &out, nullptr));
}

TEST(Pointer, OversizedFieldIsRefusedAtWrite) {
  Pointer p = sample_pointer();
  p.volume = std::string(129, 'v');
  unsigned char block[kPointerBlockSize];
  EXPECT_FALSE(serialize_pointer(p, block));
}

TEST(Crc32, KnownValue) {
  EXPECT_EQ(crc32_ieee("123456789", 9), 0xCBF43926u);  // the standard check value
}

TEST(Uuid, Format) {
  const std::string a = new_uuid(), b = new_uuid();
  EXPECT_EQ(a.size(), 36u);
  EXPECT_EQ(a[14], '4');
  EXPECT_NE(a, b);
}

}  // namespace
}  // namespace strata::redo
