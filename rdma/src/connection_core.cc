// ConnectionCore: see connection_core.h for the threading and failure model.
#include "connection_core.h"

#include <algorithm>
#include <cstring>

namespace strata::rdma {
namespace {

constexpr uint64_t kBulkTokenBit = uint64_t{1} << 63;
// Control frames that may wait at once: during the handshake (a server
// queues CHALLENGE, then ACCEPT or REFUSE; a client AUTH), and after it.
constexpr size_t kHandshakeControlFrames = 4;
constexpr size_t kControlFrames = 64;

std::string Printable(std::span<const std::byte> text) {
  std::string s;
  for (size_t i = 0; i < text.size() && i < wire::kMaxReasonSize; ++i) {
    const char c = static_cast<char>(text[i]);
    s += (c >= 0x20 && c <= 0x7e) ? c : '?';
  }
  return s;
}

std::string Ms(std::chrono::milliseconds d) { return std::to_string(d.count()) + " ms"; }

}  // namespace

ConnectionCore::ConnectionCore(std::shared_ptr<TransportContext> ctx, Role role, Scheme scheme, std::string peer)
    : ctx_(std::move(ctx)), role_(role), scheme_(scheme), peer_(std::move(peer)) {
  // The handshake's frames only; PrepareSessionLocked adds the rest.
  ctrl_ = FixedQueue<OutFrame>(kHandshakeControlFrames);
  Account(int64_t(ctrl_.capacity()) * int64_t{sizeof(OutFrame)});
}

Status ConnectionCore::PrepareSessionLocked() {
  if (session_ready_) return Status::Ok();
  session_ready_ = true;
  const auto& o = ctx_->options;
  const uint32_t max_frame = static_cast<uint32_t>(wire::kHeaderSize) + o.max_message_size;
  // The arena must hold two maximal frames so one can always be queued
  // while another is being written.
  const uint32_t arena = std::max(o.send_buffer_size, 2 * (max_frame + wire::kBulkAlign));
  const uint32_t max_frames = std::clamp<uint32_t>(arena / 128, 64, 2048);
  send_arena_.reset(new std::byte[arena]);
  send_arena_size_ = arena;
  send_alloc_ = RingAllocator(arena, wire::kBulkAlign, max_frames);
  msgs_ = FixedQueue<OutFrame>(max_frames);
  const size_t ctrl_before = ctrl_.capacity();
  ctrl_.Grow(kControlFrames);
  done_.reserve(64);
  const uint32_t credits = std::max<uint32_t>(o.receive_credits, 1);
  bulk_releaser_ = InOrderReleaser(credits);
  Account(int64_t{arena} + int64_t(msgs_.capacity() + ctrl_.capacity() - ctrl_before) * int64_t{sizeof(OutFrame)} +
          int64_t(done_.capacity() * sizeof(done_[0])) + credits / 8);
  return AllocateSessionLocked();
}

ConnectionCore::~ConnectionCore() { ctx_->connection_bytes.fetch_sub(accounted_bytes_.load()); }

void ConnectionCore::Account(int64_t bytes) {
  accounted_bytes_.fetch_add(bytes);
  ctx_->connection_bytes.fetch_add(bytes);
}

std::string ConnectionCore::Describe() const {
  return std::string(SchemeName(scheme_)) + " connection " + (role_ == Role::kClient ? "to " : "from ") + peer_;
}

FrameLimits ConnectionCore::ReceiveLimits() const {
  if (!authenticated_.load(std::memory_order_acquire)) return FrameLimits{0, 0, /*handshake_only=*/true};
  return FrameLimits{ctx_->options.max_message_size, ctx_->options.bulk_ring_size};
}

uint32_t ConnectionCore::max_message_size() const {
  std::lock_guard lock(mu_);
  if (peer_params_.max_message_size == 0) return ctx_->options.max_message_size;
  return std::min(ctx_->options.max_message_size, peer_params_.max_message_size);
}

uint32_t ConnectionCore::max_bulk_size() const {
  std::lock_guard lock(mu_);
  return bulk_alloc_.capacity() > wire::kHeaderSize ? bulk_alloc_.capacity() - wire::kHeaderSize : 0;
}

bool ConnectionCore::is_open() const {
  std::lock_guard lock(mu_);
  return state_ == State::kOpen;
}

ConnectionStats ConnectionCore::stats() const {
  std::lock_guard lock(mu_);
  ConnectionStats s = stats_;
  s.send_credits = send_credits_;
  s.queued_messages = static_cast<uint32_t>(msgs_.size());
  s.queued_bytes = send_alloc_.used() + bulk_alloc_.used();
  return s;
}

// ---------------------------------------------------------------- sending

Status ConnectionCore::Send(std::span<const std::byte> payload, SendCallback done, std::chrono::milliseconds wait,
                            SendFlags flags) {
  return Enqueue(payload, /*bulk=*/false, std::move(done), wait, flags == SendFlags::kMore);
}

Status ConnectionCore::SendBulk(std::span<const std::byte> payload, SendCallback done, std::chrono::milliseconds wait,
                                SendFlags flags) {
  return Enqueue(payload, /*bulk=*/true, std::move(done), wait, flags == SendFlags::kMore);
}

void ConnectionCore::Flush() {
  std::unique_lock lock(mu_);
  PumpLocked();
  RunCompletions(lock);
}

Status ConnectionCore::Enqueue(std::span<const std::byte> payload, bool bulk, SendCallback done,
                               std::chrono::milliseconds wait, bool more) {
  if (bulk) {
    const uint32_t limit = max_bulk_size();
    if (limit == 0) return InvalidArgument("bulk is disabled on this connection (a side has bulk_ring_size 0)");
    if (payload.size() > limit)
      return InvalidArgument("bulk payload of " + std::to_string(payload.size()) + " bytes exceeds max_bulk_size " + std::to_string(limit));
  } else if (payload.size() > max_message_size()) {
    return InvalidArgument("payload of " + std::to_string(payload.size()) + " bytes exceeds max_message_size " +
                           std::to_string(max_message_size()) + " (use SendBulk)");
  }
  PendingSend send;
  send.payload = payload;
  send.total = static_cast<uint32_t>(wire::kHeaderSize + payload.size());
  send.bulk = bulk;
  send.more = more;
  send.wait = wait;
  send.deadline = Clock::now() + wait;
  send.done = std::move(done);
  // kMore batches small frames into one write; a large payload is a write
  // of its own anyway (direct sends), so it ends the batch instead of being
  // copied into it.
  send.large = !bulk && payload.size() >= kDirectWaitMinBytes && SupportsDirectSend();
  if (send.large) send.more = false;
  std::unique_lock lock(mu_);
  for (;;) {
    if (state_ != State::kOpen) {
      if (state_ == State::kClosed) return Closed("connection is closed (" + close_status_.ToString() + ")");
      return Closed("connection is closing");
    }
    // Backends that can write from the caller's memory (TCP) try that
    // first (connection_core_direct_send.cc).
    if (SupportsDirectSend()) {
      Status sent;
      const DirectStep step = DirectSendStepLocked(lock, send, &sent);
      if (step == DirectStep::kDone) return sent;
      if (step == DirectStep::kWaited) continue;
    }
    // The common path: copy the frame into the send arena (DATA) or the
    // bulk staging ring (BULK), queue it, and let the backend pump it.
    if (!msgs_.full()) {
      RingAllocator& alloc = bulk ? bulk_alloc_ : send_alloc_;
      if (const auto offset = alloc.Allocate(send.total)) {
        OutFrame f;
        f.kind = bulk ? OutFrame::Kind::kBulk : OutFrame::Kind::kData;
        f.type = bulk ? wire::FrameType::kBulk : wire::FrameType::kData;
        f.region = (bulk ? bulk_stage_.get() : send_arena_.get()) + *offset;
        f.size = send.total;
        f.aux = bulk ? *offset : 0;
        f.sequence = next_send_seq_++;
        std::memcpy(f.region + wire::kHeaderSize, payload.data(), payload.size());
        f.payload_crc = PayloadCrc(payload);
        f.done = std::move(send.done);
        msgs_.push_back(std::move(f));
        AdmitLocked();
        // kMore holds the batch back, but never past half the send buffer.
        if (!send.more || send_alloc_.used() * 2 > send_alloc_.capacity() || msgs_.size() * 2 > msgs_.capacity())
          PumpLocked();
        RunCompletions(lock);
        return Status::Ok();
      }
    }
    if (Clock::now() >= send.deadline) {
      ++stats_.busy_rejections;
      return Busy("send buffer full: " + std::to_string(msgs_.size()) + " messages queued, " +
                  std::to_string(send_credits_) + " credits; the receiver is not keeping up");
    }
    if (admitted_ > 0 && OnlyLinkBlocksLocked()) {
      BeginLinkWaitLocked();
      WaitForLinkLocked(lock, send.deadline);
      EndLinkWaitLocked();
    } else {
      space_cv_.wait_until(lock, send.deadline);  // for credits: the I/O thread signals
    }
  }
}

void ConnectionCore::AdmitLocked() {
  if (state_ != State::kOpen && state_ != State::kClosing) return;
  while (admitted_ < msgs_.size() && send_credits_ > 0) {
    SealLocked(msgs_[admitted_]);
    --send_credits_;
    ++admitted_;
  }
}

void ConnectionCore::SealLocked(OutFrame& f) {
  FrameHeader h;
  h.type = f.type;
  h.length = static_cast<uint32_t>(f.kind == OutFrame::Kind::kControl ? f.ctrl_payload.size()
                                                                       : f.size - wire::kHeaderSize);
  h.sequence = f.sequence;
  h.aux = f.aux;
  if (state_ == State::kOpen || state_ == State::kClosing) {
    h.credits = pending_credits_;
    h.bulk_freed = pending_bulk_freed_;
    peer_credits_ += pending_credits_;
    pending_credits_ = 0;
    pending_bulk_freed_ = 0;
  }
  if (f.type == wire::FrameType::kCredit) credit_frame_queued_ = false;
  std::byte* header = f.header();
  EncodeHeader(h, header);
  SealHeader(header, f.kind == OutFrame::Kind::kControl ? PayloadCrc(f.ctrl_payload) : f.payload_crc);
  f.sealed = true;
}

void ConnectionCore::QueueControlLocked(wire::FrameType type, std::span<const std::byte> payload) {
  if (ctrl_.full()) {
    // Keepalive and credit frames are idempotent: drop now, resend later.
    if (type == wire::FrameType::kPing || type == wire::FrameType::kPong || type == wire::FrameType::kCredit) return;
    FailLocked(Aborted("control queue full"));
    return;
  }
  OutFrame f;
  f.kind = OutFrame::Kind::kControl;
  f.type = type;
  f.ctrl_payload.assign(payload.begin(), payload.end());
  f.size = static_cast<uint32_t>(wire::kHeaderSize + payload.size());
  ctrl_.push_back(std::move(f));
}

void ConnectionCore::CompleteMessageLocked() {
  OutFrame f = msgs_.pop_front();
  assert(admitted_ > 0);
  --admitted_;
  if (f.kind == OutFrame::Kind::kData) send_alloc_.FreeOldest(1);
  if (f.kind == OutFrame::Kind::kBulk) {
    ++bulk_completed_;
    FreeBulkLocked();
  }
  ++stats_.messages_sent;
  stats_.bytes_sent += f.size - wire::kHeaderSize;
  if (f.done) done_.emplace_back(std::move(f.done), Status::Ok());
  NoteSentLocked();
  space_cv_.notify_all();
  MaybeFinishClosingLocked();
}

void ConnectionCore::FreeBulkLocked() {
  const uint32_t n = std::min(bulk_released_by_peer_, bulk_completed_);
  if (n == 0) return;
  [[maybe_unused]] const bool freed = bulk_alloc_.FreeOldest(n);
  assert(freed);
  bulk_released_by_peer_ -= n;
  bulk_completed_ -= n;
  space_cv_.notify_all();
}

void ConnectionCore::CompleteControlLocked() {
  OutFrame f = ctrl_.pop_front();
  NoteSentLocked();
  if (ctrl_.empty()) space_cv_.notify_all();  // a large Send may wait for an empty queue
  if (f.type == wire::FrameType::kClose) FailLocked(Status::Ok());
  else if (f.type == wire::FrameType::kRefuse) FailLocked(refuse_status_);
}

void ConnectionCore::RunCompletions(std::unique_lock<std::mutex>& lock) {
  if (done_.empty()) {
    lock.unlock();
    return;
  }
  std::vector<std::pair<SendCallback, Status>> local;
  local.swap(done_);
  lock.unlock();
  for (auto& [cb, status] : local) cb(status);
  // Hand the vector's capacity back so the next batch does not allocate.
  local.clear();
  lock.lock();
  if (done_.empty() && done_.capacity() < local.capacity()) done_.swap(local);
  lock.unlock();
}

// ---------------------------------------------------------------- closing

void ConnectionCore::Close() {
  std::unique_lock lock(mu_);
  if (state_ == State::kHandshaking || state_ == State::kRefusing) {
    FailLocked(Aborted("closed before the handshake completed"));
  } else if (state_ == State::kOpen) {
    state_ = State::kClosing;
    close_deadline_ = ctx_->Now() + ctx_->options.close_linger;
    MaybeFinishClosingLocked();
  }
  RunCompletions(lock);
}

void ConnectionCore::MaybeFinishClosingLocked() {
  if (state_ != State::kClosing || !msgs_.empty() || close_frame_queued_) return;
  close_frame_queued_ = true;
  QueueControlLocked(wire::FrameType::kClose);
  PumpLocked();
}

void ConnectionCore::Fail(Status why) {
  std::unique_lock lock(mu_);
  FailLocked(std::move(why));
  RunCompletions(lock);
}

void ConnectionCore::FailLocked(Status why) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  dead_.store(true, std::memory_order_release);
  handshake_slot_.Release();
  // Logged once, here, where the connection's fate is decided.
  if (why.ok()) {
    ctx_->Log(LogLevel::kInfo, Describe() + " closed");
  } else if (why.code() == StatusCode::kAborted) {
    ctx_->Log(LogLevel::kInfo, Describe() + " closed: " + why.ToString());
  } else {
    ctx_->Log(LogLevel::kWarning, Describe() + " closed: " + why.ToString());
  }
  close_status_ = why;
  const Status for_sends = why.ok() ? Closed("connection closed before the message was sent") : why;
  while (!msgs_.empty()) {
    OutFrame f = msgs_.pop_front();
    if (f.done) done_.emplace_back(std::move(f.done), for_sends);
  }
  while (!ctrl_.empty()) ctrl_.pop_front();
  admitted_ = 0;
  if (on_established_) {
    auto cb = std::move(on_established_);
    on_established_ = nullptr;
    done_.emplace_back([cb = std::move(cb)](const Status& s) { cb(s); }, why.ok() ? Closed("closed") : why);
  }
  space_cv_.notify_all();
  ShutdownLinkLocked();
}

