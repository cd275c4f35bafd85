// InnoDbRedoHelper: see innodb_redo_helper.h.
#include "innodb_redo_helper.h"

#include <algorithm>

#include "helper_protocol.h"
#include "innodb_page.h"
#include "replication/byte_codec.h"

namespace strata::pageserver::helper {
namespace {

using logservice::repl::ByteReader;
using logservice::repl::ByteWriter;

constexpr std::size_t kMaxRecordsPerParse = 16u << 20;

std::string PageName(PageId p) { return "page " + std::to_string(p.space_id) + ":" + std::to_string(p.page_no); }

Status Malformed(const char* what) { return Status::Corruption(std::string("a malformed ") + what + " reply from the helper"); }

}  // namespace

InnoDbRedoHelper::InnoDbRedoHelper(Options options) : options_(std::move(options)) {
  parser_ = NewChild();
  for (int i = 0; i < std::max(1, options_.apply_helpers); ++i) {
    appliers_.push_back(NewChild());
    free_appliers_.push_back(appliers_.back().get());
  }
}

std::unique_ptr<HelperProcess> InnoDbRedoHelper::NewChild() {
  HelperProcess::Options o;
  o.argv = {options_.mysqld, "--strata-page-apply", "--seccomp=" + options_.seccomp};
  o.timeout = options_.timeout;
  o.log = options_.log;
  o.on_start = [this](HelperProcess& child) { return Hello(child); };
  return std::make_unique<HelperProcess>(std::move(o));
}

Status InnoDbRedoHelper::Hello(HelperProcess& child) {
  ByteWriter hello;
  hello.U32(options_.page_size);
  auto ready = child.Call(kHello, hello.out());
  if (!ready.ok()) return ready.status();
  ByteReader r(*ready);
  std::uint32_t page_size = 0, crc = 0;
  std::string build;
  if (!r.U32(&page_size) || !r.U32(&crc) || !r.Str(&build, 256)) return Malformed("READY");
  if (page_size != options_.page_size)
    return Status::InvalidArgument("the helper runs with " + std::to_string(page_size) + "-byte pages, not " +
                                   std::to_string(options_.page_size));
  if (crc != kCrcCheckValue) return Status::InvalidArgument("the helper's CRC-32C is not the page server's");
  return SendSpaces(child);
}

Status InnoDbRedoHelper::SendSpaces(HelperProcess& child) {
  ByteWriter w;
  std::uint64_t version;
  {
    std::lock_guard<std::mutex> l(mu_);
    version = spaces_version_;
    w.U32(static_cast<std::uint32_t>(spaces_.size()));
    for (const auto& s : spaces_) {
      w.U32(s.space_id);
      w.U32(s.flags);
      w.U32(s.size_pages);
    }
  }
  auto ok = child.Call(kSpaces, w.out());
  if (!ok.ok()) return ok.status();
  std::lock_guard<std::mutex> l(mu_);
  known_version_[&child] = version;
  return Status::Ok();
}

Status InnoDbRedoHelper::SetSpaces(std::vector<SpaceInfo> spaces) {
  // The apply children learn the new list before their next request
  // (SendSpacesIfStale); parsing needs none.
  std::lock_guard<std::mutex> l(mu_);
  spaces_ = std::move(spaces);
  ++spaces_version_;
  return Status::Ok();
}

Result<std::string> InnoDbRedoHelper::CallWithRetry(HelperProcess& child, std::uint16_t type,
                                                    const std::string& payload) {
  auto r = child.Call(type, payload);
  if (r.ok() || r.status().code() != logservice::StatusCode::kIoError) return r;
  return child.Call(type, payload);  // a fresh child (HelperProcess restarts it)
}

HelperProcess* InnoDbRedoHelper::TakeApplyChild() {
  std::unique_lock<std::mutex> l(mu_);
  free_cv_.wait(l, [&] { return !free_appliers_.empty(); });
  HelperProcess* c = free_appliers_.back();
  free_appliers_.pop_back();
  return c;
}

void InnoDbRedoHelper::ReturnApplyChild(HelperProcess* child) {
  {
    std::lock_guard<std::mutex> l(mu_);
    free_appliers_.push_back(child);
  }
  free_cv_.notify_one();
}

std::uint64_t InnoDbRedoHelper::starts() const {
  std::uint64_t n = parser_->starts();
  for (const auto& c : appliers_) n += c->starts();
  return n;
}

Result<ParseResult> InnoDbRedoHelper::Parse(Lsn from, std::string_view bytes) {
  ParseResult out;
  out.parsed_to = from;
  const Lsn block = block_start(from);
  // At most kMaxParseBytes a call (recovery's parse buffer has a limit):
  // the rest is given again, from the new parsed_to.
  const std::size_t whole = std::min<std::size_t>(bytes.size(), kMaxParseBytes) / kLogBlockSize * kLogBlockSize;
  if (whole == 0) return out;  // not a whole block yet: given again, longer
  ByteWriter w;
  w.U64(from);
  w.U64(block);
  w.Bytes(bytes.substr(0, whole));
  auto reply = CallWithRetry(*parser_, kParse, w.out());
  if (!reply.ok()) return Status::Corruption("parse at LSN " + std::to_string(from) + ": " + reply.status().message());
  ByteReader r(*reply);
  std::uint64_t parsed_to = 0, scanned_to = 0;
  std::uint32_t n = 0;
  if (!r.U64(&parsed_to) || !r.U64(&scanned_to) || !r.U32(&n) || n > kMaxRecordsPerParse) return Malformed("PARSED");
  if (parsed_to < from || parsed_to > block + whole) return Malformed("PARSED (parsed_to outside the blocks)");
  // InnoDB's scanner takes a block that fails its checks for the end of the
  // log. Only the last block given may end the log (the tail); a stop before
  // it is damage in the stream, never a place to wait for more.
  if (whole > kLogBlockSize && scanned_to < block + whole - kLogBlockSize)
    return Status::Corruption("the log block at LSN " + std::to_string(block_start(scanned_to)) +
                              " failed InnoDB's block checks (number, checksum or epoch)");
  out.records.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    PageRecord rec;
    std::uint8_t type = 0;
    std::string body;
    if (!r.U32(&rec.page.space_id) || !r.U32(&rec.page.page_no) || !r.U8(&type) || !r.U64(&rec.start_lsn) ||
        !r.U64(&rec.end_lsn) || !r.Bytes(&body, kMaxPayload))
      return Malformed("PARSED");
    if (rec.start_lsn < from || rec.end_lsn > parsed_to || rec.start_lsn >= rec.end_lsn)
      return Malformed("PARSED (a record outside the parsed range)");
    rec.kind = RecordKind::kDelta;
    rec.body.reserve(body.size() + 1);
    rec.body.push_back(static_cast<char>(type));
    rec.body += body;
    out.records.push_back(std::move(rec));
  }
  std::uint32_t m = 0;
  if (!r.U32(&m) || m > kMaxRecordsPerParse) return Malformed("PARSED");
  for (std::uint32_t i = 0; i < m; ++i) {
    std::uint8_t kind = 0;
    std::uint32_t space = 0, flags = 0;
    std::uint64_t size = 0, lsn = 0;
    std::string name;
    if (!r.U8(&kind) || !r.U32(&space) || !r.U32(&flags) || !r.U64(&size) || !r.Str(&name, 4096) || !r.U64(&lsn))
      return Malformed("PARSED");
    if (lsn <= from || lsn > parsed_to) return Malformed("PARSED (a tablespace operation outside the parsed range)");
    auto event = ToSpaceEvent(kind, space, flags, size, std::move(name), lsn);
    if (!event.ok()) return event.status();
    LearnSpaces({*event});  // a later extend of a space created here needs its page size
    out.events.push_back(std::move(*event));
  }
  if (!r.done()) return Malformed("PARSED (trailing bytes)");
  // The helper lists records page by page; the store takes them in log
  // order. (end, start) is that order and keeps each page's own order.
  std::stable_sort(out.records.begin(), out.records.end(), [](const PageRecord& a, const PageRecord& b) {
    return a.end_lsn != b.end_lsn ? a.end_lsn < b.end_lsn : a.start_lsn < b.start_lsn;
  });
  out.parsed_to = parsed_to;
  return out;
}

