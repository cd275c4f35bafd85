// TcpConnection: see tcp_connection.h.
#include "tcp/tcp_connection.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "tcp/tcp_backend.h"

namespace strata::rdma {
namespace {
constexpr int kMaxIov = 64;
constexpr uint32_t kReadEvents = EPOLLIN | EPOLLRDHUP;
// Most input-handling rounds a connection skips blocking reads for after
// repeated misses (see read_backoff_).
constexpr uint32_t kMaxReadBackoff = 64;
// Direct sends up to this size (header included) are copied into one buffer.
constexpr size_t kSmallFrameBytes = 4096 + wire::kHeaderSize;
// The read buffer before authentication: any two handshake frames (so a
// partial one can always be completed after compaction).
constexpr size_t kHandshakeReadBuffer = 2 * (wire::kHeaderSize + wire::kMaxControlPayload);
}  // namespace

TcpConnection::TcpConnection(std::shared_ptr<TransportContext> ctx, Role role, std::string peer, int fd, TcpShard* shard)
    : ConnectionCore(std::move(ctx), role, Scheme::kTcp, std::move(peer)), fd_(fd), shard_(shard) {
  const auto& o = context().options;
  // Until the peer has authenticated only handshake frames are read: a
  // buffer of two control frames. AllocateSessionLocked sizes the real one.
  rcap_ = kHandshakeReadBuffer;
  rbuf_.reset(new std::byte[rcap_]);
  Account(int64_t{sizeof(TcpConnection)} + int64_t{kHandshakeReadBuffer});
  if (o.low_latency_reads && fd_ >= 0) {
    // Blocking mode for BlockingRead's recv only; all other I/O here passes
    // MSG_DONTWAIT. If either call fails we simply never block.
    const timeval timeout{0, 1000};
    const int flags = ::fcntl(fd_, F_GETFL);
    blocking_reads_ = flags >= 0 && ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout) == 0 &&
                      ::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK) == 0;
  }
}

TcpConnection::~TcpConnection() {
  if (fd_ >= 0) ::close(fd_);
}

Status TcpConnection::AllocateSessionLocked() {
  const auto& o = context().options;
  // Room for several maximal frames so one recv() takes in many messages;
  // PrepareReadSpace swaps it in before the next read (not now: the frame
  // being handled still points into the handshake buffer).
  session_rcap_ = std::max<size_t>(256 * 1024, 4 * (wire::kHeaderSize + o.max_message_size));
  if (o.bulk_ring_size > 0) {
    bulk_ring_.reset(new std::byte[o.bulk_ring_size]);  // virtual until the peer writes into it
    Account(o.bulk_ring_size);
  }
  return Status::Ok();
}

PeerParams TcpConnection::LocalParamsLocked() {
  const auto& o = context().options;
  PeerParams p;
  p.receive_credits = std::max<uint32_t>(o.receive_credits, 1);
  p.max_message_size = o.max_message_size;
  p.bulk_ring_size = bulk_ring_ ? o.bulk_ring_size : 0;
  return p;  // no rkey/address: TCP has no remote memory access
}

void TcpConnection::SetWantWriteLocked(bool want) {
  want_write_ = want;
  const bool arm = want && link_waiters_ == 0;
  if (arm == epollout_armed_ || fd_ < 0) return;
  epollout_armed_ = arm;
  if (Status s = shard_->loop().Rewatch(fd_, kReadEvents | (arm ? uint32_t{EPOLLOUT} : 0u), this); !s.ok()) FailLocked(s);
}

bool TcpConnection::OnIoThread() const { return shard_->loop().InLoopThread(); }

void TcpConnection::EndLinkWaitLocked() {
  --link_waiters_;
  if (state_ != State::kClosed) SetWantWriteLocked(want_write_);  // the I/O thread takes over if still blocked
}

void TcpConnection::WaitForLinkLocked(std::unique_lock<std::mutex>& lock, Clock::time_point until) {
  if (fd_ < 0 || state_ == State::kClosed) return;
  // Poll in slices so a connection torn down meanwhile (its fd closed and
  // perhaps reused) costs at most one slice; every write happens under mu_
  // after re-checking the state, so a spurious wake-up is harmless.
  constexpr auto kSlice = std::chrono::milliseconds(5);
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
  pollfd p{fd_, POLLOUT, 0};
  lock.unlock();
  ::poll(&p, 1, static_cast<int>(std::clamp(left, std::chrono::milliseconds(0), kSlice).count()));
  lock.lock();
  if (fd_ < 0 || state_ == State::kClosed) return;
  on_writable_ = true;
  PumpLocked();
  on_writable_ = false;
}