void ConnectionCore::FinishClose() {
  {
    std::lock_guard lock(mu_);
    if (finished_) return;
    finished_ = true;
  }
  if (was_open_ && handlers_.on_close) handlers_.on_close(*this, close_status_);
  // Handlers often capture the connection: drop them to break the cycle.
  handlers_ = {};
  on_accept_ = nullptr;
}

// ---------------------------------------------------------------- receiving

void ConnectionCore::Start() {
  const auto now = ctx_->Now();
  handshake_deadline_ = now + (role_ == Role::kServer ? ctx_->options.handshake_timeout : ctx_->options.connect_timeout);
  last_received_ = now;
  if (role_ == Role::kServer) {
    std::unique_lock lock(mu_);
    Result<Nonce> nonce = ctx_->nonces.Next();
    if (!nonce.ok()) {
      FailLocked(nonce.status());  // fail closed: no challenge without a fresh nonce
    } else {
      server_nonce_ = nonce.value();
      QueueControlLocked(wire::FrameType::kChallenge, server_nonce_);
      PumpLocked();
    }
    RunCompletions(lock);
  }
}

void ConnectionCore::BecomeOpenLocked(const PeerParams& peer) {
  if (peer.receive_credits == 0 || peer.receive_credits > (1u << 20) || peer.max_message_size == 0) {
    FailLocked(ProtocolError("peer advertised unusable parameters (credits " + std::to_string(peer.receive_credits) +
                             ", max message " + std::to_string(peer.max_message_size) + ")"));
    return;
  }
  peer_params_ = peer;
  send_credits_ = peer.receive_credits;
  peer_credits_ = std::max<uint32_t>(ctx_->options.receive_credits, 1);
  const uint32_t ring = std::min(peer.bulk_ring_size, ctx_->options.bulk_ring_size) / wire::kBulkAlign * wire::kBulkAlign;
  if (ring >= 2 * wire::kBulkAlign) {
    bulk_stage_.reset(new std::byte[ring]);
    bulk_stage_size_ = ring;
    Account(ring);
    bulk_alloc_ = RingAllocator(ring, wire::kBulkAlign, static_cast<uint32_t>(msgs_.capacity()) + peer.receive_credits);
  }
  OnPeerParamsLocked(peer);
  if (state_ == State::kClosed) return;  // the backend failed to set up the peer's ring
  state_ = State::kOpen;
  was_open_ = true;
  authenticated_.store(true, std::memory_order_release);
  handshake_slot_.Release();  // authenticated: no longer a pending handshake
  last_received_ = ctx_->Now();
}

