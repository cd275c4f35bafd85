// ConnectionCore: the protocol engine shared by the TCP and verbs backends.
//
// Everything above "move these bytes" lives here, so both backends have the
// same framing, ordering, credits, handshake, keepalive and error semantics:
//   - the handshake state machine (handshake.h),
//   - the send queues: msgs_ (DATA/BULK, in sequence order; the first
//     admitted_ of them hold a credit and a sealed header) and ctrl_ (small
//     credit-free control frames that may overtake credit-blocked messages
//     at frame boundaries so credits can never deadlock),
//   - credit accounting in both directions, bulk ring space (RingAllocator
//     on the sender, InOrderReleaser on the receiver),
//   - keepalive and timeouts (Tick), graceful Close and one-shot failure.
//
// Memory before authentication: a connection starts with what the
// handshake needs (a few control frames; the backend's small handshake
// buffers). The send arena, the message queue and the backend's receive
// buffers, rings and registered memory (several MiB) come from
// PrepareSessionLocked: on the server once the peer's AUTH verified, on the
// client once a CHALLENGE arrived (before its AUTH advertises them). Until
// the peer is authenticated only handshake frames pass ReceiveLimits(), so
// a stranger cannot make us buffer a payload either. A server connection
// also holds a HandshakeAdmission slot until then (max_pending_handshakes).
//
// Threads: application threads call Send*/Close/stats. One I/O thread per
// connection calls the Handle*/Tick upcalls and runs handlers. mu_ guards the
// send side, credits and state; the receive buffers belong to the I/O thread
// alone. Handlers and SendCallbacks are never called with mu_ held.
//
// Backends implement PumpLocked (push admitted frames to the wire), the
// optional direct-write fast path (its use by Send is in
// connection_core_direct_send.cc, apart from the common path), and the
// teardown hooks. Failure: the first
// error wins, is logged once here, fails every queued send with the same
// Status, and the backend finalizes on the I/O thread, which runs on_close.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fixed_queue.h"
#include "frame_codec.h"
#include "handshake.h"
#include "ring_allocator.h"
#include "strata/rdma/connection.h"
#include "strata/rdma/transport.h"
#include "transport_context.h"

namespace strata::rdma {

using Clock = std::chrono::steady_clock;

enum class Role { kClient, kServer };

// One frame waiting for or on its way to the wire.
struct OutFrame {
  enum class Kind : uint8_t { kData, kBulk, kControl };
  Kind kind = Kind::kData;
  wire::FrameType type = wire::FrameType::kData;
  // DATA/BULK: header + payload, contiguous, in the send arena / bulk staging.
  std::byte* region = nullptr;
  uint32_t size = 0;         // header + payload bytes
  uint32_t payload_crc = 0;
  uint32_t sequence = 0;
  uint32_t aux = 0;          // BULK: ring offset
  uint32_t written = 0;      // bytes already handed to the backend (TCP)
  bool sealed = false;       // header stamped with credits + checksum
  // TCP direct send that filled the socket: the payload is still read from
  // the caller's memory (valid while that Send waits for it to leave);
  // `region` holds the header and reserves room for a copy if it gives up.
  const std::byte* external = nullptr;
  // CONTROL: header inline, payload owned (handshake/reason only; rare).
  std::array<std::byte, wire::kHeaderSize> ctrl_header{};
  std::vector<std::byte> ctrl_payload;
  SendCallback done;