Result<size_t> TcpConnection::DirectSendLocked(std::span<const std::byte> header, std::span<const std::byte> payload) {
  const size_t total = header.size() + payload.size();
  if (total <= kSmallFrameBytes) {
    // Small frame: one contiguous send() is measurably cheaper than a
    // two-iovec sendmsg() (~3% of a loopback round trip here), and copying
    // a few KiB costs far less than that.
    std::byte frame[kSmallFrameBytes];
    std::memcpy(frame, header.data(), header.size());
    if (!payload.empty()) std::memcpy(frame + header.size(), payload.data(), payload.size());
    for (;;) {
      const ssize_t n = ::send(fd_, frame, total, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
      return ErrnoStatus("send", errno);
    }
  }
  iovec iov[2] = {{const_cast<std::byte*>(header.data()), header.size()},
                  {const_cast<std::byte*>(payload.data()), payload.size()}};
  msghdr msg{};
  msg.msg_iov = iov;
  msg.msg_iovlen = payload.empty() ? 1 : 2;
  for (;;) {
    const ssize_t n = ::sendmsg(fd_, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return size_t{0};
    return ErrnoStatus("sendmsg", errno);
  }
}

void TcpConnection::PumpLocked() {
  // The socket was full at the last attempt: EPOLLOUT (level-triggered)
  // resumes the pump on the I/O thread once it drains. Trying again from
  // every Send meanwhile only costs a failing sendmsg and lock hand-offs.
  if (want_write_ && !on_writable_) return;
  while (state_ != State::kClosed && fd_ >= 0) {
    iovec iov[kMaxIov];
    int n = 0;
    size_t total = 0;
    auto add = [&](const std::byte* p, size_t len) {
      if (len == 0 || n == kMaxIov) return;
      iov[n++] = {const_cast<std::byte*>(p), len};
      total += len;
    };
    // Wire order: a half-written frame first, then control frames, then
    // admitted messages. Control frames never split a message.
    // A frame from written on: header and payload may live apart (external).
    auto add_frame = [&](const OutFrame& f) {
      if (f.external == nullptr) {
        add(f.region + f.written, f.size - f.written);
        return;
      }
      if (f.written < wire::kHeaderSize) add(f.region + f.written, wire::kHeaderSize - f.written);
      const size_t pdone = f.written > wire::kHeaderSize ? f.written - wire::kHeaderSize : 0;
      add(f.external + pdone, f.size - wire::kHeaderSize - pdone);
    };
    const bool partial_msg = admitted_ > 0 && msgs_.front().written > 0;
    if (partial_msg) add_frame(msgs_.front());
    size_t ctrl_count = 0;
    for (size_t i = 0; i < ctrl_.size() && n + 2 <= kMaxIov; ++i, ++ctrl_count) {
      OutFrame& f = ctrl_[i];
      if (!f.sealed) SealLocked(f);
      const auto payload = f.payload();
      if (f.written < wire::kHeaderSize) add(f.ctrl_header.data() + f.written, wire::kHeaderSize - f.written);
      const size_t pdone = f.written > wire::kHeaderSize ? f.written - wire::kHeaderSize : 0;
      add(payload.data() + pdone, payload.size() - pdone);
    }
    size_t msg_count = partial_msg ? 1 : 0;
    if (ctrl_count == ctrl_.size()) {
      for (size_t i = msg_count; i < admitted_ && n + 2 <= kMaxIov; ++i, ++msg_count) add_frame(msgs_[i]);
    }
    if (n == 0) {
      SetWantWriteLocked(false);
      return;
    }
    msghdr mh{};
    mh.msg_iov = iov;
    mh.msg_iovlen = static_cast<size_t>(n);
    const ssize_t wrote = ::sendmsg(fd_, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        SetWantWriteLocked(true);
        return;
      }
      FailLocked(ErrnoStatus("sendmsg", errno));
      return;
    }
    // Account for what left, in the same order as gathered.
    size_t left = static_cast<size_t>(wrote);
    auto advance = [&](OutFrame& f) {
      const size_t take = std::min<size_t>(left, f.size - f.written);
      f.written += static_cast<uint32_t>(take);
      left -= take;
      return f.written == f.size;
    };
    if (partial_msg) {
      if (!advance(msgs_.front())) { SetWantWriteLocked(true); return; }
      CompleteMessageLocked();
    }
    while (left > 0 && !ctrl_.empty() && state_ != State::kClosed) {
      if (!advance(ctrl_.front())) break;
      CompleteControlLocked();
    }
    while (left > 0 && admitted_ > 0 && state_ != State::kClosed) {
      if (!advance(msgs_.front())) break;
      CompleteMessageLocked();
    }
    if (static_cast<size_t>(wrote) < total) {
      SetWantWriteLocked(true);
      return;
    }
  }
}

void TcpConnection::ShutdownLinkLocked() {
  if (finalize_posted_ || draining_) return;
  // Stop sending now; reads stop when Finalize closes the socket.
  if (fd_ >= 0) ::shutdown(fd_, SHUT_WR);
  if (ClosedGracefullyLocked() && fd_ >= 0) {
    draining_ = true;
    drain_deadline_ = context().Now() + context().options.close_linger;
    return;
  }
  PostFinalizeLocked();
}

void TcpConnection::PostFinalizeLocked() {
  if (finalize_posted_) return;
  finalize_posted_ = true;
  auto self = std::static_pointer_cast<TcpConnection>(shared_from_this());
  shard_->loop().Post([self] { self->Finalize(); });
}

void TcpConnection::DrainAfterClose() {
  std::lock_guard lock(mu_);
  for (;;) {
    const ssize_t n = ::recv(fd_, rbuf_.get(), rcap_, MSG_DONTWAIT);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    PostFinalizeLocked();  // EOF or error: the peer is done too
    return;
  }
}

void TcpConnection::TickLink(Clock::time_point now) {
  std::lock_guard lock(mu_);
  if (draining_ && now > drain_deadline_) PostFinalizeLocked();
}

void TcpConnection::Finalize() {
  {
    std::lock_guard lock(mu_);
    if (fd_ >= 0) {
      shard_->loop().Unwatch(fd_);
      // Drain what the peer already sent so close() sends FIN, not RST
      // (an RST could destroy our own CLOSE frame in the peer's buffer).
      for (int i = 0; i < 16 && ::recv(fd_, rbuf_.get(), rcap_, MSG_DONTWAIT) > 0; ++i) {
      }
      ::close(fd_);
      fd_ = -1;
    }
  }
  FinishClose();
  shard_->Drop(this);  // the Posted task still holds a reference
}

void TcpConnection::OnIoEvent(uint32_t events) {
  if (draining_) {  // set under mu_ on this thread or before a wake-up
    DrainAfterClose();
    return;
  }
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) OnReadable();
  if ((events & EPOLLOUT) && !dead()) {
    std::unique_lock lock(mu_);
    on_writable_ = true;
    PumpLocked();
    on_writable_ = false;
    RunCompletions(lock);
  }
}