void ConnectionCore::HandleHandshakeFrame(const FrameHeader& h, std::span<const std::byte> payload) {
  using wire::FrameType;
  const auto& o = ctx_->options;
  std::unique_lock lock(mu_);
  if (role_ == Role::kClient) {
    if (h.type == FrameType::kChallenge && !challenge_seen_) {
      challenge_seen_ = true;
      std::memcpy(server_nonce_.data(), payload.data(), wire::kNonceSize);
      Result<Nonce> nonce = ctx_->nonces.Next();
      if (!nonce.ok()) {
        FailLocked(nonce.status());  // fail closed: no AUTH without a fresh nonce
        RunCompletions(lock);
        return;
      }
      client_nonce_ = nonce.value();
      // Our AUTH advertises the receive side (verbs: the ring's address and
      // key), so it exists from here on; a server only gets this far with
      // connections we asked for.
      if (Status s = PrepareSessionLocked(); !s.ok()) {
        FailLocked(s);
        RunCompletions(lock);
        return;
      }
      const auto auth = BuildAuth(o.secret, o.cluster_id, server_nonce_, client_nonce_, LocalParamsLocked());
      QueueControlLocked(FrameType::kAuth, auth);
      PumpLocked();
    } else if (h.type == FrameType::kAccept && challenge_seen_) {
      Result<PeerParams> peer = VerifyAccept(payload, o.secret, o.cluster_id, server_nonce_, client_nonce_);
      if (!peer.ok()) {
        FailLocked(peer.status());
      } else {
        BecomeOpenLocked(peer.value());
        if (state_ == State::kOpen && on_established_) {
          auto cb = std::move(on_established_);
          on_established_ = nullptr;
          done_.emplace_back([cb = std::move(cb)](const Status& s) { cb(s); }, Status::Ok());
        }
      }
    } else if (h.type == FrameType::kRefuse && !challenge_seen_) {
      // Refused before any handshake: the server is over its cap of
      // pending handshakes (max_pending_handshakes). Retryable.
      FailLocked(Unavailable("refused by server before the handshake: " + Printable(payload)));
    } else if (h.type == FrameType::kRefuse) {
      FailLocked(AuthFailed("refused by server: " + Printable(payload)));
    } else {
      FailLocked(ProtocolError(std::string("unexpected ") + FrameTypeName(h.type) + " frame during the handshake"));
    }
    RunCompletions(lock);
    return;
  }
  // Server.
  if (h.type != FrameType::kAuth) {
    FailLocked(ProtocolError(std::string("unexpected ") + FrameTypeName(h.type) +
                             " frame during the handshake (want AUTH; no payload is accepted before it)"));
    RunCompletions(lock);
    return;
  }
  Result<AuthInfo> auth = VerifyAuth(payload, o.secret, o.cluster_id, server_nonce_);
  if (!auth.ok()) {
    // The peer is not authenticated: it gets the one fixed text, never which
    // check failed (that would confirm a guessed cluster id) nor the
    // cluster id itself. The reason goes to our log only, when the
    // connection closes with it once the REFUSE is out.
    refuse_status_ = auth.status();
    state_ = State::kRefusing;
    const std::string_view reason = wire::kAuthRefusedReason;
    QueueControlLocked(FrameType::kRefuse, std::as_bytes(std::span(reason.data(), reason.size())));
    PumpLocked();
    RunCompletions(lock);
    return;
  }
  // Authenticated: only now the connection's full memory, before the
  // ACCEPT that advertises it (and after which the peer may send).
  if (Status s = PrepareSessionLocked(); !s.ok()) {
    FailLocked(s);
    RunCompletions(lock);
    return;
  }
  const auto accept = BuildAccept(o.secret, o.cluster_id, server_nonce_, auth.value().client_nonce, LocalParamsLocked());
  QueueControlLocked(FrameType::kAccept, accept);
  BecomeOpenLocked(auth.value().params);
  PumpLocked();
  const bool open = state_ == State::kOpen;
  RunCompletions(lock);
  if (open && on_accept_) {
    // The peer's first message is handled by this thread after we return,
    // so handlers are in place before any message is delivered.
    handlers_ = on_accept_(shared_from_this());
  }
}

