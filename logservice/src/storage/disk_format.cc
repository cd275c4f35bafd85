// Codecs for disk_format.h. Decoders treat their input as hostile: every
// length is checked against the bytes present and the format limits before
// use, and nothing is returned unless its CRC32C matches.
#include "disk_format.h"

#include <cinttypes>
#include <cstdio>

#include "strata/rdma/crc32c.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice::storage {

using rdma::Crc32c;
using rdma::GetFixed32;
using rdma::GetFixed64;
using rdma::PutFixed32;
using rdma::PutFixed64;

std::string SegmentFileName(std::uint64_t sequence) {
  char name[32];
  std::snprintf(name, sizeof name, "%016" PRIx64 ".seg", sequence);
  return name;
}

bool ParseSegmentFileName(std::string_view name, std::uint64_t* sequence) {
  constexpr std::string_view kSuffix = ".seg";
  if (name.size() != 16 + kSuffix.size() || name.substr(16) != kSuffix) return false;
  std::uint64_t v = 0;
  for (char c : name.substr(0, 16)) {
    int digit;
    if (c >= '0' && c <= '9') digit = c - '0';
    else if (c >= 'a' && c <= 'f') digit = c - 'a' + 10;
    else return false;
    v = (v << 4) | static_cast<std::uint64_t>(digit);
  }
  *sequence = v;
  return true;
}

std::string EncodeSegmentHeader(const SegmentHeader& header) {
  std::string out(kSegmentHeaderSize, '\0');
  PutFixed64(&out[kSegMagicOffset], kSegmentMagic);
  PutFixed32(&out[kSegVersionOffset], kSegmentFormatVersion);
  PutFixed32(&out[kSegKindOffset], static_cast<std::uint32_t>(header.kind));
  PutFixed64(&out[kSegSequenceOffset], header.sequence);
  PutFixed64(&out[kSegBaseLsnOffset], header.base_lsn);
  PutFixed32(&out[kSegReservedOffset], 0);
  PutFixed32(&out[kSegCrcOffset], Crc32c(0, out.data(), kSegCrcOffset));
  return out;
}

Status DecodeSegmentHeader(std::string_view bytes, SegmentHeader* out) {
  if (bytes.size() < kSegmentHeaderSize)
    return Status::Corruption("segment header: only " + std::to_string(bytes.size()) + " bytes");
  const char* p = bytes.data();
  if (GetFixed32(p + kSegCrcOffset) != Crc32c(0, p, kSegCrcOffset))
    return Status::Corruption("segment header: CRC mismatch");
  if (GetFixed64(p + kSegMagicOffset) != kSegmentMagic) return Status::Corruption("segment header: bad magic");
  std::uint32_t version = GetFixed32(p + kSegVersionOffset);
  if (version < 1 || version > kSegmentFormatVersion)
    return Status::Corruption("segment header: unsupported format version " + std::to_string(version));
  std::uint32_t kind = GetFixed32(p + kSegKindOffset);
  if (kind != static_cast<std::uint32_t>(SegmentKind::kRedo) && kind != static_cast<std::uint32_t>(SegmentKind::kPages))
    return Status::Corruption("segment header: unknown kind " + std::to_string(kind));
  if (GetFixed32(p + kSegReservedOffset) != 0) return Status::Corruption("segment header: reserved bytes set");
  out->kind = static_cast<SegmentKind>(kind);
  out->sequence = GetFixed64(p + kSegSequenceOffset);
  out->base_lsn = GetFixed64(p + kSegBaseLsnOffset);
  return Status::Ok();
}

