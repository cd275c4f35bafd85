// Replication message codec; the layout is documented in wire.h.
#include "codec.h"

#include <cstring>

#include "byte_codec.h"
#include "message_header.h"

namespace strata::logservice::repl {
namespace {

using wire::MsgType;

using Writer = ByteWriter;
using Reader = ByteReader;

void PutHistory(Writer& w, const std::vector<SealEntry>& h) {
  w.U32(static_cast<std::uint32_t>(h.size()));
  for (const auto& e : h) { w.U64(e.epoch); w.U64(e.lsn); w.U64(e.end); }
}
bool GetHistory(Reader& r, std::vector<SealEntry>* h) {
  std::uint32_t n;
  if (!r.U32(&n) || n > wire::kMaxHistory) return false;
  h->resize(n);
  for (auto& e : *h)
    if (!r.U64(&e.epoch) || !r.U64(&e.lsn) || !r.U64(&e.end) || e.end < e.lsn) return false;
  return true;
}

void PutState(Writer& w, const NodeState& s) {
  w.Str(s.node_id);
  for (std::uint64_t v : {s.promised_epoch, s.writer_id, s.seal_epoch, s.seal_lsn, s.last_epoch, s.released,
                          s.durable, s.complete, s.highest, s.tail.epoch, s.tail.block_lsn, s.tail.data_end})
    w.U64(v);
  w.Bytes(s.tail.image);
  w.U8(s.tail_anchored ? 1 : 0);
  PutHistory(w, s.history);
  w.U32(static_cast<std::uint32_t>(s.counters.size()));
  for (std::uint64_t c : s.counters) w.U64(c);
  w.U8(s.rebuilding ? 1 : 0);
  w.U8(s.was_member ? 1 : 0);
}
bool GetState(Reader& r, NodeState* s) {
  if (!r.Str(&s->node_id, wire::kMaxNodeId)) return false;
  for (std::uint64_t* v : {&s->promised_epoch, &s->writer_id, &s->seal_epoch, &s->seal_lsn, &s->last_epoch,
                           &s->released, &s->durable, &s->complete, &s->highest, &s->tail.epoch,
                           &s->tail.block_lsn, &s->tail.data_end})
    if (!r.U64(v)) return false;
  if (!r.Bytes(&s->tail.image, wire::kMaxTailImage) || !r.Bool(&s->tail_anchored) || !GetHistory(r, &s->history))
    return false;
  std::uint32_t k;
  if (!r.U32(&k) || k > wire::kMaxCounters) return false;
  s->counters.resize(k);
  for (auto& c : s->counters)
    if (!r.U64(&c)) return false;
  return r.Bool(&s->rebuilding) && r.Bool(&s->was_member);
}

void PutBody(Writer& w, const Frame& f) {
  if (wire::IsResponse(f.type)) w.Str(f.error);
  switch (f.type) {
    case MsgType::kPromiseReq: w.U64(f.writer_id); break;
    case MsgType::kSealReq:
      w.U64(f.lsn);
      w.U64(f.commit_lsn);
      w.U32(f.self_index);
      PutHistory(w, f.history);
      w.U32(static_cast<std::uint32_t>(f.peers.size()));
      for (const auto& p : f.peers) w.Str(p);
      w.U64(f.certify_lsn);
      w.U64(f.tail.valid() ? f.tail.data_end : 0);
      w.Bytes(f.tail.valid() ? std::string_view(f.tail.image) : std::string_view());
      break;
    case MsgType::kAppendReq:
      w.U64(f.lsn);
      w.U64(f.commit_lsn);
      w.Bytes(f.data);
      w.U8(static_cast<std::uint8_t>(f.append_flags));
      if (f.append_flags & wire::kAppendCarriesTail) {
        w.U64(f.tail.block_lsn);
        w.U64(f.tail.data_end);
        w.Bytes(f.tail.image);
      }
      break;
    case MsgType::kAppendResp:
      w.U64(f.lsn);
      w.U64(f.complete_lsn);
      w.U8(f.tail.valid() ? 1 : 0);
      if (f.tail.valid()) {
        w.U64(f.tail.block_lsn);
        w.U64(f.tail.data_end);
      }
      break;
    case MsgType::kTailReq: w.U64(f.lsn); w.U64(f.data_end); w.Bytes(f.data); break;
    case MsgType::kTailResp: w.U64(f.lsn); w.U64(f.data_end); w.U64(f.durable_lsn); break;
    case MsgType::kReadReq: w.U64(f.lsn); w.U32(f.max_bytes); w.U64(f.seal_epoch); break;
    case MsgType::kReadResp:
      w.U64(f.lsn);
      w.U32(static_cast<std::uint32_t>(f.ranges.size()));
      for (const auto& r : f.ranges) { w.U64(r.start); w.U64(r.epoch); w.Bytes(r.bytes); }
      break;
    case MsgType::kCkptSetReq: w.U64(f.lsn); w.Bytes(f.data); break;
    case MsgType::kCkptGetResp: w.U8(f.found); w.U64(f.lsn); w.U64(f.checkpoint_epoch); w.Bytes(f.data); break;
    case MsgType::kPagePutReq: w.U32(f.space); w.U32(f.page); w.U64(f.lsn); w.Bytes(f.data); break;
    case MsgType::kPageGetReq: w.U32(f.space); w.U32(f.page); w.U64(f.lsn); break;
    case MsgType::kPageGetResp: w.U8(f.found); w.U64(f.lsn); w.Bytes(f.data); break;
    case MsgType::kReleaseReq:
    case MsgType::kReleaseResp: w.U64(f.lsn); break;
    case MsgType::kPromiseResp:
    case MsgType::kSealResp:
    case MsgType::kStatusResp: PutState(w, f.state); break;
    case MsgType::kFollowReq: w.U64(f.lsn); w.U32(f.max_bytes); break;
    case MsgType::kFollowResp:
      w.U64(f.lsn);
      w.U64(f.released);
      w.U32(static_cast<std::uint32_t>(f.ranges.size()));
      for (const auto& r : f.ranges) { w.U64(r.start); w.U64(r.epoch); w.Bytes(r.bytes); }
      w.U64(f.tail.valid() ? f.tail.block_lsn : 0);
      w.U64(f.tail.valid() ? f.tail.data_end : 0);
      w.Bytes(f.tail.valid() ? std::string_view(f.tail.image) : std::string_view());
      break;
    case MsgType::kHintReq: w.U64(f.lsn); break;
    case MsgType::kPinReq: w.U8(static_cast<std::uint8_t>(f.pin_op)); w.Str(f.pins.empty() ? "" : f.pins[0].name); w.U64(f.lsn); break;
    case MsgType::kPinResp:
      w.U32(static_cast<std::uint32_t>(f.pins.size()));
      for (const auto& p : f.pins) { w.Str(p.name); w.U64(p.lsn); }
      break;
    case MsgType::kCkptSetResp:
    case MsgType::kCkptGetReq:
    case MsgType::kPagePutResp:
    case MsgType::kHintResp:
    case MsgType::kStatusReq: break;
  }
}

bool GetBody(Reader& r, Frame* f) {
  if (wire::IsResponse(f->type) && !r.Str(&f->error, wire::kMaxError)) return false;
  switch (f->type) {
    case MsgType::kPromiseReq: return r.U64(&f->writer_id);
    case MsgType::kSealReq: {
      std::uint32_t m;
      if (!r.U64(&f->lsn) || !r.U64(&f->commit_lsn) || !r.U32(&f->self_index) || !GetHistory(r, &f->history) ||
          !r.U32(&m) || m > wire::kMaxPeers)
        return false;
      f->peers.resize(m);
      for (auto& p : f->peers)
        if (!r.Str(&p, wire::kMaxAddress)) return false;
      if (!r.U64(&f->certify_lsn) || !(f->self_index < m || m == 0)) return false;
      // The recovered tail: none (data end 0, no image), or one whose data
      // end lies in its image, which starts at the seal LSN.
      if (!r.U64(&f->tail.data_end) || !r.Bytes(&f->tail.image, wire::kMaxTailImage)) return false;
      if (f->tail.data_end == 0) return f->tail.image.empty();
      f->tail.block_lsn = f->lsn;
      f->tail.epoch = f->epoch;
      return f->tail.data_end > f->lsn && f->tail.data_end - f->lsn <= f->tail.image.size();
    }
    case MsgType::kAppendReq: {
      std::uint8_t flags = 0;
      if (!(r.U64(&f->lsn) && r.U64(&f->commit_lsn) && r.Bytes(&f->data, wire::kMaxRedoChunk) && !f->data.empty() &&
            f->lsn + f->data.size() > f->lsn && r.U8(&flags) &&
            (flags & ~(wire::kAppendWantsWrittenAck | wire::kAppendCarriesTail)) == 0))
        return false;
      f->append_flags = flags;
      if (!(flags & wire::kAppendCarriesTail)) return true;
      // The register of the block that starts where this redo ends, holding
      // data in its image: what a TailReq right after the append would carry.
      TailImage& t = f->tail;
      if (!r.U64(&t.block_lsn) || !r.U64(&t.data_end) || !r.Bytes(&t.image, wire::kMaxTailImage)) return false;
      t.epoch = f->epoch;
      return t.block_lsn == f->lsn + f->data.size() && t.data_end > t.block_lsn &&
             t.data_end - t.block_lsn <= t.image.size();
    }
    case MsgType::kAppendResp: {
      bool has_tail = false;
      if (!r.U64(&f->lsn) || !r.U64(&f->complete_lsn) || !r.Bool(&has_tail)) return false;
      if (!has_tail) return true;
      f->tail.epoch = f->epoch;
      return r.U64(&f->tail.block_lsn) && r.U64(&f->tail.data_end) && f->tail.data_end > f->tail.block_lsn;
    }
    case MsgType::kTailReq:
      return r.U64(&f->lsn) && r.U64(&f->data_end) && r.Bytes(&f->data, wire::kMaxTailImage) &&
             f->data_end > f->lsn && f->data_end - f->lsn <= f->data.size();
    case MsgType::kTailResp: return r.U64(&f->lsn) && r.U64(&f->data_end) && r.U64(&f->durable_lsn);
    case MsgType::kReadReq:
      return r.U64(&f->lsn) && r.U32(&f->max_bytes) && r.U64(&f->seal_epoch) && f->max_bytes <= wire::kMaxReadBytes;
    case MsgType::kReadResp: {
      std::uint32_t n;
      if (!r.U64(&f->lsn) || !r.U32(&n) || n > wire::kMaxRanges) return false;
      f->ranges.resize(n);
      std::size_t total = 0;
      for (auto& x : f->ranges) {
        if (!r.U64(&x.start) || !r.U64(&x.epoch) || !r.Bytes(&x.bytes, wire::kMaxRedoChunk)) return false;
        total += x.bytes.size();
        if (total > wire::kMaxReadBytes || x.start + x.bytes.size() < x.start) return false;
      }
      return true;
    }
    case MsgType::kCkptSetReq: return r.U64(&f->lsn) && r.Bytes(&f->data, wire::kMaxMetadata);
    case MsgType::kCkptGetResp:
      return r.Bool(&f->found) && r.U64(&f->lsn) && r.U64(&f->checkpoint_epoch) && r.Bytes(&f->data, wire::kMaxMetadata);
    case MsgType::kPagePutReq:
      return r.U32(&f->space) && r.U32(&f->page) && r.U64(&f->lsn) && r.Bytes(&f->data, wire::kMaxPageImage) &&
             !f->data.empty();
    case MsgType::kPageGetReq: return r.U32(&f->space) && r.U32(&f->page) && r.U64(&f->lsn);
    case MsgType::kPageGetResp: return r.Bool(&f->found) && r.U64(&f->lsn) && r.Bytes(&f->data, wire::kMaxPageImage);
    case MsgType::kReleaseReq:
    case MsgType::kReleaseResp: return r.U64(&f->lsn);
    case MsgType::kPromiseResp:
    case MsgType::kSealResp:
    case MsgType::kStatusResp: return GetState(r, &f->state);
    case MsgType::kFollowReq: return r.U64(&f->lsn) && r.U32(&f->max_bytes) && f->max_bytes <= wire::kMaxReadBytes;
    case MsgType::kFollowResp: {
      std::uint32_t n;
      if (!r.U64(&f->lsn) || !r.U64(&f->released) || !r.U32(&n) || n > wire::kMaxRanges) return false;
      f->ranges.resize(n);
      std::size_t total = 0;
      for (auto& x : f->ranges) {
        if (!r.U64(&x.start) || !r.U64(&x.epoch) || !r.Bytes(&x.bytes, wire::kMaxRedoChunk)) return false;
        total += x.bytes.size();
        // Nothing at or above the frontier, ever.
        if (total > wire::kMaxReadBytes || x.start + x.bytes.size() < x.start || x.start + x.bytes.size() > f->lsn)
          return false;
      }
      if (!r.U64(&f->tail.block_lsn) || !r.U64(&f->tail.data_end) || !r.Bytes(&f->tail.image, wire::kMaxTailImage))
        return false;
      if (f->tail.data_end == 0) return f->tail.block_lsn == 0 && f->tail.image.empty();
      return f->tail.block_lsn == f->lsn && f->tail.data_end > f->tail.block_lsn &&
             f->tail.data_end - f->tail.block_lsn <= f->tail.image.size();
    }
    case MsgType::kHintReq: return r.U64(&f->lsn);
    case MsgType::kPinReq: {
      std::uint8_t op;
      f->pins.resize(1);
      if (!r.U8(&op) || op > wire::kLastPinOp || !r.Str(&f->pins[0].name, wire::kMaxPinName) || !r.U64(&f->lsn))
        return false;
      f->pin_op = static_cast<wire::PinOp>(op);
      f->pins[0].lsn = f->lsn;
      return op == static_cast<std::uint8_t>(wire::PinOp::kList) || !f->pins[0].name.empty();
    }
    case MsgType::kPinResp: {
      std::uint32_t n;
      if (!r.U32(&n) || n > wire::kMaxPins) return false;
      f->pins.resize(n);
      for (auto& p : f->pins)
        if (!r.Str(&p.name, wire::kMaxPinName) || !r.U64(&p.lsn)) return false;
      return true;
    }
    case MsgType::kCkptSetResp:
    case MsgType::kCkptGetReq:
    case MsgType::kPagePutResp:
    case MsgType::kHintResp:
    case MsgType::kStatusReq: return true;
  }
  return false;
}


}  // namespace

std::string Encode(const Frame& f) {
  Writer body;
  PutBody(body, f);
  return header::Encode(wire::kProtocol,
                        {static_cast<std::uint8_t>(f.type), static_cast<std::uint16_t>(f.code), f.request_id, f.epoch},
                        body.out());
}

Status Decode(std::span<const std::byte> bytes, Frame* out) {
  return Decode(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), out);
}

