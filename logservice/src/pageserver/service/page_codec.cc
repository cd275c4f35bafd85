// Page service codec; the layout is documented in page_wire.h.
#include "page_codec.h"

#include "byte_codec.h"
#include "strata/rdma/crc32c.h"

namespace strata::pageserver::svc {
namespace {

using wire::MsgType;

using Writer = logservice::repl::ByteWriter;
using Reader = logservice::repl::ByteReader;
namespace header = logservice::header;

std::uint32_t Crc(std::string_view s) { return rdma::Crc32c(s); }

void PutResult(Writer& w, const PageResult& r) {
  w.U16(static_cast<std::uint16_t>(r.code));
  w.Str(r.error);
  w.U64(r.effective_lsn);
  w.U64(r.page_lsn);
  w.U8(r.flags);
  w.Bytes(r.image);
  w.U32(Crc(r.image));
}
bool GetResult(Reader& r, PageResult* p) {
  std::uint16_t code;
  std::uint32_t crc;
  if (!r.U16(&code) || code > wire::kLastCode || !r.Str(&p->error, wire::kMaxError) || !r.U64(&p->effective_lsn) ||
      !r.U64(&p->page_lsn) || !r.U8(&p->flags) || p->flags > wire::kNeverWritten ||
      !r.Bytes(&p->image, wire::kMaxPageSize) || !r.U32(&crc))
    return false;
  p->code = static_cast<wire::Code>(code);
  // An image only with kOk; the CRC covers it end to end (server to compute).
  return crc == Crc(p->image) && (p->code == wire::Code::kOk || p->image.empty());
}

void PutBody(Writer& w, const Frame& f) {
  if (wire::IsResponse(f.type)) w.Str(f.error);
  switch (f.type) {
    case MsgType::kGetPageReq: {
      const PageRequest& p = f.pages.at(0);
      w.U32(p.space); w.U32(p.page); w.U64(f.lsn); w.U64(p.not_modified_since);
      break;
    }
    case MsgType::kGetPageResp: PutResult(w, f.results.at(0)); break;
    case MsgType::kGetPagesReq:
      w.U64(f.lsn);
      w.U32(static_cast<std::uint32_t>(f.pages.size()));
      for (const auto& p : f.pages) { w.U32(p.space); w.U32(p.page); w.U64(p.not_modified_since); }
      break;
    case MsgType::kGetPagesResp:
      w.U32(static_cast<std::uint32_t>(f.results.size()));
      for (const auto& r : f.results) PutResult(w, r);
      break;
    case MsgType::kSpaceListReq: w.U64(f.lsn); break;
    case MsgType::kSpaceListResp:
      w.U32(static_cast<std::uint32_t>(f.spaces.size()));
      for (const auto& s : f.spaces) { w.U32(s.space); w.Str(s.name); w.U32(s.flags); w.U32(s.size_pages); w.U64(s.created_lsn); }
      break;
    case MsgType::kSpaceSizeReq:
    case MsgType::kSpaceExistsReq: w.U32(f.spaces.at(0).space); w.U64(f.lsn); break;
    case MsgType::kSpaceSizeResp: w.U32(f.spaces.empty() ? 0 : f.spaces[0].size_pages); break;
    case MsgType::kSpaceExistsResp:
      w.U8(f.exists ? 1 : 0);
      w.U64(f.spaces.empty() ? 0 : f.spaces[0].created_lsn);
      w.U64(f.spaces.empty() ? 0 : f.spaces[0].deleted_lsn);
      break;
    case MsgType::kStatusResp:
      w.U32(static_cast<std::uint32_t>(f.status.size()));
      for (const auto& [k, v] : f.status) { w.Str(k); w.U64(v); }
      break;
    case MsgType::kPutImagesReq:
      w.U64(f.epoch);
      w.U64(f.lsn);
      w.U32(static_cast<std::uint32_t>(f.images.size()));
      for (const auto& i : f.images) { w.U32(i.space); w.U32(i.page); w.Bytes(i.image); }
      break;
    case MsgType::kStatusReq:
    case MsgType::kPutImagesResp:
    case MsgType::kErrorResp: break;
  }
}

bool GetBody(Reader& r, Frame* f) {
  if (wire::IsResponse(f->type) && !r.Str(&f->error, wire::kMaxError)) return false;
  switch (f->type) {
    case MsgType::kGetPageReq: {
      PageRequest p;
      if (!r.U32(&p.space) || !r.U32(&p.page) || !r.U64(&f->lsn) || !r.U64(&p.not_modified_since)) return false;
      f->pages = {p};
      return true;
    }
    case MsgType::kGetPageResp: f->results.resize(1); return GetResult(r, &f->results[0]);
    case MsgType::kGetPagesReq: {
      std::uint32_t n;
      if (!r.U64(&f->lsn) || !r.U32(&n) || n == 0 || n > wire::kMaxBatch) return false;
      f->pages.resize(n);
      for (auto& p : f->pages)
        if (!r.U32(&p.space) || !r.U32(&p.page) || !r.U64(&p.not_modified_since)) return false;
      return true;
    }
    case MsgType::kGetPagesResp: {
      std::uint32_t n;
      if (!r.U32(&n) || n > wire::kMaxBatch) return false;
      f->results.resize(n);
      for (auto& p : f->results)
        if (!GetResult(r, &p)) return false;
      return true;
    }
    case MsgType::kSpaceListReq: return r.U64(&f->lsn);
    case MsgType::kSpaceListResp: {
      std::uint32_t n;
      if (!r.U32(&n) || n > wire::kMaxSpaces) return false;
      f->spaces.resize(n);
      for (auto& s : f->spaces)
        if (!r.U32(&s.space) || !r.Str(&s.name, wire::kMaxName) || !r.U32(&s.flags) || !r.U32(&s.size_pages) ||
            !r.U64(&s.created_lsn))
          return false;
      return true;
    }
    case MsgType::kSpaceSizeReq:
    case MsgType::kSpaceExistsReq:
      f->spaces.resize(1);
      return r.U32(&f->spaces[0].space) && r.U64(&f->lsn);
    case MsgType::kSpaceSizeResp: f->spaces.resize(1); return r.U32(&f->spaces[0].size_pages);
    case MsgType::kSpaceExistsResp: {
      std::uint8_t e;
      f->spaces.resize(1);
      if (!r.U8(&e) || e > 1 || !r.U64(&f->spaces[0].created_lsn) || !r.U64(&f->spaces[0].deleted_lsn)) return false;
      f->exists = e == 1;
      return true;
    }
    case MsgType::kStatusResp: {
      std::uint32_t n;
      if (!r.U32(&n) || n > wire::kMaxStatus) return false;
      f->status.resize(n);
      for (auto& [k, v] : f->status)
        if (!r.Str(&k, wire::kMaxName) || !r.U64(&v)) return false;
      return true;
    }
    case MsgType::kPutImagesReq: {
      std::uint32_t n;
      if (!r.U64(&f->epoch) || !r.U64(&f->lsn) || !r.U32(&n) || n == 0 || n > wire::kMaxPutImages) return false;
      f->images.resize(n);
      for (auto& i : f->images)
        if (!r.U32(&i.space) || !r.U32(&i.page) || !r.Bytes(&i.image, wire::kMaxPageSize) || i.image.empty())
          return false;
      return true;
    }
    case MsgType::kStatusReq:
    case MsgType::kPutImagesResp:
    case MsgType::kErrorResp: return true;
  }
  return false;
}


}  // namespace

std::string Encode(const Frame& f) {
  Writer body;
  PutBody(body, f);
  return header::Encode(wire::kProtocol,
                        {static_cast<std::uint8_t>(f.type), static_cast<std::uint16_t>(f.code), f.request_id, 0},
                        body.out());
}

Status Decode(std::string_view in, Frame* out) {
  header::Fields h;
  if (Status s = header::Decode(wire::kProtocol, in, &h); !s.ok()) return s;
  Frame f;
  f.type = static_cast<MsgType>(h.type);
  f.code = static_cast<wire::Code>(h.code);
  f.request_id = h.request_id;
  Reader r(in.substr(wire::kHeaderSize));
  if (!GetBody(r, &f)) return Status::InvalidArgument("malformed " + std::string(TypeName(f.type)) + " body");
  if (!r.done()) return Status::InvalidArgument("trailing bytes after " + std::string(TypeName(f.type)));
  *out = std::move(f);
  return Status::Ok();
}

std::string_view CodeName(wire::Code c) {
  static constexpr std::string_view kNames[] = {"ok",           "invalid",       "space_unknown", "space_deleted",
                                                "beyond_size",  "below_horizon", "unsupported",   "apply_failed",
                                                "corrupt",      "unavailable"};
  const auto i = static_cast<std::size_t>(c);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view TypeName(wire::MsgType t) {
  static constexpr std::string_view kNames[] = {
      "?",             "GetPageReq",      "GetPageResp",    "GetPagesReq",   "GetPagesResp",  "SpaceListReq",
      "SpaceListResp", "SpaceSizeReq",    "SpaceSizeResp",  "SpaceExistsReq", "SpaceExistsResp", "StatusReq",
      "StatusResp",    "PutImagesReq",    "PutImagesResp",  "?",             "ErrorResp"};
  const auto i = static_cast<std::size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

}  // namespace strata::pageserver::svc
