// VerbsConnection: see verbs_connection.h for the memory and ordering model.
#include "verbs/verbs_connection.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace strata::rdma {
namespace {
constexpr uint32_t kCtrlSlotSize = static_cast<uint32_t>(wire::kHeaderSize + wire::kMaxControlPayload);

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

std::string VerbsConnection::DescribeWr(uint64_t wr_id) {
  const std::string index = std::to_string(wr_id & 0xFFFFFFFF);
  switch (KindOf(wr_id)) {
    case WrKind::kRecv: return "RECV into slot " + index;
    case WrKind::kCtrl: return "SEND of control frame in slot " + index;
    case WrKind::kData: return "SEND of DATA frame " + index;
    case WrKind::kBulk: return "RDMA WRITE with immediate of BULK frame " + index;
    case WrKind::kHandshakeRecv: return "RECV into the handshake slot";
  }
  return "unknown work request";
}

Status VerbsConnection::CompletionError(const Completion& c) {
  std::string m = "completion error " + WcStatusName(c.status) + " (" + std::string(WcStatusText(c.status)) +
                  ") on wr_id " + Hex(c.wr_id) + " (" + DescribeWr(c.wr_id) + ")";
  // A flush only says the QP is in the error state: the link is gone (peer
  // disconnected, or a fault elsewhere already failed us).
  if (c.status == WcStatus::kWrFlushErr) return Closed("connection lost: queue pair in error state: " + m);
  return IoError(std::move(m));
}

VerbsConnection::VerbsConnection(std::shared_ptr<TransportContext> ctx, Role role, std::string peer,
                                 std::unique_ptr<QueuePair> qp, VerbsShard* shard)
    : ConnectionCore(std::move(ctx), role, Scheme::kRdma, std::move(peer)),
      shard_(shard),
      qp_(std::move(qp)),
      posted_(kSendQueueDepth) {}

VerbsConnection::~VerbsConnection() {
  qp_.reset();  // deregisters before the buffers below it are freed
}

Status VerbsConnection::Init() {
  // Before the peer has authenticated: one receive and two control sends,
  // a control frame each, in one small region (the peer sends one frame
  // before it may send more: AUTH to a server, CHALLENGE to a client).
  handshake_mem_.reset(new std::byte[size_t{kHandshakeSlots} * kCtrlSlotSize]);
  auto keys = qp_->Register({handshake_mem_.get(), size_t{kHandshakeSlots} * kCtrlSlotSize}, /*remote_write=*/false);
  if (!keys.ok()) return keys.status();
  handshake_lkey_ = keys->lkey;
  Account(int64_t{sizeof(VerbsConnection)} + int64_t{kHandshakeSlots} * kCtrlSlotSize);
  for (uint32_t i = 1; i < kHandshakeSlots; ++i) free_ctrl_slots_.push_back(kCtrlSlots + i - 1);
  const uint64_t wr_id = WrId(WrKind::kHandshakeRecv, 0);
  if (Status s = qp_->PostRecv(wr_id, {handshake_mem_.get(), kCtrlSlotSize}, handshake_lkey_); !s.ok())
    return Status(s.code(), s.message() + " posting wr_id " + Hex(wr_id) + " (" + DescribeWr(wr_id) + ")");
  return Status::Ok();
}

Status VerbsConnection::AllocateSessionLocked() {
  const auto& o = context().options;
  // Receive slots: one maximal frame each, pre-registered as one region,
  // all posted before the peer may send (before our ACCEPT / AUTH leaves).
  const size_t slot_size = wire::kHeaderSize + std::max<size_t>(o.max_message_size, wire::kMaxControlPayload);
  const uint32_t slots = RecvQueueDepth(o);
  Status reg;
  recv_pool_ = std::make_unique<BufferPool>(slot_size, slots, [&](std::span<std::byte> slab) {
    auto keys = qp_->Register(slab, /*remote_write=*/false);
    if (keys.ok()) recv_lkey_ = keys->lkey;
    else reg = keys.status();
  });
  Account(int64_t(slot_size) * slots);
  if (!reg.ok()) return reg;
  ctrl_mem_.reset(new std::byte[size_t{kCtrlSlots} * kCtrlSlotSize]);
  Account(int64_t{kCtrlSlots} * kCtrlSlotSize);
  auto ctrl_keys = qp_->Register({ctrl_mem_.get(), size_t{kCtrlSlots} * kCtrlSlotSize}, false);
  if (!ctrl_keys.ok()) return ctrl_keys.status();
  ctrl_lkey_ = ctrl_keys->lkey;
  for (uint32_t i = kCtrlSlots; i-- > 0;) free_ctrl_slots_.push_back(i);
  auto arena_keys = qp_->Register({send_arena_.get(), send_arena_size_}, false);
  if (!arena_keys.ok()) return arena_keys.status();
  arena_lkey_ = arena_keys->lkey;
  if (o.bulk_ring_size > 0) {
    bulk_ring_.reset(new std::byte[o.bulk_ring_size]);
    Account(o.bulk_ring_size);
    auto ring_keys = qp_->Register({bulk_ring_.get(), o.bulk_ring_size}, /*remote_write=*/true);
    if (!ring_keys.ok()) return ring_keys.status();
    bulk_ring_keys_ = ring_keys.value();
  }
  recv_slots_.reserve(slots);
  for (uint32_t i = 0; i < slots; ++i) {
    recv_slots_.push_back(std::move(*recv_pool_->TryAcquire()));
    if (Status s = PostSlot(i); !s.ok()) return s;
  }
  return Status::Ok();
}

std::byte* VerbsConnection::CtrlSlotBuffer(uint32_t slot) const {
  // Slots below kCtrlSlots are the session's; the rest the handshake
  // region's send slots (its slot 0 is the receive).
  if (slot < kCtrlSlots) return ctrl_mem_.get() + size_t{slot} * kCtrlSlotSize;
  return handshake_mem_.get() + size_t{slot - kCtrlSlots + 1} * kCtrlSlotSize;
}

uint32_t VerbsConnection::CtrlSlotLkey(uint32_t slot) const { return slot < kCtrlSlots ? ctrl_lkey_ : handshake_lkey_; }

PeerParams VerbsConnection::LocalParamsLocked() {
  const auto& o = context().options;
  PeerParams p;
  p.receive_credits = std::max<uint32_t>(o.receive_credits, 1);
  p.max_message_size = o.max_message_size;
  if (bulk_ring_) {
    p.bulk_ring_size = o.bulk_ring_size;
    p.bulk_rkey = bulk_ring_keys_.rkey;
    p.bulk_ring_addr = reinterpret_cast<uint64_t>(bulk_ring_.get());
  }
  return p;
}

void VerbsConnection::OnPeerParamsLocked(const PeerParams& peer) {
  peer_ring_addr_ = peer.bulk_ring_addr;
  peer_rkey_ = peer.bulk_rkey;
  if (bulk_stage_) {
    auto keys = qp_->Register({bulk_stage_.get(), bulk_stage_size_}, false);
    if (!keys.ok()) {
      FailLocked(keys.status());
      return;
    }
    stage_lkey_ = keys->lkey;
  }
}

void VerbsConnection::PumpLocked() {
  if (state_ == State::kClosed || link_down_) return;
  while (ctrl_posted_ < ctrl_.size() && !posted_.full() && !free_ctrl_slots_.empty()) {
    OutFrame& f = ctrl_[ctrl_posted_];
    if (!f.sealed) SealLocked(f);
    const uint32_t slot = free_ctrl_slots_.back();
    std::byte* buf = CtrlSlotBuffer(slot);
    std::memcpy(buf, f.ctrl_header.data(), wire::kHeaderSize);
    std::memcpy(buf + wire::kHeaderSize, f.ctrl_payload.data(), f.ctrl_payload.size());
    const uint64_t wr_id = WrId(WrKind::kCtrl, slot);
    if (Status s = qp_->PostSend(wr_id, {buf, f.size}, CtrlSlotLkey(slot)); !s.ok()) {
      FailLocked(Status(s.code(), s.message() + " posting wr_id " + Hex(wr_id) + " (" + DescribeWr(wr_id) + ")"));
      return;
    }
    free_ctrl_slots_.pop_back();
    posted_.push_back({wr_id, slot});
    ++ctrl_posted_;
  }
  while (msgs_posted_ < admitted_ && !posted_.full()) {
    OutFrame& f = msgs_[msgs_posted_];
    const bool bulk = f.kind == OutFrame::Kind::kBulk;
    const uint64_t wr_id = WrId(bulk ? WrKind::kBulk : WrKind::kData, f.sequence);
    Status s = bulk ? qp_->PostWriteImm(wr_id, {f.region, f.size}, stage_lkey_, peer_ring_addr_ + f.aux, peer_rkey_, f.aux)
                    : qp_->PostSend(wr_id, {f.region, f.size}, arena_lkey_);
    if (!s.ok()) {
      FailLocked(Status(s.code(), s.message() + " posting wr_id " + Hex(wr_id) + " (" + DescribeWr(wr_id) + ")"));
      return;
    }
    posted_.push_back({wr_id, 0});
    ++msgs_posted_;
  }
}

void VerbsConnection::ShutdownLinkLocked() {
  link_down_ = true;
  ctrl_posted_ = msgs_posted_ = 0;
  if (finalize_posted_) return;
  finalize_posted_ = true;
  // The connection's fate is decided; a failing rdma_disconnect is only
  // worth a line (the peer then learns from its keepalive).
  if (Status s = qp_->Disconnect(); !s.ok())
    context().Log(LogLevel::kWarning, "verbs connection to/from " + peer_address() + ": " + s.ToString());
  auto self = std::static_pointer_cast<VerbsConnection>(shared_from_this());
  shard_->loop().Post([self] { self->Finalize(); });
}

void VerbsConnection::Finalize() {
  FinishClose();
  if (on_finalized_) on_finalized_();
  shard_->Drop(this);  // the Posted task still holds a reference
}

void VerbsConnection::OnDataReleasedLocked(uint64_t token) {
  if (link_down_) return;
  if (Status s = PostSlot(static_cast<uint32_t>(token)); !s.ok()) FailLocked(s);
}

Status VerbsConnection::PostSlot(uint32_t slot) {
  const uint64_t wr_id = WrId(WrKind::kRecv, slot);
  Status s = qp_->PostRecv(wr_id, recv_slots_[slot].data(), recv_lkey_);
  if (!s.ok()) return Status(s.code(), s.message() + " posting wr_id " + Hex(wr_id) + " (" + DescribeWr(wr_id) + ")");
  return s;
}

void VerbsConnection::Repost(uint32_t slot) {
  if (Status s = PostSlot(slot); !s.ok()) Fail(s);
}

void VerbsConnection::OnIoEvent(uint32_t) {
  if (Status s = qp_->ArmAndAck(); !s.ok()) Fail(s);
  PollOnce();
}

bool VerbsConnection::PollOnce() {
  Completion batch[32];
  bool any = false;
  for (;;) {
    Result<int> n = qp_->Poll(batch, 32);
    if (!n.ok()) {
      Fail(n.status());
      return any;
    }
    if (*n == 0) return any;
    any = true;
    for (int i = 0; i < *n; ++i) HandleCompletion(batch[i]);
  }
}

void VerbsConnection::HandleCompletion(const Completion& c) {
  const WrKind kind = KindOf(c.wr_id);
  const auto index = static_cast<uint32_t>(c.wr_id & 0xFFFFFFFF);
  if (kind == WrKind::kRecv || kind == WrKind::kHandshakeRecv) {
    if (!c.ok()) {
      Fail(CompletionError(c));
      return;
    }
    HandleReceive(c, index, kind == WrKind::kHandshakeRecv);
    return;
  }
  std::unique_lock lock(mu_);
  if (link_down_) return;  // flushed after we failed; nothing to complete
  if (!c.ok()) {
    FailLocked(CompletionError(c));
    RunCompletions(lock);
    return;
  }
  if (posted_.empty() || posted_.front().wr_id != c.wr_id) {
    // RC completes a send queue in posting order; anything else means the
    // engine's bookkeeping (or the NIC) is broken: stop before freeing the
    // wrong buffer.
    FailLocked(IoError("send completion for wr_id " + Hex(c.wr_id) + " (" + DescribeWr(c.wr_id) + ") while " +
                       (posted_.empty() ? std::string("nothing was outstanding")
                                        : "wr_id " + Hex(posted_.front().wr_id) + " was posted before it")));
    RunCompletions(lock);
    return;
  }
  const Posted p = posted_.pop_front();
  if (kind == WrKind::kCtrl) {
    free_ctrl_slots_.push_back(p.ctrl_slot);
    --ctrl_posted_;
    CompleteControlLocked();
  } else {
    --msgs_posted_;
    CompleteMessageLocked();
  }
  PumpLocked();
  RunCompletions(lock);
}

void VerbsConnection::HandleReceive(const Completion& c, uint32_t slot, bool handshake_slot) {
  const FrameLimits limits = ReceiveLimits();
  if (!handshake_slot && slot >= recv_slots_.size()) {
    Fail(ProtocolError("completion for unknown receive slot"));
    return;
  }
  // The handshake slot takes the peer's first frame only; it is never
  // reposted (after the session's slots it would catch a DATA frame).
  auto repost = [&] {
    if (!handshake_slot) Repost(slot);
  };
  if (c.op == Completion::Op::kRecvImm) {
    // The frame is in our bulk ring at offset imm; the slot was not used.
    repost();
    if (!bulk_ring_ || uint64_t{c.imm} + wire::kHeaderSize > limits.bulk_ring_size) {
      Fail(ProtocolError("RDMA write announced at bad ring offset " + std::to_string(c.imm)));
      return;
    }
    const std::byte* frame = bulk_ring_.get() + c.imm;
    const FrameHeader h = DecodeHeader(frame);
    Status s = ValidateHeader(h, limits);
    if (s.ok() && (h.type != wire::FrameType::kBulk || h.aux != c.imm || c.byte_len != wire::kHeaderSize + h.length))
      s = ProtocolError("RDMA write does not hold the BULK frame its immediate announced");
    if (s.ok()) s = VerifyChecksum(frame, {frame + wire::kHeaderSize, h.length});
    if (!s.ok()) {
      Fail(std::move(s));
      return;
    }
    HandleFrame(h, {frame + wire::kHeaderSize, h.length}, 0, /*transient=*/false);
    return;
  }
  const std::span<const std::byte> bytes(handshake_slot ? handshake_mem_.get() : recv_slots_[slot].data().data(),
                                         c.byte_len);
  ParsedFrame f;
  Status error;
  const ParseOutcome outcome = ParseFrame(bytes, limits, &f, &error);
  if (outcome == ParseOutcome::kNeedMore) error = ProtocolError("truncated frame: SEND of " + std::to_string(c.byte_len) + " bytes");
  else if (outcome == ParseOutcome::kFrame && f.consumed != bytes.size())
    error = ProtocolError("SEND carries " + std::to_string(bytes.size() - f.consumed) + " bytes after its frame");
  else if (outcome == ParseOutcome::kFrame && f.header.type == wire::FrameType::kBulk)
    error = ProtocolError("BULK frame arrived as a SEND");
  else if (outcome == ParseOutcome::kFrame && handshake_slot && f.header.type == wire::FrameType::kData)
    error = ProtocolError("DATA frame in the handshake slot");  // ReceiveLimits refuse it first
  if (outcome != ParseOutcome::kFrame || !error.ok()) {
    Fail(std::move(error));
    return;
  }
  if (f.header.type == wire::FrameType::kData) {
    HandleFrame(f.header, f.payload, slot, /*transient=*/false);  // reposted on release
  } else {
    HandleFrame(f.header, f.payload, 0, false);
    repost();
  }
}

}  // namespace strata::rdma
