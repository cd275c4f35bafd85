// A stand-in for `mysqld --strata-page-apply` in the page server's tests: it
// speaks the helper pipe protocol (helper_protocol.h) and misbehaves on
// request, so that HelperProcess and InnoDbRedoHelper can be tested without
// the server build. It knows no redo format:
//   PARSE  one record per whole 512-byte block: space 1, page = the block's
//          index from the start, type 7, body = the block's first 8 bytes,
//          [block, block + 512); parsed_to = the end of the blocks; space 1
//          created (flags 0x21, "./fake/t.ibd") and sized 7 pages by the first
//   APPLY  a valid crc32 InnoDB page of the page asked, its LSN the last
//          record's end (or the base's), the record count at byte 38
// Options: --die-once=FILE (exit at the first APPLY unless FILE exists; it
// creates FILE), --hang-on-apply, --garble-once=FILE (a reply with a wrong
// CRC, once), --refuse-apply (an ERROR reply), --wrong-page, --bad-crc-check,
// --bad-block (PARSE's scan stops after the first block, as InnoDB's does at
// a block that fails its checks).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "strata/rdma/crc32c.h"
#include "helper/helper_protocol.h"
#include "helper/innodb_page.h"
#include "replication/byte_codec.h"

namespace {

using namespace strata::pageserver::helper;
using strata::logservice::repl::ByteReader;
using strata::logservice::repl::ByteWriter;
using strata::rdma::Crc32c;

bool ReadExact(char* p, std::size_t n) {
  while (n > 0) {
    const ssize_t r = read(0, p, n);
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

void WriteExact(const std::string& s) {
  std::size_t at = 0;
  while (at < s.size()) {
    const ssize_t r = write(1, s.data() + at, s.size() - at);
    if (r <= 0) _exit(3);
    at += static_cast<std::size_t>(r);
  }
}

bool Once(const std::string& marker) {
  if (marker.empty() || access(marker.c_str(), F_OK) == 0) return false;
  if (FILE* f = std::fopen(marker.c_str(), "w")) std::fclose(f);
  return true;
}

void Reply(std::uint64_t id, std::uint16_t type, const std::string& payload, bool garble = false) {
  FrameHeader h;
  h.type = type;
  h.request_id = id;
  h.payload_len = static_cast<std::uint32_t>(payload.size());
  h.crc = Crc32c(payload) ^ (garble ? 1u : 0u);
  WriteExact(EncodeHeader(h) + payload);
}

void Store(std::string* s, std::size_t at, std::uint64_t v, int n) {
  for (int i = n - 1; i >= 0; --i, v >>= 8) (*s)[at + i] = static_cast<char>(v & 0xff);
}

}  // namespace

int main(int argc, char** argv) {
  std::string die_once, garble_once;
  bool hang = false, refuse = false, wrong_page = false, bad_crc_check = false, bad_block = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--die-once=", 0) == 0) die_once = a.substr(11);
    if (a.rfind("--garble-once=", 0) == 0) garble_once = a.substr(14);
    if (a == "--hang-on-apply") hang = true;
    if (a == "--refuse-apply") refuse = true;
    if (a == "--wrong-page") wrong_page = true;
    if (a == "--bad-crc-check") bad_crc_check = true;
    if (a == "--bad-block") bad_block = true;
  }
  std::uint32_t page_size = 16384;
  for (;;) {
    char raw[kHeaderSize];
    if (!ReadExact(raw, sizeof raw)) return 0;
    FrameHeader h;
    const char* why = nullptr;
    if (!DecodeHeader(std::string_view(raw, sizeof raw), &h, &why)) return 2;
    std::string payload(h.payload_len, '\0');
    if (!ReadExact(payload.data(), payload.size()) || Crc32c(payload) != h.crc) return 2;
    ByteReader r(payload);
    ByteWriter w;
    if (h.type == kHello) {
      if (!r.U32(&page_size)) return 2;
      w.U32(page_size);
      w.U32(bad_crc_check ? 0 : kCrcCheckValue);
      w.Str("fake");
      Reply(h.request_id, kReady, w.out());
    } else if (h.type == kSpaces) {
      Reply(h.request_id, kSpacesOk, "");
    } else if (h.type == kParse) {
      std::uint64_t from = 0, block = 0;
      std::string blocks;
      if (!r.U64(&from) || !r.U64(&block) || !r.Bytes(&blocks, kMaxPayload)) return 2;
      const std::size_t n = blocks.size() / 512;
      w.U64(block + n * 512);
      w.U64(bad_block ? block + 512 : block + n * 512);  // scanned_to
      w.U32(static_cast<std::uint32_t>(n));
      for (std::size_t i = 0; i < n; ++i) {
        w.U32(1);
        w.U32(static_cast<std::uint32_t>(i));
        w.U8(7);
        w.U64(block + i * 512 + (i == 0 ? from - block : 0));
        w.U64(block + (i + 1) * 512);
        w.Bytes(std::string_view(blocks).substr(i * 512, 8));
      }
      // Tablespace operations: space 1 is created and sized by the first block.
      w.U32(n > 0 ? 2 : 0);
      if (n > 0) {
        w.U8(kSpaceCreate), w.U32(1), w.U32(0x21), w.U64(0), w.Str("./fake/t.ibd"), w.U64(block + 512);
        w.U8(kSpaceSize), w.U32(1), w.U32(0), w.U64(7), w.Str(""), w.U64(block + 512);
      }
      Reply(h.request_id, kParsed, w.out());
    } else if (h.type == kApply) {
      if (Once(die_once)) _exit(9);
      if (hang) std::this_thread::sleep_for(std::chrono::hours(1));
      std::uint32_t n = 0, space = 0, page = 0, nrec = 0;
      bool has_base = false;
      std::string base;
      if (!r.U32(&n) || n != 1 || !r.U32(&space) || !r.U32(&page) || !r.Bool(&has_base) || !r.Bytes(&base, kMaxPageSize) ||
          !r.U32(&nrec))
        return 2;
      std::uint64_t lsn = 0;
      for (std::uint32_t i = 0; i < nrec; ++i) {
        std::uint8_t type;
        std::uint64_t start, end;
        std::string body;
        if (!r.U8(&type) || !r.U64(&start) || !r.U64(&end) || !r.Bytes(&body, kMaxPayload)) return 2;
        lsn = end;
      }
      if (refuse) {
        w.U32(1);
        w.U8(0);
        w.Str("the base image failed InnoDB's read checks (checksum or page id)");
        w.U64(0);
        w.U32(0);
        w.Bytes("");
        Reply(h.request_id, kApplied, w.out());
        continue;
      }
      std::string image(page_size, '\0');
      Store(&image, 4, wrong_page ? page + 1 : page, 4);
      Store(&image, 34, space, 4);
      Store(&image, 16, lsn, 8);
      Store(&image, 38, nrec, 4);
      Store(&image, page_size - 4, lsn & 0xFFFFFFFFu, 4);
      Store(&image, 0, InnoDbPageCrc32(image), 4);
      w.U32(1);
      w.U8(1);
      w.Str("");
      w.U64(lsn);
      w.U32(nrec);
      w.Bytes(image);
      Reply(h.request_id, kApplied, w.out(), Once(garble_once));
    } else {
      ByteWriter e;
      e.Str("unknown request type " + std::to_string(h.type));
      Reply(h.request_id, kError, e.out());
    }
  }
}