size_t TcpConnection::PrepareReadSpace() {
  if (rcap_ < session_rcap_) {
    // The session began: from the handshake buffer to the real one,
    // keeping what was read past the last handshake frame.
    std::unique_ptr<std::byte[]> bigger(new std::byte[session_rcap_]);
    std::memcpy(bigger.get(), rbuf_.get() + rbegin_, rend_ - rbegin_);
    rend_ -= rbegin_;
    rbegin_ = 0;
    Account(int64_t(session_rcap_) - int64_t(rcap_));
    rbuf_ = std::move(bigger);
    rcap_ = session_rcap_;
  }
  if (rbegin_ == rend_) {
    rbegin_ = rend_ = 0;
  } else if (rbegin_ > 0 && rend_ > rcap_ / 2) {
    std::memmove(rbuf_.get(), rbuf_.get() + rbegin_, rend_ - rbegin_);
    rend_ -= rbegin_;
    rbegin_ = 0;
  }
  return rcap_ - rend_;
}

bool TcpConnection::BlockingRead() {
  if (!blocking_reads_ || dead() || draining_) return false;
  if (reads_to_skip_ > 0) {
    --reads_to_skip_;
    return false;
  }
  {
    std::lock_guard lock(mu_);
    // Waiting for write space is epoll's job (EPOLLOUT) or a sender's; a
    // closing link is epoll's too.
    if (want_write_ || fd_ < 0 || state_ == State::kClosed) return false;
    ++StatsLocked().blocking_reads;
  }
  const size_t space = PrepareReadSpace();
  shard_->loop().ParkForBlockingRead(fd_);
  // Blocks up to SO_RCVTIMEO: 1 ms asked, but the kernel rounds it up to
  // whole scheduler ticks (10 ms on a HZ=100 kernel such as ours).
  const ssize_t n = ::recv(fd_, rbuf_.get() + rend_, space, 0);
  if (n > 0) {
    read_backoff_ = 0;
    rend_ += static_cast<size_t>(n);
    ProcessInput();
    if (static_cast<size_t>(n) == space && !dead()) OnReadable();  // more may be waiting
    return true;
  }
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {  // nothing came in time
    read_backoff_ = std::min(std::max<uint32_t>(1, 2 * read_backoff_), kMaxReadBackoff);
    reads_to_skip_ = read_backoff_;
    std::lock_guard lock(mu_);
    ++StatsLocked().blocking_read_misses;
    return false;
  }
  OnReadable();  // EOF or an error: the non-blocking path reports it (both are sticky)
  return true;
}

