// Metadata blob and pointer block formats (layout in meta.h).
#include "meta.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>

namespace strata::redo {

namespace {

constexpr char kMetaMagic[] = "STRATAREDO";  // 10 bytes without the NUL
constexpr std::size_t kMetaMagicLen = 10;
constexpr char kPtrMagic[] = "STRATAPTR";  // 9 bytes
constexpr std::size_t kPtrMagicLen = 9;
constexpr std::size_t kMetaFixed = 44;
constexpr std::size_t kPtrFixed = 34;
static_assert(sizeof(kMetaMagic) == kMetaMagicLen + 1);
static_assert(sizeof(kPtrMagic) == kPtrMagicLen + 1);
static_assert(kPtrFixed + 64 + 128 + 64 + 4 <= kPointerBlockSize, "pointer fits a block");

constexpr std::size_t kMaxCreator = 32, kMaxUuid = 64, kMaxCreatedBy = 64, kMaxClusterId = 64,
                      kMaxVolume = 128;

void put16(std::string &s, std::uint16_t v) {
  for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put32(std::string &s, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
void put64(std::string &s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}
std::uint64_t get(const unsigned char *p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

bool fail(std::string *why, const char *msg) {
  if (why != nullptr) *why = msg;
  return false;
}

}  // namespace

std::uint32_t crc32_ieee(const void *data, std::size_t len, std::uint32_t crc) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto *p = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (std::size_t i = 0; i < len; ++i) crc = table[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

std::string serialize_metadata(const Metadata &m) {
  std::string s(kMetaMagic, kMetaMagicLen);
  put16(s, kMetadataVersion);
  put32(s, m.log_format);
  put32(s, m.log_flags);
  put32(s, m.log_uuid);
  put64(s, m.initial_lsn);
  put64(s, m.created_at);
  s.push_back(m.bootstrap_complete ? 1 : 0);
  const std::string creator = m.creator.substr(0, kMaxCreator);
  const std::string uuid = m.volume_uuid.substr(0, kMaxUuid);
  const std::string by = m.created_by.substr(0, kMaxCreatedBy);
  s.push_back(static_cast<char>(creator.size()));
  s.push_back(static_cast<char>(uuid.size()));
  s.push_back(static_cast<char>(by.size()));
  s += creator;
  s += uuid;
  s += by;
  put32(s, crc32_ieee(s.data(), s.size()));
  return s;
}

bool parse_metadata(std::string_view bytes, Metadata *out, std::string *why) {
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  if (bytes.size() < kMetaFixed + 4) return fail(why, "metadata too short");
  if (std::memcmp(p, kMetaMagic, kMetaMagicLen) != 0) return fail(why, "metadata magic mismatch");
  const std::size_t c = p[41], u = p[42], b = p[43];
  if (c > kMaxCreator || u > kMaxUuid || b > kMaxCreatedBy)
    return fail(why, "metadata field length out of range");
  const std::size_t body = kMetaFixed + c + u + b;
  if (bytes.size() != body + 4) return fail(why, "metadata length mismatch");
  if (get(p + body, 4) != crc32_ieee(p, body)) return fail(why, "metadata checksum mismatch");
  if (get(p + 10, 2) != kMetadataVersion) return fail(why, "unknown metadata version");
  if (p[40] > 1) return fail(why, "metadata flag byte out of range");
  out->log_format = static_cast<std::uint32_t>(get(p + 12, 4));
  out->log_flags = static_cast<std::uint32_t>(get(p + 16, 4));
  out->log_uuid = static_cast<std::uint32_t>(get(p + 20, 4));
  out->initial_lsn = get(p + 24, 8);
  out->created_at = get(p + 32, 8);
  out->bootstrap_complete = p[40] == 1;
  const char *str = bytes.data() + kMetaFixed;
  out->creator.assign(str, c);
  out->volume_uuid.assign(str + c, u);
  out->created_by.assign(str + c + u, b);
  return true;
}

bool serialize_pointer(const Pointer &p, unsigned char *block) {
  if (p.cluster_id.size() > kMaxClusterId || p.volume.size() > kMaxVolume ||
      p.volume_uuid.size() > kMaxUuid)
    return false;
  std::string s(kPtrMagic, kPtrMagicLen);
  put16(s, kPointerVersion);
  put32(s, p.log_uuid);
  put64(s, p.initial_lsn);
  put64(s, p.created_at);
  s.push_back(static_cast<char>(p.cluster_id.size()));
  s.push_back(static_cast<char>(p.volume.size()));
  s.push_back(static_cast<char>(p.volume_uuid.size()));
  s += p.cluster_id;
  s += p.volume;
  s += p.volume_uuid;
  put32(s, crc32_ieee(s.data(), s.size()));
  std::memset(block, 0, kPointerBlockSize);
  std::memcpy(block, s.data(), s.size());
  return true;
}

bool parse_pointer(const unsigned char *p, std::size_t size, Pointer *out, std::string *why) {
  if (size < kPointerBlockSize) return fail(why, "pointer block too short");
  if (std::memcmp(p, kPtrMagic, kPtrMagicLen) != 0) return fail(why, "pointer magic mismatch");
  const std::size_t c = p[31], v = p[32], u = p[33];
  if (c > kMaxClusterId || v > kMaxVolume || u > kMaxUuid)
    return fail(why, "pointer field length out of range");
  const std::size_t body = kPtrFixed + c + v + u;
  if (get(p + body, 4) != crc32_ieee(p, body)) return fail(why, "pointer checksum mismatch");
  if (get(p + 9, 2) != kPointerVersion) return fail(why, "unknown pointer version");
  out->log_uuid = static_cast<std::uint32_t>(get(p + 11, 4));
  out->initial_lsn = get(p + 15, 8);
  out->created_at = get(p + 23, 8);
  const char *str = reinterpret_cast<const char *>(p) + kPtrFixed;
  out->cluster_id.assign(str, c);
  out->volume.assign(str + c, v);
  out->volume_uuid.assign(str + c + v, u);
  return true;
}

std::string new_uuid() {
  unsigned char b[16];
  bool have = false;
  if (std::FILE *f = std::fopen("/dev/urandom", "rb")) {
    have = std::fread(b, 1, sizeof b, f) == sizeof b;
    std::fclose(f);
  }
  if (!have) {
    std::mt19937_64 rng(std::chrono::steady_clock::now().time_since_epoch().count());
    for (auto &x : b) x = static_cast<unsigned char>(rng());
  }
  b[6] = (b[6] & 0x0F) | 0x40;  // version 4
  b[8] = (b[8] & 0x3F) | 0x80;  // variant 1
  char s[37];
  std::snprintf(s, sizeof s,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return s;
}

}  // namespace strata::redo
