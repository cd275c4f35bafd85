// VerbsConnection: ConnectionCore over an RC queue pair (real or FakeNic).
//
// Memory (registered during the handshake, never on the hot path). Before
// the peer has authenticated (Init): only the handshake region, one
// receive slot and two control send slots of a control frame each (864
// bytes): the peer's first frame (AUTH to a server, CHALLENGE to a client)
// lands in that receive, which is never reposted. Once authenticated (the
// server after verifying AUTH, the client on CHALLENGE: AllocateSessionLocked,
// before the ACCEPT / AUTH that lets the peer send more):
//   - receive slots: receive_credits + kControlReserve buffers of one maximal
//     frame, from a BufferPool registered as one MR; each posted once and
//     reposted when its message is released (DATA) or handled (others);
//   - control slots: small registered buffers control frames are copied into;
//   - the core's send arena (DATA frames are posted straight from it);
//   - the bulk ring (remote-writable; its address and rkey go into the
//     handshake) and the bulk staging ring (registered when the connection
//     opens).
//
// Buffer ownership (the verbs contract, enforced by the fake NIC's
// poisoning): a posted buffer belongs to the NIC until its completion is
// polled. Send arena frames and control slots are freed on their own
// completion; a BULK frame's staging region (also where it lands in the
// peer's ring) only once the WRITE completed here AND the peer released the
// frame, whichever comes last (the release may arrive first: nothing
// orders our send completions against the peer's CREDIT frames). Receive
// slots are read only after their completion and reposted only when the
// message is released.
//
// Sending (PumpLocked, under the core mutex, any thread): control frames,
// then admitted messages, are posted in order while the send queue has
// room: DATA as SEND, BULK as RDMA_WRITE_WITH_IMM to peer_ring + aux with
// imm = aux. Send completions come back in posting order (posted_ FIFO,
// checked by wr_id) and complete the matching frame.
//
// wr_id: kind in the top byte (RECV, control SEND, DATA SEND, BULK WRITE),
// the receive/control slot or the frame's sequence number below, so every
// error names the request it hit (DescribeWr).
//
// Receiving (I/O thread): a RECV completion carries one frame in its slot;
// a RECV_RDMA_WITH_IMM completion says a BULK frame sits in our ring at
// offset imm. Both are validated (frame_codec) before the core sees them.
//
// Errors: a failing verb fails the connection with its name and errno; a
// failed completion with its status, wr_id and operation ("completion error
// IBV_WC_RETRY_EXC_ERR (...) on wr_id 0x... (SEND of DATA frame 7)"),
// kClosed for IBV_WC_WR_FLUSH_ERR (the QP went to error: the link is gone)
// and kIoError for the rest; an ibv_poll_cq failure likewise. CM
// disconnects fail it from the CM thread. The I/O thread finalizes it.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connection_core.h"
#include "strata/rdma/buffer_pool.h"
#include "tcp/event_loop.h"
#include "verbs/queue_pair.h"

namespace strata::rdma {

class VerbsShard;

class VerbsConnection final : public ConnectionCore, public IoHandler {
 public:
  static constexpr uint32_t kControlReserve = 64;  // receives kept for credit-free frames
  static constexpr uint32_t kSendQueueDepth = 256;
  static constexpr uint32_t kCtrlSlots = 64;       // control send slots of a session
  // Handshake region: slot 0 the receive, slots 1.. control sends.
  static constexpr uint32_t kHandshakeSlots = 3;
  // Receive queue depth for these options (every slot is posted at Init).
  static uint32_t RecvQueueDepth(const TransportOptions& o) {
    return std::max<uint32_t>(o.receive_credits, 1) + kControlReserve;
  }

  VerbsConnection(std::shared_ptr<TransportContext> ctx, Role role, std::string peer,
                  std::unique_ptr<QueuePair> qp, VerbsShard* shard);
  ~VerbsConnection() override;

  // Registers the handshake region and posts its receive. Before the peer
  // may send.
  Status Init();
  int event_fd() const { return qp_->event_fd(); }
  VerbsShard* shard() const { return shard_; }
  void OnIoEvent(uint32_t events) override;
  // Polls the CQ once; true if it found completions (busy-poll hook).
  bool PollOnce();
  void Finalize();
  void set_on_finalized(std::function<void()> cb) { on_finalized_ = std::move(cb); }