bool ValidRecordShape(const RecordHeader& h, std::string* why) {
  switch (h.type) {
    case RecordType::kRedo:
      if (h.payload_len == 0 || h.payload_len > kMaxRecordPayload) {
        *why = "redo record with payload length " + std::to_string(h.payload_len);
        return false;
      }
      if (h.end_lsn < h.start_lsn || h.end_lsn - h.start_lsn != h.payload_len) {
        *why = "redo record whose LSN range does not match its length";
        return false;
      }
      return true;
    case RecordType::kTruncate:
    case RecordType::kRelease:
      if (h.payload_len != 0 || h.start_lsn != h.end_lsn) {
        *why = "control record with a payload or an LSN range";
        return false;
      }
      return true;
    case RecordType::kTail:
      if (h.payload_len == 0 || h.payload_len > kMaxRecordPayload || h.end_lsn <= h.start_lsn ||
          h.end_lsn - h.start_lsn > h.payload_len) {
        *why = "tail record whose data end lies outside its block";
        return false;
      }
      return true;
    case RecordType::kPageImage:
      if (h.payload_len <= kPageKeySize || h.payload_len > kPageKeySize + kMaxPageImage ||
          h.start_lsn != h.end_lsn) {
        *why = "page record with bad length or LSN range";
        return false;
      }
      return true;
  }
  *why = "unknown record type " + std::to_string(static_cast<int>(h.type));
  return false;
}

void EncodeRecord(const RecordHeader& h, std::string_view payload, std::string* dst) {
  std::size_t at = dst->size();
  dst->resize(at + kRecordHeaderSize);
  char* p = dst->data() + at;
  p[kRecTypeOffset] = static_cast<char>(h.type);
  p[kRecReservedOffset] = p[kRecReservedOffset + 1] = p[kRecReservedOffset + 2] = 0;
  PutFixed32(p + kRecPayloadLenOffset, static_cast<std::uint32_t>(payload.size()));
  PutFixed64(p + kRecStartLsnOffset, h.start_lsn);
  PutFixed64(p + kRecEndLsnOffset, h.end_lsn);
  PutFixed64(p + kRecEpochOffset, h.epoch);
  std::uint32_t crc = Crc32c(0, p + kRecTypeOffset, kRecordHeaderSize - kRecTypeOffset);
  crc = Crc32c(crc, payload.data(), payload.size());
  PutFixed32(p + kRecCrcOffset, crc);
  dst->append(payload);
}

ParseResult ParseRecord(std::string_view bytes, RecordHeader* h, std::string_view* payload, std::string* why) {
  if (bytes.size() < kRecordHeaderSize) {
    *why = "record header cut short";
    return ParseResult::kIncomplete;
  }
  const char* p = bytes.data();
  if (p[kRecReservedOffset] != 0 || p[kRecReservedOffset + 1] != 0 || p[kRecReservedOffset + 2] != 0) {
    *why = "record reserved bytes set";
    return ParseResult::kBad;
  }
  h->type = static_cast<RecordType>(static_cast<unsigned char>(p[kRecTypeOffset]));
  h->payload_len = GetFixed32(p + kRecPayloadLenOffset);
  h->start_lsn = GetFixed64(p + kRecStartLsnOffset);
  h->end_lsn = GetFixed64(p + kRecEndLsnOffset);
  h->epoch = GetFixed64(p + kRecEpochOffset);
  if (!ValidRecordShape(*h, why)) return ParseResult::kBad;
  if (bytes.size() - kRecordHeaderSize < h->payload_len) {
    *why = "record payload cut short";
    return ParseResult::kIncomplete;
  }
  std::string_view body(p + kRecordHeaderSize, h->payload_len);
  std::uint32_t crc = Crc32c(0, p + kRecTypeOffset, kRecordHeaderSize - kRecTypeOffset);
  crc = Crc32c(crc, body.data(), body.size());
  if (crc != GetFixed32(p + kRecCrcOffset)) {
    *why = "record CRC mismatch";
    return ParseResult::kBad;
  }
  *payload = body;
  return ParseResult::kOk;
}

bool PeekRecordHeader(std::string_view bytes, RecordHeader* h) {
  if (bytes.size() < kRecordHeaderSize) return false;
  const char* p = bytes.data();
  if (p[kRecReservedOffset] != 0 || p[kRecReservedOffset + 1] != 0 || p[kRecReservedOffset + 2] != 0) return false;
  h->type = static_cast<RecordType>(static_cast<unsigned char>(p[kRecTypeOffset]));
  h->payload_len = GetFixed32(p + kRecPayloadLenOffset);
  h->start_lsn = GetFixed64(p + kRecStartLsnOffset);
  h->end_lsn = GetFixed64(p + kRecEndLsnOffset);
  h->epoch = GetFixed64(p + kRecEpochOffset);
  std::string why;
  return ValidRecordShape(*h, &why);
}