void ConnectionCore::HandleFrame(const FrameHeader& h, std::span<const std::byte> payload, uint64_t token, bool transient) {
  using wire::FrameType;
  last_received_ = ctx_->Now();
  std::unique_lock lock(mu_);
  if (state_ == State::kClosed || state_ == State::kRefusing) return;
  if (state_ == State::kHandshaking) {
    lock.unlock();
    HandleHandshakeFrame(h, payload);
    return;
  }
  if (h.credits != 0 || h.bulk_freed != 0) {
    if (uint64_t{send_credits_} + h.credits > peer_params_.receive_credits) {
      FailLocked(ProtocolError("peer returned more credits than it granted"));
      RunCompletions(lock);
      return;
    }
    send_credits_ += h.credits;
    if (h.bulk_freed != 0) {
      if (uint64_t{bulk_released_by_peer_} + h.bulk_freed > bulk_alloc_.regions()) {
        FailLocked(ProtocolError("peer freed more bulk frames than were sent"));
        RunCompletions(lock);
        return;
      }
      bulk_released_by_peer_ += h.bulk_freed;
      FreeBulkLocked();
    }
    AdmitLocked();
    PumpLocked();
    space_cv_.notify_all();
  }
  bool deliver = false;
  switch (h.type) {
    case FrameType::kCredit:
    case FrameType::kPong:
      break;
    case FrameType::kPing:
      QueueControlLocked(FrameType::kPong);
      PumpLocked();
      break;
    case FrameType::kClose:
      FailLocked(Closed(payload.empty() ? "peer closed the connection" : "peer closed the connection: " + Printable(payload)));
      break;
    case FrameType::kData:
    case FrameType::kBulk:
      if (h.sequence != next_recv_seq_) {
        FailLocked(ProtocolError("out-of-order message: sequence " + std::to_string(h.sequence) + ", expected " +
                                 std::to_string(next_recv_seq_)));
      } else if (peer_credits_ == 0) {
        FailLocked(ProtocolError("peer sent a message without a receive credit"));
      } else {
        if (h.type == FrameType::kBulk) {
          const auto index = bulk_releaser_.Arrive();
          if (!index) {
            FailLocked(ProtocolError("too many unreleased bulk messages"));
            break;
          }
          token = kBulkTokenBit | *index;
        }
        --peer_credits_;
        ++next_recv_seq_;
        ++stats_.messages_received;
        stats_.bytes_received += payload.size();
        deliver = true;
      }
      break;
    default:
      FailLocked(ProtocolError(std::string("unexpected ") + FrameTypeName(h.type) + " frame after the handshake"));
  }
  RunCompletions(lock);
  if (!deliver) return;
  const Message msg(this, token, payload, h.type == FrameType::kBulk, h.sequence, transient && h.type == FrameType::kData);
  if (handlers_.on_message) handlers_.on_message(*this, msg);
  if (!msg.retained()) ReleaseReceive(token);
}

