/* Strata strong sync: the wire format between source and replica.

   Shared by strata_sync_source and strata_sync_replica; no MySQL headers
   beyond fixed-width integers. See docs/design/strong-sync.md, section 4.

   - Handshake: the replica sets the user variable `@strata_sync_replica` to
     kProtocolVersion on its source connection before COM_BINLOG_DUMP.
   - Event header: every event packet the source sends to a strong-sync
     replica starts (after the protocol OK byte) with kEventHeaderSize bytes:
     kEventMagic, then flags (kFlagAckRequested).
   - Ack: the replica answers a flagged event with one MySQL protocol packet:
     kAckMagic, kProtocolVersion, the end position of the event in the
     source's binary log (uint64, little endian), then the binary log file
     name (basename, 1..kMaxFileNameLength bytes, not NUL-terminated).

   Input from the network is never trusted: parse_ack() checks every length. */
#ifndef STRATA_SYNC_PROTOCOL_H
#define STRATA_SYNC_PROTOCOL_H

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::sync::wire {

inline constexpr std::uint8_t kProtocolVersion = 1;
inline constexpr const char *kHandshakeVariable = "strata_sync_replica";

inline constexpr std::uint8_t kEventMagic = 0xA7;  // semisync uses 0xEF
inline constexpr std::uint8_t kFlagAckRequested = 0x01;
inline constexpr std::size_t kEventHeaderSize = 2;

/* The replica also acknowledges every heartbeat event (types 27 and 41, at
   byte kEventTypeOffset of the event): a heartbeat carries the position up
   to which the source has sent or skipped (GTID auto-position) events, so
   its ack covers commits the replica already had and was never asked for,
   and it lets an idle source see a replica catch up. */
inline constexpr std::size_t kEventTypeOffset = 4;
inline constexpr std::uint8_t kHeartbeatType = 27;
inline constexpr std::uint8_t kHeartbeatV2Type = 41;

inline constexpr std::uint8_t kAckMagic = 0xA8;
inline constexpr std::size_t kAckMagicOffset = 0;
inline constexpr std::size_t kAckVersionOffset = 1;
inline constexpr std::size_t kAckPosOffset = 2;
inline constexpr std::size_t kAckFileOffset = 10;
inline constexpr std::size_t kMaxFileNameLength = 512;  // FN_REFLEN
inline constexpr std::size_t kAckMaxSize = kAckFileOffset + kMaxFileNameLength;
static_assert(kAckFileOffset == kAckPosOffset + sizeof(std::uint64_t));
static_assert(kAckMaxSize == 522);

/** Encodes an ack into buf (at least kAckMaxSize bytes); returns its size,
    or 0 if the file name is empty or too long. */
inline std::size_t encode_ack(unsigned char *buf, const char *file,
                              std::uint64_t pos) {
  const std::size_t name_len = file ? std::strlen(file) : 0;
  if (name_len == 0 || name_len > kMaxFileNameLength) return 0;
  buf[kAckMagicOffset] = kAckMagic;
  buf[kAckVersionOffset] = kProtocolVersion;
  for (std::size_t i = 0; i < 8; i++)
    buf[kAckPosOffset + i] = static_cast<unsigned char>(pos >> (8 * i));
  std::memcpy(buf + kAckFileOffset, file, name_len);
  return kAckFileOffset + name_len;
}

/** Decodes an ack. On success fills file (NUL-terminated, at least
    kMaxFileNameLength + 1 bytes) and pos and returns nullptr; otherwise
    returns what was wrong. */
[[nodiscard]] inline const char *parse_ack(const unsigned char *buf,
                                           std::size_t len, char *file,
                                           std::uint64_t *pos) {
  if (len <= kAckFileOffset) return "ack packet too short";
  if (len > kAckMaxSize) return "ack packet too long";
  if (buf[kAckMagicOffset] != kAckMagic) return "bad ack magic";
  if (buf[kAckVersionOffset] != kProtocolVersion)
    return "unsupported ack version";
  std::uint64_t p = 0;
  for (std::size_t i = 0; i < 8; i++)
    p |= static_cast<std::uint64_t>(buf[kAckPosOffset + i]) << (8 * i);
  const std::size_t name_len = len - kAckFileOffset;
  if (std::memchr(buf + kAckFileOffset, 0, name_len) != nullptr)
    return "NUL in ack file name";
  std::memcpy(file, buf + kAckFileOffset, name_len);
  file[name_len] = '\0';
  *pos = p;
  return nullptr;
}

/* The replica-to-source direction of a strong-sync dump connection carries
   nothing but ack packets (and, at the end, COM_QUIT), each one MySQL
   protocol packet: 3-byte little-endian payload length, 1-byte sequence
   number, payload. The source reads these bytes straight from the socket
   (plain TCP) or the SSL session (TLS), never through the connection's
   NET, so it has to find the packet boundaries itself: PacketSplitter does
   that over whatever chunks a read returned (strata_sync_ack_stream.h). A payload longer than kAckMaxSize
   is an error (no valid packet is that long). */
inline constexpr std::size_t kPacketHeaderSize = 4;
inline constexpr unsigned char kComQuit = 0x01;

class PacketSplitter {
 public:
  /** Appends received bytes. */
  void feed(const unsigned char *data, std::size_t len) {
    compact();
    if (m_used + len > sizeof(m_buf)) {  // next() was not drained first
      m_error = "ack stream overflow";
      return;
    }
    std::memcpy(m_buf + m_used, data, len);
    m_used += len;
  }

  /** Returns the next complete payload (valid until the next call of feed()
      or next()), or nullptr if none is complete or the stream is broken
      (then error() says why). */
  const unsigned char *next(std::size_t *len) {
    if (m_error != nullptr) return nullptr;
    compact();
    if (m_used < kPacketHeaderSize) return nullptr;
    const std::size_t payload = std::size_t{m_buf[0]} |
                                (std::size_t{m_buf[1]} << 8) |
                                (std::size_t{m_buf[2]} << 16);
    if (payload == 0 || payload > kAckMaxSize) {
      m_error = "bad packet length on the ack stream";
      return nullptr;
    }
    if (m_used < kPacketHeaderSize + payload) return nullptr;
    m_start = kPacketHeaderSize + payload;
    *len = payload;
    return m_buf + kPacketHeaderSize;
  }

  const char *error() const { return m_error; }
  /** Bytes buffered that do not form a complete packet yet. */
  std::size_t pending() const { return m_used - m_start; }

  /** At most this many bytes may be fed between two drains by next(). */
  static constexpr std::size_t kMaxFeed = 4096;

 private:
  void compact() {  // drop the packet returned last time
    if (m_start == 0) return;
    std::memmove(m_buf, m_buf + m_start, m_used - m_start);
    m_used -= m_start;
    m_start = 0;
  }

  // One partial packet plus one feed.
  unsigned char m_buf[kPacketHeaderSize + kAckMaxSize + kMaxFeed];
  std::size_t m_used = 0, m_start = 0;
  const char *m_error = nullptr;
};

}  // namespace strata::sync::wire

#endif  // STRATA_SYNC_PROTOCOL_H