bool ChecksOutWithPayloadLength(std::string_view bytes, std::uint32_t payload_len) {
  if (bytes.size() < kRecordHeaderSize || payload_len > kMaxRecordPayloadOnDisk ||
      bytes.size() - kRecordHeaderSize < payload_len)
    return false;
  std::string copy(bytes.substr(0, kRecordHeaderSize + payload_len));
  PutFixed32(copy.data() + kRecPayloadLenOffset, payload_len);
  RecordHeader h;
  std::string_view body;
  std::string why;
  return ParseRecord(copy, &h, &body, &why) == ParseResult::kOk;
}

std::size_t FindValidRecord(std::string_view bytes, std::size_t from) {
  for (std::size_t at = from; at < bytes.size() && bytes.size() - at >= kRecordHeaderSize; ++at) {
    // Cheap filters first: most offsets fail on the reserved bytes or the type.
    const char* p = bytes.data() + at;
    if (p[kRecReservedOffset] != 0 || p[kRecReservedOffset + 1] != 0 || p[kRecReservedOffset + 2] != 0) continue;
    const auto type = static_cast<unsigned char>(p[kRecTypeOffset]);
    if (type < static_cast<unsigned char>(RecordType::kRedo) ||
        type > static_cast<unsigned char>(RecordType::kTail))
      continue;
    RecordHeader h;
    std::string_view body;
    std::string why;
    if (ParseRecord(bytes.substr(at), &h, &body, &why) == ParseResult::kOk) return at;
  }
  return std::string_view::npos;
}

std::string EncodeDurableFile(DurableFileKind kind, std::string_view payload) {
  std::string out(kDurableFileHeaderSize, '\0');
  PutFixed32(&out[kDfMagicOffset], kDurableFileMagic);
  PutFixed32(&out[kDfVersionOffset], kFormatVersion);
  PutFixed32(&out[kDfKindOffset], static_cast<std::uint32_t>(kind));
  PutFixed32(&out[kDfPayloadLenOffset], static_cast<std::uint32_t>(payload.size()));
  std::uint32_t crc = Crc32c(0, out.data(), kDfCrcOffset);
  crc = Crc32c(crc, payload.data(), payload.size());
  PutFixed32(&out[kDfCrcOffset], crc);
  out.append(payload);
  return out;
}

Status DecodeDurableFile(std::string_view bytes, DurableFileKind kind, std::string_view* payload) {
  if (bytes.size() < kDurableFileHeaderSize)
    return Status::Corruption("durable file: only " + std::to_string(bytes.size()) + " bytes");
  const char* p = bytes.data();
  std::uint32_t len = GetFixed32(p + kDfPayloadLenOffset);
  if (len > kMaxDurableFilePayload || bytes.size() != kDurableFileHeaderSize + len)
    return Status::Corruption("durable file: payload length " + std::to_string(len) + " does not match file size " +
                              std::to_string(bytes.size()));
  std::uint32_t crc = Crc32c(0, p, kDfCrcOffset);
  crc = Crc32c(crc, p + kDurableFileHeaderSize, len);
  if (crc != GetFixed32(p + kDfCrcOffset)) return Status::Corruption("durable file: CRC mismatch");
  if (GetFixed32(p + kDfMagicOffset) != kDurableFileMagic) return Status::Corruption("durable file: bad magic");
  std::uint32_t version = GetFixed32(p + kDfVersionOffset);
  if (version != kFormatVersion)
    return Status::Corruption("durable file: unsupported format version " + std::to_string(version));
  if (GetFixed32(p + kDfKindOffset) != static_cast<std::uint32_t>(kind))
    return Status::Corruption("durable file: wrong kind");
  *payload = std::string_view(p + kDurableFileHeaderSize, len);
  return Status::Ok();
}

}  // namespace strata::logservice::storage