 protected:
  Status AllocateSessionLocked() override;
  void PumpLocked() override;
  void ShutdownLinkLocked() override;
  PeerParams LocalParamsLocked() override;
  void OnPeerParamsLocked(const PeerParams& peer) override;
  void OnDataReleasedLocked(uint64_t token) override;

 private:
  enum class WrKind : uint8_t { kRecv = 1, kCtrl = 2, kData = 3, kBulk = 4, kHandshakeRecv = 5 };
  static uint64_t WrId(WrKind kind, uint32_t index) { return (uint64_t{static_cast<uint8_t>(kind)} << 56) | index; }
  static WrKind KindOf(uint64_t wr_id) { return static_cast<WrKind>(wr_id >> 56); }
  // "SEND of DATA frame 7", "RECV into slot 3", ...
  static std::string DescribeWr(uint64_t wr_id);
  static Status CompletionError(const Completion& c);
  void HandleCompletion(const Completion& c);
  void HandleReceive(const Completion& c, uint32_t slot, bool handshake_slot);
  std::byte* CtrlSlotBuffer(uint32_t slot) const;
  uint32_t CtrlSlotLkey(uint32_t slot) const;
  Status PostSlot(uint32_t slot);
  void Repost(uint32_t slot);  // unlocked callers

  VerbsShard* shard_;
  // Buffers are declared before qp_ so the QP (and its MRs) go first.
  std::unique_ptr<std::byte[]> handshake_mem_;
  uint32_t handshake_lkey_ = 0;
  std::unique_ptr<BufferPool> recv_pool_;
  std::vector<PooledBuffer> recv_slots_;
  uint32_t recv_lkey_ = 0;
  std::unique_ptr<std::byte[]> ctrl_mem_;
  uint32_t ctrl_lkey_ = 0;
  std::vector<uint32_t> free_ctrl_slots_;
  std::unique_ptr<std::byte[]> bulk_ring_;
  MemoryKeys bulk_ring_keys_;
  uint32_t arena_lkey_ = 0;
  uint32_t stage_lkey_ = 0;
  std::unique_ptr<QueuePair> qp_;

  // Posting state (core mutex).
  struct Posted {
    uint64_t wr_id;
    uint32_t ctrl_slot;
  };
  FixedQueue<Posted> posted_;
  size_t ctrl_posted_ = 0, msgs_posted_ = 0;
  uint64_t peer_ring_addr_ = 0;
  uint32_t peer_rkey_ = 0;
  bool link_down_ = false;
  bool finalize_posted_ = false;
  std::function<void()> on_finalized_;
};

// Round-robin choice of the shard (I/O thread) for a new connection.
// Thread-safe: the verbs backend picks from its CM thread (accepted
// connections) and from Connect callers at the same time, so the cursor is
// an atomic counter rather than state owned by one thread (Connect would
// otherwise have to hop to the CM thread just to pick).
class ShardPicker {
 public:
  explicit ShardPicker(size_t shards = 1) : shards_(shards) {}
  size_t Next() { return next_.fetch_add(1, std::memory_order_relaxed) % shards_; }

 private:
  size_t shards_;
  std::atomic<uint64_t> next_{0};
};

// One I/O thread for verbs connections: completion channel fds in epoll,
// CQs busy-polled for TransportOptions::busy_poll after activity.
class VerbsShard {
 public:
  explicit VerbsShard(std::shared_ptr<TransportContext> ctx);
  Status Start();
  void Stop() { loop_.Stop(); }
  EventLoop& loop() { return loop_; }
  void Adopt(const std::shared_ptr<VerbsConnection>& conn);  // loop thread
  void Drop(VerbsConnection* conn);                          // loop thread

 private:
  std::shared_ptr<TransportContext> ctx_;
  EventLoop loop_;
  std::vector<std::shared_ptr<VerbsConnection>> conns_;  // loop thread only
};

}  // namespace strata::rdma