void TcpConnection::OnReadable() {
  for (int round = 0; round < 16 && !dead(); ++round) {
    const size_t space = PrepareReadSpace();
    const ssize_t n = ::recv(fd_, rbuf_.get() + rend_, space, MSG_DONTWAIT);
    if (n > 0) {
      rend_ += static_cast<size_t>(n);
      ProcessInput();
      // A short read means the socket is (almost surely) drained: skip the
      // recv that would only say EAGAIN; epoll is level-triggered anyway.
      if (static_cast<size_t>(n) < space) return;
      continue;
    }
    if (n == 0) {
      const size_t have = rend_ - rbegin_;
      if (in_bulk_) {
        Fail(ProtocolError("truncated frame: peer closed the connection inside a BULK frame (" +
                           std::to_string(bulk_remaining_) + " payload bytes missing)"));
      } else if (have > 0) {
        std::string want = "a 32-byte header";
        if (have >= wire::kHeaderSize) want = std::to_string(wire::kHeaderSize + DecodeHeader(rbuf_.get() + rbegin_).length) + " bytes";
        Fail(ProtocolError("truncated frame: peer closed the connection after " + std::to_string(have) +
                           " bytes of a frame (want " + want + ")"));
      } else {
        Fail(Closed("connection lost: peer closed the socket without a CLOSE frame"));
      }
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    Fail(ErrnoStatus("recv", errno));
    return;
  }
}

void TcpConnection::ProcessInput() {
  while (!dead()) {
    // Per frame: the handshake frame just handled may have opened the
    // connection (an ACCEPT followed by DATA in one read).
    const FrameLimits limits = ReceiveLimits();
    if (in_bulk_) {
      const size_t take = std::min(bulk_remaining_, rend_ - rbegin_);
      std::memcpy(bulk_ring_.get() + bulk_pos_, rbuf_.get() + rbegin_, take);
      rbegin_ += take;
      bulk_pos_ += take;
      bulk_remaining_ -= take;
      if (bulk_remaining_ > 0) return;
      in_bulk_ = false;
      const std::byte* frame = bulk_ring_.get() + bulk_header_.aux;
      const std::span<const std::byte> payload(frame + wire::kHeaderSize, bulk_header_.length);
      if (Status s = VerifyChecksum(frame, payload); !s.ok()) {
        Fail(std::move(s));
        return;
      }
      HandleFrame(bulk_header_, payload, 0, /*transient=*/false);
      continue;
    }
    const size_t have = rend_ - rbegin_;
    if (have < wire::kHeaderSize) {
      ParsedFrame unused;
      Status error;
      if (ParseFrame({rbuf_.get() + rbegin_, have}, limits, &unused, &error) == ParseOutcome::kError) Fail(std::move(error));
      return;
    }
    const std::byte* frame = rbuf_.get() + rbegin_;
    const FrameHeader h = DecodeHeader(frame);
    if (Status s = ValidateHeader(h, limits); !s.ok()) {
      Fail(std::move(s));
      return;
    }
    if (h.type == wire::FrameType::kBulk) {
      // Land the frame where the sender placed it in our ring, as RDMA would.
      std::memcpy(bulk_ring_.get() + h.aux, frame, wire::kHeaderSize);
      rbegin_ += wire::kHeaderSize;
      in_bulk_ = true;
      bulk_header_ = h;
      bulk_pos_ = h.aux + wire::kHeaderSize;
      bulk_remaining_ = h.length;
      continue;
    }
    const size_t total = wire::kHeaderSize + h.length;
    if (have < total) return;
    const std::span<const std::byte> payload(frame + wire::kHeaderSize, h.length);
    if (Status s = VerifyChecksum(frame, payload); !s.ok()) {
      Fail(std::move(s));
      return;
    }
    rbegin_ += total;  // the bytes stay put until the next read
    HandleFrame(h, payload, 0, /*transient=*/true);
  }
}

}  // namespace strata::rdma
