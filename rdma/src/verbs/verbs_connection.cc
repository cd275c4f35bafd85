// VerbsConnection: see verbs_connection.h for the memory and ordering model.
#include "verbs/verbs_connection.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace strata::rdma {
namespace {
constexpr uint32_t kCtrlSlots = 64;
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
  const auto& o = context().options;
  // Receive slots: one maximal frame each, pre-registered as one region.
  const size_t slot_size = wire::kHeaderSize + std::max<size_t>(o.max_message_size, wire::kMaxControlPayload);
  const uint32_t slots = std::max<uint32_t>(o.receive_credits, 1) + kControlReserve;
  Status reg;
  recv_pool_ = std::make_unique<BufferPool>(slot_size, slots, [&](std::span<std::byte> slab) {
    auto keys = qp_->Register(slab, /*remote_write=*/false);
    if (keys.ok()) recv_lkey_ = keys->lkey;
    else reg = keys.status();
  });
  if (!reg.ok()) return reg;
  ctrl_mem_.reset(new std::byte[size_t{kCtrlSlots} * kCtrlSlotSize]);
  auto ctrl_keys = qp_->Register({ctrl_mem_.get(), size_t{kCtrlSlots} * kCtrlSlotSize}, false);
  if (!ctrl_keys.ok()) return ctrl_keys.status();
  ctrl_lkey_ = ctrl_keys->lkey;
  for (uint32_t i = kCtrlSlots; i-- > 0;) free_ctrl_slots_.push_back(i);
  auto arena_keys = qp_->Register({send_arena_.get(), send_arena_size_}, false);
  if (!arena_keys.ok()) return arena_keys.status();
  arena_lkey_ = arena_keys->lkey;
  if (o.bulk_ring_size > 0) {
    bulk_ring_.reset(new std::byte[o.bulk_ring_size]);
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
    std::byte* buf = ctrl_mem_.get() + size_t{slot} * kCtrlSlotSize;
    std::memcpy(buf, f.ctrl_header.data(), wire::kHeaderSize);
    std::memcpy(buf + wire::kHeaderSize, f.ctrl_payload.data(), f.ctrl_payload.size());
    const uint64_t wr_id = WrId(WrKind::kCtrl, slot);
    if (Status s = qp_->PostSend(wr_id, {buf, f.size}, ctrl_lkey_); !s.ok()) {
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
  if (kind == WrKind::kRecv) {
    if (!c.ok()) {
      Fail(CompletionError(c));
      return;
    }
    HandleReceive(c, index);
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

void VerbsConnection::HandleReceive(const Completion& c, uint32_t slot) {
  const FrameLimits limits = ReceiveLimits();
  if (slot >= recv_slots_.size()) {
    Fail(ProtocolError("completion for unknown receive slot"));
    return;
  }
  if (c.op == Completion::Op::kRecvImm) {
    // The frame is in our bulk ring at offset imm; the slot was not used.
    Repost(slot);
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
  const std::span<const std::byte> bytes(recv_slots_[slot].data().data(), c.byte_len);
  ParsedFrame f;
  Status error;
  const ParseOutcome outcome = ParseFrame(bytes, limits, &f, &error);
  if (outcome == ParseOutcome::kNeedMore) error = ProtocolError("truncated frame: SEND of " + std::to_string(c.byte_len) + " bytes");
  else if (outcome == ParseOutcome::kFrame && f.consumed != bytes.size())
    error = ProtocolError("SEND carries " + std::to_string(bytes.size() - f.consumed) + " bytes after its frame");
  else if (outcome == ParseOutcome::kFrame && f.header.type == wire::FrameType::kBulk)
    error = ProtocolError("BULK frame arrived as a SEND");
  if (outcome != ParseOutcome::kFrame || !error.ok()) {
    Fail(std::move(error));
    return;
  }
  if (f.header.type == wire::FrameType::kData) {
    HandleFrame(f.header, f.payload, slot, /*transient=*/false);  // reposted on release
  } else {
    HandleFrame(f.header, f.payload, 0, false);
    Repost(slot);
  }
}

}  // namespace strata::rdma