void ConnectionCore::ReleaseReceive(uint64_t token) {
  std::unique_lock lock(mu_);
  if (state_ == State::kClosed) return;
  if (token & kBulkTokenBit) {
    pending_bulk_freed_ += bulk_releaser_.Release(token & ~kBulkTokenBit);
  } else {
    OnDataReleasedLocked(token);
  }
  ++pending_credits_;
  const uint32_t threshold = std::max<uint32_t>(1, ctx_->options.receive_credits / 4);
  if (!credit_frame_queued_ && (pending_credits_ >= threshold || pending_bulk_freed_ > 0)) {
    credit_frame_queued_ = true;
    QueueControlLocked(wire::FrameType::kCredit);
    PumpLocked();
  }
  RunCompletions(lock);
}

std::optional<PooledBuffer> ConnectionCore::CopyForLease(std::span<const std::byte> payload,
                                                         std::unique_ptr<std::byte[]>& heap) {
  if (auto buf = ctx_->lease_pool.TryAcquire(); buf && buf->data().size() >= payload.size()) {
    std::memcpy(buf->data().data(), payload.data(), payload.size());
    return buf;
  }
  heap.reset(new std::byte[std::max<size_t>(payload.size(), 1)]);
  std::memcpy(heap.get(), payload.data(), payload.size());
  return std::nullopt;
}

