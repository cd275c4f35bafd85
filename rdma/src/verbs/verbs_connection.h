// VerbsConnection: ConnectionCore over an RC queue pair (real or FakeNic).
//
// Memory (registered once in Init/at handshake, never on the hot path):
//   - receive slots: receive_credits + kControlReserve buffers of one maximal
//     frame, from a BufferPool registered as one MR; each posted once and
//     reposted when its message is released (DATA) or handled (others);
//   - control slots: small registered buffers control frames are copied into;
//   - the core's send arena (DATA frames are posted straight from it);
//   - the bulk ring (remote-writable; its address and rkey go into the
//     handshake) and the bulk staging ring (registered at handshake).
//
// Sending (PumpLocked, under the core mutex, any thread): control frames,
// then admitted messages, are posted in order while the send queue has
// room: DATA as SEND, BULK as RDMA_WRITE_WITH_IMM to peer_ring + aux with
// imm = aux. Send completions come back in posting order (posted_ FIFO) and
// complete the matching frame.
//
// Receiving (I/O thread): a RECV completion carries one frame in its slot;
// a RECV_RDMA_WITH_IMM completion says a BULK frame sits in our ring at
// offset imm. Both are validated (frame_codec) before the core sees them.
// Completion errors and CM disconnects fail the connection; the I/O thread
// finalizes it.
#pragma once

#include <memory>
#include <optional>
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

  VerbsConnection(std::shared_ptr<TransportContext> ctx, Role role, std::string peer,
                  std::unique_ptr<QueuePair> qp, VerbsShard* shard);
  ~VerbsConnection() override;

  // Registers memory and posts every receive. Before the peer may send.
  Status Init();
  int event_fd() const { return qp_->event_fd(); }
  VerbsShard* shard() const { return shard_; }
  void OnIoEvent(uint32_t events) override;
  // Polls the CQ once; true if it found completions (busy-poll hook).
  bool PollOnce();
  void Finalize();
  void set_on_finalized(std::function<void()> cb) { on_finalized_ = std::move(cb); }

 protected:
  void PumpLocked() override;
  void ShutdownLinkLocked() override;
  PeerParams LocalParamsLocked() override;
  void OnPeerParamsLocked(const PeerParams& peer) override;
  void OnDataReleasedLocked(uint64_t token) override;

 private:
  enum class WrKind : uint8_t { kRecv = 1, kCtrl = 2, kMsg = 3 };
  static uint64_t WrId(WrKind kind, uint32_t index) { return (uint64_t{static_cast<uint8_t>(kind)} << 56) | index; }
  void HandleCompletion(const Completion& c);
  void HandleReceive(const Completion& c, uint32_t slot);
  Status PostSlot(uint32_t slot);
  void Repost(uint32_t slot);  // unlocked callers

  VerbsShard* shard_;
  // Buffers are declared before qp_ so the QP (and its MRs) go first.
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
    WrKind kind;
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