// Physical page size of a tablespace from its flags (FSP_SPACE_FLAGS): a
// compressed tablespace's zip_ssize (bits 1-4) gives 512 << zip_ssize.
std::uint32_t InnoDbRedoHelper::PhysicalPageSize(std::uint32_t flags) const {
  const std::uint32_t zip_ssize = (flags >> 1) & 0xF;
  return zip_ssize == 0 ? options_.page_size : (512u << zip_ssize);
}

std::uint32_t InnoDbRedoHelper::physical_page_size(std::uint32_t space) const {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& s : spaces_)
    if (s.space_id == space) return PhysicalPageSize(s.flags);
  return options_.page_size;
}

Result<SpaceEvent> InnoDbRedoHelper::ToSpaceEvent(std::uint8_t kind, std::uint32_t space, std::uint32_t flags,
                                                  std::uint64_t size, std::string name, Lsn lsn) const {
  SpaceEvent e;
  e.space = space;
  e.lsn = lsn;
  switch (kind) {
    case kSpaceCreate:
      e.kind = SpaceEvent::Kind::kCreate;
      e.flags = flags;
      e.name = std::move(name);
      return e;
    case kSpaceExtend:
      e.kind = SpaceEvent::Kind::kExtend;
      e.size_pages = static_cast<std::uint32_t>(size / physical_page_size(space));
      return e;
    case kSpaceSize:
      e.kind = SpaceEvent::Kind::kExtend;
      e.size_pages = static_cast<std::uint32_t>(size);
      return e;
    case kSpaceDelete:
      e.kind = SpaceEvent::Kind::kDelete;
      e.name = std::move(name);
      return e;
    case kSpaceRename:
      e.kind = SpaceEvent::Kind::kRename;
      e.name = std::move(name);
      return e;
    default:
      return Malformed("PARSED (an unknown tablespace operation)");
  }
}