// ---------------------------------------------------------------- timers

void ConnectionCore::Tick(Clock::time_point now) {
  const auto& o = ctx_->options;
  std::unique_lock lock(mu_);
  switch (state_) {
    case State::kHandshaking:
    case State::kRefusing:
      if (now > handshake_deadline_) {
        FailLocked(Timeout("handshake did not complete within " +
                           Ms(role_ == Role::kServer ? o.handshake_timeout : o.connect_timeout)));
      }
      break;
    case State::kOpen:
    case State::kClosing: {
      const auto silent = now - last_received_;
      if (silent > o.keepalive_timeout) {
        FailLocked(Timeout("peer silent for " + Ms(std::chrono::duration_cast<std::chrono::milliseconds>(silent)) +
                           " (keepalive timeout " + Ms(o.keepalive_timeout) + ")"));
      } else if (state_ == State::kClosing && now > close_deadline_) {
        FailLocked(Aborted("close linger of " + Ms(o.close_linger) + " expired with " + std::to_string(msgs_.size()) +
                           " messages unsent"));
      } else if (silent >= o.keepalive_interval && now - last_ping_ >= o.keepalive_interval) {
        last_ping_ = now;
        QueueControlLocked(wire::FrameType::kPing);
        PumpLocked();
      }
      break;
    }
    case State::kClosed:
      break;
  }
  if (state_ != State::kClosed && admitted_ > 0) PumpLocked();  // flushes batches left by kMore
  RunCompletions(lock);
}

}  // namespace strata::rdma
