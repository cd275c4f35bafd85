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
  std::string version;
  if (!r.U32(&page_size) || !r.U32(&crc) || !r.Str(&version, 256)) return Malformed("READY");
  if (page_size != options_.page_size)
    return Status::InvalidArgument("the helper runs with " + std::to_string(page_size) + "-byte pages, not " +
                                   std::to_string(options_.page_size));
  if (crc != kCrcCheckValue) return Status::InvalidArgument("the helper's CRC-32C is not the page server's");
  ByteWriter w;
  {
    std::lock_guard<std::mutex> l(mu_);
    w.U32(static_cast<std::uint32_t>(spaces_.size()));
    for (const auto& s : spaces_) {
      w.U32(s.space_id);
      w.U32(s.flags);
      w.U32(s.size_pages);
    }
  }
  auto ok = child.Call(kSpaces, w.out());
  return ok.ok() ? Status::Ok() : ok.status();
}

Status InnoDbRedoHelper::SetSpaces(std::vector<SpaceInfo> spaces) {
  {
    std::lock_guard<std::mutex> l(mu_);
    spaces_ = std::move(spaces);
  }
  // Running children learn the list now, the others when they start. A
  // child that fails it is killed: its restart sends the list again.
  std::vector<HelperProcess*> children{parser_.get()};
  for (std::size_t i = 0; i < appliers_.size(); ++i) children.push_back(TakeApplyChild());
  Status first = Status::Ok();
  for (HelperProcess* c : children) {
    if (c->pid() > 0) {
      Status s = Hello(*c);
      if (!s.ok()) {
        c->Kill();
        if (first.ok()) first = s;
      }
    }
  }
  for (std::size_t i = 1; i < children.size(); ++i) ReturnApplyChild(children[i]);
  return first;
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
  const std::size_t whole = bytes.size() / kLogBlockSize * kLogBlockSize;
  if (whole == 0) return out;  // not a whole block yet: given again, longer
  ByteWriter w;
  w.U64(from);
  w.U64(block);
  w.Bytes(bytes.substr(0, whole));
  auto reply = CallWithRetry(*parser_, kParse, w.out());
  if (!reply.ok()) return Status::Corruption("parse at LSN " + std::to_string(from) + ": " + reply.status().message());
  ByteReader r(*reply);
  std::uint64_t parsed_to = 0;
  std::uint32_t n = 0;
  if (!r.U64(&parsed_to) || !r.U32(&n) || n > kMaxRecordsPerParse) return Malformed("PARSED");
  if (parsed_to < from || parsed_to > block + whole) return Malformed("PARSED (parsed_to outside the blocks)");
  out.records.reserve(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    PageRecord rec;
    std::uint8_t type = 0;
    std::string body;
    if (!r.U32(&rec.page.space_id) || !r.U32(&rec.page.page_no) || !r.U8(&type) || !r.U64(&rec.start_lsn) ||
        !r.U64(&rec.end_lsn) || !r.Bytes(&body, kMaxPayload))
      return Malformed("PARSED");
    if (rec.end_lsn <= from || rec.end_lsn > parsed_to || rec.start_lsn >= rec.end_lsn)
      return Malformed("PARSED (a record outside the parsed range)");
    rec.kind = RecordKind::kDelta;
    rec.body.reserve(body.size() + 1);
    rec.body.push_back(static_cast<char>(type));
    rec.body += body;
    out.records.push_back(std::move(rec));
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
  auto checked = CheckImage(page, image);
  if (!checked.ok()) return Status::Corruption("the helper returned a bad image: " + checked.status().message());
  if (*checked != page_lsn) return Status::Corruption(PageName(page) + ": the helper's page LSN is not the image's");
  return image;
}

Result<Lsn> InnoDbRedoHelper::CheckImage(PageId page, std::string_view image) const {
  return CheckInnoDbPage(page, image, options_.page_size);
}

}  // namespace strata::pageserver::helper