// The children apply pages of tablespaces they were told of: a create adds
// one (flags), a size change updates it; the list goes to each child before
// its next request.
void InnoDbRedoHelper::LearnSpaces(const std::vector<SpaceEvent>& events) {
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& e : events) {
    auto it = std::find_if(spaces_.begin(), spaces_.end(), [&](const SpaceInfo& s) { return s.space_id == e.space; });
    if (e.kind == SpaceEvent::Kind::kCreate) {
      if (it == spaces_.end()) it = spaces_.insert(spaces_.end(), SpaceInfo{e.space, e.flags, 1});
      it->flags = e.flags;
      ++spaces_version_;
    } else if (e.kind == SpaceEvent::Kind::kExtend && it != spaces_.end() && e.size_pages > it->size_pages) {
      it->size_pages = e.size_pages;
      ++spaces_version_;
    }
  }
}

Status InnoDbRedoHelper::SendSpacesIfStale(HelperProcess& child) {
  {
    std::lock_guard<std::mutex> l(mu_);
    // A child not running gets the list when it starts (Hello).
    if (child.pid() <= 0 || known_version_[&child] == spaces_version_) return Status::Ok();
  }
  return SendSpaces(child);
}

Result<std::string> InnoDbRedoHelper::Apply(PageId page, const std::optional<std::string>& base,
                                            const std::vector<PageRecord>& records) {
  ByteWriter w;
  w.U32(1);
  w.U32(page.space_id);
  w.U32(page.page_no);
  w.U8(base.has_value() ? 1 : 0);
  w.Bytes(base.has_value() ? std::string_view(*base) : std::string_view());
  w.U32(static_cast<std::uint32_t>(records.size()));
  for (const auto& rec : records) {
    if (rec.kind != RecordKind::kDelta || rec.body.empty() || !(rec.page == page))
      return Status::InvalidArgument(PageName(page) + ": a record that is not this page's InnoDB redo");
    w.U8(static_cast<std::uint8_t>(rec.body[0]));
    w.U64(rec.start_lsn);
    w.U64(rec.end_lsn);
    w.Bytes(std::string_view(rec.body).substr(1));
  }
  HelperProcess* child = TakeApplyChild();
  Status told = SendSpacesIfStale(*child);
  if (!told.ok()) child->Kill();  // its restart sends the list
  auto reply = CallWithRetry(*child, kApply, w.out());
  ReturnApplyChild(child);
  if (!reply.ok()) return Status::Corruption(PageName(page) + ": " + reply.status().message());
  ByteReader r(*reply);
  std::uint32_t n = 0, applied = 0;
  bool ok = false;
  std::string error, image;
  std::uint64_t page_lsn = 0;
  if (!r.U32(&n) || n != 1 || !r.Bool(&ok) || !r.Str(&error, 65535) || !r.U64(&page_lsn) || !r.U32(&applied) ||
      !r.Bytes(&image, kMaxPageSize) || !r.done())
    return Malformed("APPLIED");
  if (!ok) return Status::Corruption(PageName(page) + ": " + error);
  if (image.size() != physical_page_size(page.space_id))
    return Status::Corruption(PageName(page) + ": the helper returned " + std::to_string(image.size()) + " bytes, not " +
                              std::to_string(physical_page_size(page.space_id)));
  auto checked = CheckImage(page, image);
  if (!checked.ok()) return Status::Corruption("the helper returned a bad image: " + checked.status().message());
  if (*checked != page_lsn) return Status::Corruption(PageName(page) + ": the helper's page LSN is not the image's");
  // Every record applied, or was already in the base: either way the page
  // is at least at the last record's end (records come in LSN order).
  if (!records.empty() && page_lsn < records.back().end_lsn)
    return Status::Corruption(PageName(page) + ": the rebuilt page is at LSN " + std::to_string(page_lsn) +
                              ", below its last record's end " + std::to_string(records.back().end_lsn));
  return image;
}

std::optional<SpaceEvent> InnoDbRedoHelper::SeedSpace(PageId page, std::string_view image) {
  auto header = InnoDbSpaceHeader(page, image);
  if (!header) return std::nullopt;
  SpaceEvent e;
  e.kind = SpaceEvent::Kind::kCreate;
  e.space = page.space_id;
  e.flags = header->flags;
  e.size_pages = header->size_pages;
  LearnSpaces({e});
  return e;
}

Result<Lsn> InnoDbRedoHelper::CheckImage(PageId page, std::string_view image) const {
  return CheckInnoDbPage(page, image, options_.page_size);
}

}  // namespace strata::pageserver::helper
