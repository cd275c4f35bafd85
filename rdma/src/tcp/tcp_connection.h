// TcpConnection: ConnectionCore over a non-blocking TCP socket.
//
// Send side (any thread, under the core's mutex): a Send with nothing queued
// and a credit in hand goes straight to the socket from the caller's memory
// (one send() up to 4 KiB, else a two-iovec sendmsg); otherwise frames wait
// in the core's queues and PumpLocked gathers them (partial frame first,
// then control frames, then admitted messages) into one sendmsg of up to
// kMaxIov iovecs. On EAGAIN it arms EPOLLOUT and the I/O thread continues
// when the socket drains, unless a sender waits for the socket itself
// (WaitForLinkLocked: poll, then pump; EPOLLOUT stays off meanwhile).
//
// Receive side (I/O thread only): bytes are read into a buffer of four
// maximal frames; complete frames are validated and dispatched in place
// (the view is valid until the handler returns). BULK frames are streamed
// into the bulk ring at the offset the sender chose, as the NIC would do.
// Before the peer has authenticated the buffer holds two control frames
// and there is no bulk ring (connection_core.h, "Memory before
// authentication"): a stranger costs ~2 KiB here, not the read buffer and
// bulk ring (~4.3 MiB with the default options).
//
// Failure: read/write errors, EOF and bad frames fail the core; teardown
// (epoll removal, close) is Posted to the I/O thread.
#pragma once

#include <atomic>
#include <memory>

#include "connection_core.h"
#include "tcp/event_loop.h"

namespace strata::rdma {

class TcpShard;

class TcpConnection final : public ConnectionCore, public IoHandler {
 public:
  TcpConnection(std::shared_ptr<TransportContext> ctx, Role role, std::string peer, int fd, TcpShard* shard);
  ~TcpConnection() override;

  int fd() const { return fd_; }
  void OnIoEvent(uint32_t events) override;
  // TransportOptions::low_latency_reads: the socket is left in blocking mode
  // (every other call passes MSG_DONTWAIT) with a 1 ms receive timeout (a
  // scheduler tick in practice), and the loop may wait for our next bytes in
  // recv() instead of epoll_wait; the socket then leaves the epoll set.
  bool SupportsBlockingRead() const override { return blocking_reads_; }
  bool BlockingRead() override;
  void OnWatchLost(const Status& why) override { Fail(why); }
  // I/O thread: epoll removal, close, on_close, drop from the shard.
  void Finalize();
  // I/O thread timer: ends a graceful close whose peer never sent EOF.
  void TickLink(Clock::time_point now);

 protected:
  Status AllocateSessionLocked() override;
  void PumpLocked() override;
  void ShutdownLinkLocked() override;
  PeerParams LocalParamsLocked() override;
  bool SupportsDirectSend() const override { return true; }
  bool WriteBlockedLocked() const override { return want_write_; }
  Result<size_t> DirectSendLocked(std::span<const std::byte> header, std::span<const std::byte> payload) override;
  void WaitForLinkLocked(std::unique_lock<std::mutex>& lock, Clock::time_point until) override;
  void BeginLinkWaitLocked() override { ++link_waiters_; }
  void EndLinkWaitLocked() override;
  void NoteLinkFullLocked() override { SetWantWriteLocked(true); }
  bool OnIoThread() const override;

 private:
  void OnReadable();
  // Makes room in rbuf_; returns the free space at rend_.
  size_t PrepareReadSpace();
  void ProcessInput();
  void SetWantWriteLocked(bool want);
  void PostFinalizeLocked();
  void DrainAfterClose();

  int fd_;
  TcpShard* shard_;
  bool blocking_reads_ = false;
  // Adaptive low_latency_reads (I/O thread): after a blocking read that
  // timed out, skip the next read_backoff_ chances to block (doubling up to
  // kMaxReadBackoff per further miss; a hit resets it), so a connection that
  // is not in a request/response rhythm rarely holds its thread in recv().
  uint32_t read_backoff_ = 0;
  uint32_t reads_to_skip_ = 0;
  bool want_write_ = false;   // the socket was full at the last write (mu_)
  bool epollout_armed_ = false;  // EPOLLOUT registered (mu_)
  // Senders waiting for write space on the socket themselves (mu_); while
  // there are any, EPOLLOUT stays off so the I/O thread is not woken too.
  int link_waiters_ = 0;
  bool on_writable_ = false;  // PumpLocked called for EPOLLOUT (mu_)
  bool finalize_posted_ = false;
  // Graceful close: CLOSE sent and SHUT_WR done; we read (and drop) until the
  // peer's EOF so close() sends FIN, not an RST that would destroy data the
  // peer has not read yet.
  std::atomic<bool> draining_{false};
  Clock::time_point drain_deadline_{};

  // Receive state (I/O thread).
  std::unique_ptr<std::byte[]> rbuf_;
  size_t rcap_ = 0, rbegin_ = 0, rend_ = 0;
  size_t session_rcap_ = 0;  // the buffer's size once the session began (0: not yet)
  std::unique_ptr<std::byte[]> bulk_ring_;
  bool in_bulk_ = false;
  FrameHeader bulk_header_;
  size_t bulk_pos_ = 0, bulk_remaining_ = 0;
};

}  // namespace strata::rdma
