// FakeRedoHelper: the toy redo format of fake_redo.h.
#include "fake_redo.h"

#include <cstring>

#include "strata/rdma/crc32c.h"

namespace strata::pageserver {
namespace {

using rdma::Crc32c;

void Put(std::string* o, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) o->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::uint64_t Get(std::string_view s, std::size_t at, int n) {
  std::uint64_t x = 0;
  for (int i = 0; i < n; ++i) x |= std::uint64_t(static_cast<unsigned char>(s[at + i])) << (8 * i);
  return x;
}
void Set(std::string* s, std::size_t at, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint32_t PageCrc(std::string img) {
  Set(&img, 16, 0, 4);
  return Crc32c(img);
}
std::string PageName(PageId p) { return "page " + std::to_string(p.space_id) + ":" + std::to_string(p.page_no); }

}  // namespace

std::string FakeRedoHelper::Group(const std::vector<Rec>& recs) {
  std::string body;
  Put(&body, recs.size(), 2);
  for (const auto& r : recs) {
    Put(&body, r.type, 1);
    Put(&body, r.space, 4);
    Put(&body, r.page, 4);
    Put(&body, r.arg, 4);
    Put(&body, r.bytes.size(), 4);
    body += r.bytes;
  }
  std::string g;
  Put(&g, kGroupMagic, 4);
  Put(&g, body.size(), 4);
  Put(&g, Crc32c(body), 4);
  return g + body;
}

Result<ParseResult> FakeRedoHelper::Parse(Lsn from, std::string_view bytes) {
  ParseResult out;
  std::size_t at = 0;
  while (bytes.size() - at >= kGroupHeader) {
    const Lsn lsn = from + at;
    if (Get(bytes, at, 4) != kGroupMagic)
      return Status::Corruption("fake redo: no group at LSN " + std::to_string(lsn) + " (bad magic)");
    const std::uint64_t len = Get(bytes, at + 4, 4);
    if (len > (16u << 20)) return Status::Corruption("fake redo: group at LSN " + std::to_string(lsn) + " too long");
    if (bytes.size() - at - kGroupHeader < len) break;  // incomplete: given again, longer
    const std::string_view body = bytes.substr(at + kGroupHeader, len);
    if (Crc32c(body) != Get(bytes, at + 8, 4))
      return Status::Corruption("fake redo: group at LSN " + std::to_string(lsn) + " fails its CRC");
    const Lsn end = lsn + kGroupHeader + len;
    if (body.size() < 2) return Status::Corruption("fake redo: empty group at LSN " + std::to_string(lsn));
    const std::size_t n = Get(body, 0, 2);
    std::size_t p = 2;
    std::vector<PageRecord> recs;
    std::vector<SpaceEvent> events;
    for (std::size_t k = 0; k < n; ++k) {
      if (body.size() - p < 17) return Status::Corruption("fake redo: truncated record at LSN " + std::to_string(lsn));
      const auto type = static_cast<std::uint8_t>(Get(body, p, 1));
      const auto space = static_cast<std::uint32_t>(Get(body, p + 1, 4));
      const auto page = static_cast<std::uint32_t>(Get(body, p + 5, 4));
      const auto arg = static_cast<std::uint32_t>(Get(body, p + 9, 4));
      const std::size_t blen = Get(body, p + 13, 4);
      p += 17;
      if (body.size() - p < blen) return Status::Corruption("fake redo: truncated record at LSN " + std::to_string(lsn));
      const std::string_view data = body.substr(p, blen);
      p += blen;
      switch (type) {
        case kWrite: {
          std::string rb;
          Put(&rb, arg, 4);
          rb.append(data);
          recs.push_back(PageRecord{PageId{space, page}, lsn, end, RecordKind::kDelta, std::move(rb)});
          break;
        }
        case kCreate: events.push_back(SpaceEvent{SpaceEvent::Kind::kCreate, space, page, std::string(data), end}); break;
        case kExtend: events.push_back(SpaceEvent{SpaceEvent::Kind::kExtend, space, page, "", end}); break;
        case kDelete: events.push_back(SpaceEvent{SpaceEvent::Kind::kDelete, space, 0, "", end}); break;
        default:
          return Status::Corruption("fake redo: unknown record type " + std::to_string(type) + " at LSN " +
                                    std::to_string(lsn));
      }
    }
    if (p != body.size()) return Status::Corruption("fake redo: trailing bytes in group at LSN " + std::to_string(lsn));
    for (auto& r : recs) out.records.push_back(std::move(r));
    for (auto& e : events) out.events.push_back(std::move(e));
    at += kGroupHeader + len;
  }
  out.parsed_to = from + at;
  return out;
}

std::string FakeRedoHelper::MakeImage(PageId page, Lsn lsn, std::string_view payload) const {
  std::string img(page_size_, '\0');
  Set(&img, 0, lsn, 8);
  Set(&img, 8, page.space_id, 4);
  Set(&img, 12, page.page_no, 4);
  std::memcpy(img.data() + kPageHeader, payload.data(), std::min<std::size_t>(payload.size(), page_size_ - kPageHeader));
  Set(&img, 16, PageCrc(img), 4);
  return img;
}

Result<Lsn> FakeRedoHelper::CheckImage(PageId page, std::string_view image) const {
  if (image.size() != page_size_)
    return Status::Corruption(PageName(page) + ": image of " + std::to_string(image.size()) + " bytes, page size " +
                              std::to_string(page_size_));
  if (Get(image, 8, 4) != page.space_id || Get(image, 12, 4) != page.page_no)
    return Status::Corruption(PageName(page) + ": image carries page id " + std::to_string(Get(image, 8, 4)) + ":" +
                              std::to_string(Get(image, 12, 4)));
  if (PageCrc(std::string(image)) != Get(image, 16, 4)) return Status::Corruption(PageName(page) + ": image checksum mismatch");
  return Get(image, 0, 8);
}

Result<std::string> FakeRedoHelper::Apply(PageId page, const std::optional<std::string>& base,
                                          const std::vector<PageRecord>& records) {
  std::string img;
  if (base) {
    auto lsn = CheckImage(page, *base);
    if (!lsn.ok()) return lsn.status();
    img = *base;
  } else {
    img = MakeImage(page, 0, "");
  }
  for (const auto& r : records) {
    if (r.kind != RecordKind::kDelta || r.body.size() < 4)
      return Status::Corruption(PageName(page) + ": record at LSN " + std::to_string(r.start_lsn) + " is not a fake write");
    const Lsn page_lsn = Get(img, 0, 8);
    if (r.start_lsn < page_lsn) continue;  // already in the base (as recv_recover_page)
    const std::size_t off = Get(r.body, 0, 4);
    const std::size_t len = r.body.size() - 4;
    if (off < kPageHeader || off + len > page_size_)
      return Status::InvalidArgument(PageName(page) + ": write of " + std::to_string(len) + " bytes at offset " +
                                     std::to_string(off) + " does not fit the page (LSN " + std::to_string(r.start_lsn) + ")");
    std::memcpy(img.data() + off, r.body.data() + 4, len);
    Set(&img, 0, r.end_lsn, 8);
  }
  Set(&img, 16, PageCrc(img), 4);
  return img;
}

}  // namespace strata::pageserver