  std::byte* header() { return kind == Kind::kControl ? ctrl_header.data() : region; }
  std::span<const std::byte> payload() const {
    if (kind == Kind::kControl) return ctrl_payload;
    return {external != nullptr ? external : region + wire::kHeaderSize, size - wire::kHeaderSize};
  }
};

class ConnectionCore : public Connection,
                       public detail::ReceiveOwner,
                       public std::enable_shared_from_this<ConnectionCore> {
 public:
  enum class State { kHandshaking, kOpen, kClosing, kRefusing, kClosed };

  ConnectionCore(std::shared_ptr<TransportContext> ctx, Role role, Scheme scheme, std::string peer);
  ~ConnectionCore() override;

  // --- Connection ---
  // Defaults repeated from Connection (same values) for callers holding a core.
  Status Send(std::span<const std::byte> payload, SendCallback done = {},
              std::chrono::milliseconds wait = std::chrono::milliseconds(0),
              SendFlags flags = SendFlags::kNone) override;
  Status SendBulk(std::span<const std::byte> payload, SendCallback done = {},
                  std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                  SendFlags flags = SendFlags::kNone) override;
  void Flush() override;
  void Close() override;
  bool is_open() const override;
  Scheme backend() const override { return scheme_; }
  std::string peer_address() const override { return peer_; }
  uint32_t max_message_size() const override;
  uint32_t max_bulk_size() const override;
  ConnectionStats stats() const override;

  // --- ReceiveOwner ---
  void ReleaseReceive(uint64_t token) override;
  std::shared_ptr<detail::ReceiveOwner> ReceiveOwnerRef() override { return shared_from_this(); }
  std::optional<PooledBuffer> CopyForLease(std::span<const std::byte> payload,
                                           std::unique_ptr<std::byte[]>& heap) override;

  // --- Setup, before the I/O thread sees the connection ---
  // Server: the place this connection holds among the pending handshakes
  // (TransportOptions::max_pending_handshakes); given back once the peer
  // authenticated or the connection failed.
  void AdoptHandshakeSlot(HandshakeAdmission::Slot slot) { handshake_slot_ = std::move(slot); }
  void SetHandlers(ConnectionHandlers handlers) { handlers_ = std::move(handlers); }
  void SetAcceptHandler(AcceptHandler on_accept) { on_accept_ = std::move(on_accept); }
  // Client: called once with OK when the server accepted us, or the failure.
  void SetEstablishedCallback(std::function<void(const Status&)> cb) { on_established_ = std::move(cb); }

  // --- Upcalls from the backend's I/O thread ---
  void Start();  // arms timers; the server sends CHALLENGE
  // A complete, checksummed frame. `token` is the backend's receive handle
  // (verbs slot) for DATA; ignored otherwise.
  void HandleFrame(const FrameHeader& h, std::span<const std::byte> payload, uint64_t token, bool transient);
  void Tick(Clock::time_point now);
  // Fails the connection (first error wins). Any thread.
  void Fail(Status why);
  // Backend teardown is done: run on_close once. I/O thread only.
  void FinishClose();

  bool dead() const { return dead_.load(std::memory_order_acquire); }  // failed or closed
  const TransportContext& context() const { return *ctx_; }
  // What the peer may send now: handshake frames only until it has
  // authenticated. Any thread; read it per frame (it changes mid-buffer).
  FrameLimits ReceiveLimits() const;

 protected:
  // Backend hooks, called with mu_ held.
  // The session's buffers (receive buffer, bulk ring, registered memory),
  // once per connection from PrepareSessionLocked, on the I/O thread, after
  // the core's own (the send arena exists) and before LocalParamsLocked.
  virtual Status AllocateSessionLocked() { return Status::Ok(); }
  virtual void PumpLocked() = 0;                    // push queued frames to the wire
  virtual void ShutdownLinkLocked() = 0;            // stop I/O; schedule finalize on the I/O thread
  virtual PeerParams LocalParamsLocked() = 0;       // what we advertise (ring address/rkey on verbs)
  virtual void OnPeerParamsLocked(const PeerParams&) {}  // verbs: remember the peer's ring
  virtual void OnDataReleasedLocked(uint64_t /*token*/) {}  // verbs: repost the receive slot
  // TCP fast path: write header+payload straight from the caller's memory.
  // Returns bytes written (0..total) or a failure.
  virtual bool SupportsDirectSend() const { return false; }
  // TCP: the socket was full at the last write (EPOLLOUT armed).
  virtual bool WriteBlockedLocked() const { return false; }
  virtual Result<size_t> DirectSendLocked(std::span<const std::byte> /*header*/, std::span<const std::byte> /*payload*/) {
    return size_t{0};
  }
  // A Send that must wait while every queued frame holds a credit (only the
  // link is slow): wait until `until` or until the link may take more, and
  // push what is queued. TCP: the sending thread polls the socket itself and
  // writes, as on a blocking socket (no hand-off to the I/O thread and back).
  // Default: wait for the I/O thread to make progress. May unlock `lock`.
  virtual void WaitForLinkLocked(std::unique_lock<std::mutex>& lock, Clock::time_point until) {
    space_cv_.wait_until(lock, until);
  }
  // Bracket a Send's run of WaitForLinkLocked calls (TCP: the I/O thread
  // is not woken for write space meanwhile; the sender pushes the bytes).
  virtual void BeginLinkWaitLocked() {}
  virtual void EndLinkWaitLocked() {}
  // A direct write just took less than it was given: the link is full.
  virtual void NoteLinkFullLocked() {}
  // True on the thread that reads this connection (a Send from a handler).
  virtual bool OnIoThread() const { return false; }

  // Counts `bytes` (negative: freed) into TransportContext::connection_bytes;
  // the destructor takes back whatever is still counted. Any thread.
  void Account(int64_t bytes);

  // Helpers for backends (mu_ held).
  void SealLocked(OutFrame& f);        // stamps credits + checksum into the header
  // A DATA/BULK frame at the front of msgs_ fully left: pop it, queue its callback.
  void CompleteMessageLocked();
  void CompleteControlLocked();
  void FailLocked(Status why);
  void QueueControlLocked(wire::FrameType type, std::span<const std::byte> payload = {});
  void NoteSentLocked() { last_sent_ = ctx_->Now(); }
  ConnectionStats& StatsLocked() { return stats_; }
  // After failure: true when we closed on purpose (CLOSE sent), so the link
  // may wait for the peer's end-of-stream instead of resetting.
  bool ClosedGracefullyLocked() const { return state_ == State::kClosed && close_status_.ok(); }

  mutable std::mutex mu_;
  State state_ = State::kHandshaking;
  FixedQueue<OutFrame> msgs_;
  FixedQueue<OutFrame> ctrl_;
  size_t admitted_ = 0;         // leading msgs_ with credit, sealed, ready for the wire
  std::vector<std::pair<SendCallback, Status>> done_;  // to run after unlocking
  std::shared_ptr<TransportContext> ctx_;
  HandshakeAdmission::Slot handshake_slot_;  // after ctx_: released before it
  std::atomic<int64_t> accounted_bytes_{0};
  Role role_;
  PeerParams peer_params_;

  // Registered memory on verbs: the send arena (allocated by
  // PrepareSessionLocked) and the bulk staging ring (allocated when the
  // handshake completes, before OnPeerParamsLocked).
  std::unique_ptr<std::byte[]> send_arena_;
  uint32_t send_arena_size_ = 0;
  std::unique_ptr<std::byte[]> bulk_stage_;
  uint32_t bulk_stage_size_ = 0;

  // Runs queued completions outside the lock. Call after unlocking.
  void RunCompletions(std::unique_lock<std::mutex>& lock);
  // Signalled when send space, credits or state change.
  std::condition_variable space_cv_;

 private:
  // One Send or SendBulk on its way into the queues (Enqueue's loop).
  struct PendingSend {
    std::span<const std::byte> payload;
    uint32_t total = 0;  // header + payload bytes
    bool bulk = false;
    bool more = false;   // SendFlags::kMore (a large payload clears it)
    // DATA of kDirectWaitMinBytes or more on a backend with direct sends.
    bool large = false;
    std::chrono::milliseconds wait{0};
    Clock::time_point deadline{};
    SendCallback done;
    // The direct-send waits, each at most once per Send.
    bool waited_for_socket = false;
    bool waited_for_credit = false;
  };
  // Direct sends: payloads at least this big wait for a full socket to drain
  // (or for credits) rather than being copied into the send arena.
  static constexpr size_t kDirectWaitMinBytes = 16 * 1024;
  // The common path of Send and SendBulk: check the size, then copy into
  // the send arena or bulk staging ring and pump, waiting (up to `wait`)
  // for space or credits; a backend with direct sends gets a turn first.
  Status Enqueue(std::span<const std::byte> payload, bool bulk, SendCallback done, std::chrono::milliseconds wait,
                 bool more);
  // Direct sends (connection_core_direct_send.cc), only on backends with
  // SupportsDirectSend: kDone when the Send finished there (*result is
  // what it returns; mu_ may be unlocked), kWaited when it waited for the
  // link or for credits (Enqueue looks again), kNotTaken when the common
  // path should queue the frame.
  enum class DirectStep { kNotTaken, kWaited, kDone };
  DirectStep DirectSendStepLocked(std::unique_lock<std::mutex>& lock, PendingSend& send, Status* result);
  void AdmitLocked();
  // The link is the only thing a Send waits for: every queued frame holds a credit.
  bool OnlyLinkBlocksLocked() const { return WriteBlockedLocked() && admitted_ == msgs_.size(); }
  // Waits (bounded by deadline) until the caller-memory frame `sequence` has
  // left; past the deadline copies its payload into its reserved arena slot.
  // Called between BeginLinkWaitLocked and EndLinkWaitLocked.
  void FinishExternalFrameLocked(std::unique_lock<std::mutex>& lock, uint32_t sequence, Clock::time_point deadline);
  void HandleHandshakeFrame(const FrameHeader& h, std::span<const std::byte> payload);
  // The full per-connection memory (see the top comment). Idempotent.
  Status PrepareSessionLocked();
  void BecomeOpenLocked(const PeerParams& peer);
  void ReturnCreditsLocked(uint32_t credits, uint32_t bulk_freed);
  void FreeBulkLocked();
  void MaybeFinishClosingLocked();
  std::string Describe() const;

  const Scheme scheme_;
  const std::string peer_;
  ConnectionHandlers handlers_;
  AcceptHandler on_accept_;
  std::function<void(const Status&)> on_established_;
  Status close_status_;
  Status refuse_status_;
  std::atomic<bool> dead_{false};
  std::atomic<bool> authenticated_{false};  // set once, when the connection opens
  bool session_ready_ = false;              // PrepareSessionLocked ran (mu_)
  bool finished_ = false;
  bool was_open_ = false;

  // Send side (mu_).
  RingAllocator send_alloc_;
  // A bulk region is freed once the peer released its frame (bulk_freed)
  // AND the frame completed locally: on verbs the staging region is the
  // source of an RDMA WRITE the NIC owns until its completion, and the
  // peer's release can arrive before that completion. Both count the
  // oldest regions not yet freed; FreeBulkLocked frees min of the two.
  RingAllocator bulk_alloc_;
  uint32_t bulk_released_by_peer_ = 0;
  uint32_t bulk_completed_ = 0;
  uint32_t send_credits_ = 0;
  uint32_t next_send_seq_ = 1;
  bool credit_frame_queued_ = false;
  bool close_frame_queued_ = false;
  Clock::time_point close_deadline_{};
  Clock::time_point last_sent_{};

  // Receive side. peer_credits_/pending_* under mu_; the rest I/O thread only.
  uint32_t peer_credits_ = 0;     // DATA/BULK the peer may still send us
  uint32_t pending_credits_ = 0;  // released by us, not yet told to the peer
  uint32_t pending_bulk_freed_ = 0;
  InOrderReleaser bulk_releaser_;
  uint32_t next_recv_seq_ = 1;
  Clock::time_point last_received_{};
  Clock::time_point last_ping_{};
  Clock::time_point handshake_deadline_{};
  Nonce server_nonce_{}, client_nonce_{};
  bool challenge_seen_ = false;

  // Stats (mu_).
  ConnectionStats stats_;
};

}  // namespace strata::rdma