Status Decode(std::string_view in, Frame* out) {
  header::Fields h;
  if (Status s = header::Decode(wire::kProtocol, in, &h); !s.ok()) return s;
  Frame f;
  f.type = static_cast<wire::MsgType>(h.type);
  f.code = static_cast<wire::ReplyCode>(h.code);
  f.request_id = h.request_id;
  f.epoch = h.epoch;
  Reader r(in.substr(wire::kHeaderSize));
  if (!GetBody(r, &f))
    return Status::InvalidArgument(std::string("malformed ") + std::string(MsgTypeName(f.type)) + " body");
  if (!r.done()) return Status::InvalidArgument(std::string("trailing bytes after ") + std::string(MsgTypeName(f.type)));
  *out = std::move(f);
  return Status::Ok();
}

std::string_view MsgTypeName(wire::MsgType t) {
  static constexpr std::string_view kNames[] = {
      "?",          "PromiseReq",  "PromiseResp", "SealReq",    "SealResp",    "AppendReq",  "AppendResp",
      "TailReq",    "TailResp",    "ReadReq",     "ReadResp",   "CkptSetReq",  "CkptSetResp", "CkptGetReq",
      "CkptGetResp", "PagePutReq", "PagePutResp", "PageGetReq", "PageGetResp", "StatusReq",  "StatusResp", "ReleaseReq", "ReleaseResp",
      "FollowReq", "FollowResp", "HintReq", "HintResp", "PinReq", "PinResp"};
  auto i = static_cast<std::size_t>(t);
  return i < std::size(kNames) ? kNames[i] : "?";
}

std::string_view ReplyCodeName(wire::ReplyCode c) {
  static constexpr std::string_view kNames[] = {"ok",        "stale_epoch", "not_sealed", "invalid",
                                                "not_found", "store_error", "conflict",   "wrong_seal"};
  auto i = static_cast<std::size_t>(c);
  return i < std::size(kNames) ? kNames[i] : "?";
}

}  // namespace strata::logservice::repl
