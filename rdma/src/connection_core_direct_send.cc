// ConnectionCore's direct sends: the paths by which a Send on a backend that
// can write from the caller's memory (SupportsDirectSend; today TCP, whose
// socket takes any bytes) skips the copy into the send arena. The shared
// engine's common path (copy, queue, pump) is ConnectionCore::Enqueue in
// connection_core.cc; it calls DirectSendStepLocked once per turn of its
// loop, with mu_ held, before it tries the arena.
//
// Three ways to skip the copy, tried in this order:
//   1. Nothing queued and a credit in hand: seal the header on the stack
//      and write header + payload in one call (DirectSendLocked). A partial
//      write reserves the frame's arena slot; a large payload whose caller
//      may wait stays in the caller's memory (OutFrame::external) while
//      this Send pushes the rest itself (FinishExternalFrameLocked), like a
//      blocking socket; anything else is copied and left to the pump.
//   2. A large payload behind a full socket, every queued frame holding a
//      credit: wait (once per Send) for the queue to drain, then try 1.
//   3. A large payload and no credit: wait (once per Send) for the
//      receiver's credits instead of copying 64 KiB it cannot take yet.
// None of them waits on the I/O thread (a handler's Send): that thread
// reads the socket and the credits the wait would be for.
#include <cassert>
#include <cstring>

#include "connection_core.h"

namespace strata::rdma {

ConnectionCore::DirectStep ConnectionCore::DirectSendStepLocked(std::unique_lock<std::mutex>& lock,
                                                                PendingSend& send, Status* result) {
  const std::span<const std::byte> payload = send.payload;
  // A batch held back by kMore goes first, then this one leaves directly.
  if (send.large && !msgs_.empty() && admitted_ == msgs_.size() && !WriteBlockedLocked()) PumpLocked();
  // 1. Nothing queued and a credit in hand: write from the caller's memory.
  if (!send.bulk && !send.more && msgs_.empty() && ctrl_.empty() && send_credits_ > 0) {
    OutFrame f;
    f.type = wire::FrameType::kData;
    f.sequence = next_send_seq_++;
    f.payload_crc = PayloadCrc(payload);
    std::byte header[wire::kHeaderSize];
    f.region = header - 0;  // SealLocked writes the header here
    f.size = send.total;
    SealLocked(f);
    --send_credits_;
    Result<size_t> wrote = DirectSendLocked({header, wire::kHeaderSize}, payload);
    if (!wrote.ok()) {
      FailLocked(wrote.status());
      *result = wrote.status();
      RunCompletions(lock);
      return DirectStep::kDone;
    }
    if (*wrote == send.total) {
      ++stats_.messages_sent;
      stats_.bytes_sent += payload.size();
      NoteSentLocked();
      lock.unlock();
      if (send.done) send.done(Status::Ok());
      *result = Status::Ok();
      return DirectStep::kDone;
    }
    // Partial write: the arena is empty, so the frame fits; reserve its
    // slot. A large payload stays in the caller's memory while this Send
    // pushes the rest out itself (a blocking socket's behaviour: copying
    // 64 KiB and handing over to the I/O thread costs more); a small one,
    // or one whose caller cannot wait, is copied and left to the pump.
    const auto offset = send_alloc_.Allocate(send.total);
    assert(offset.has_value());
    // Not on the I/O thread (a handler's Send): waiting there for socket
    // space would also stop it reading, and a peer doing the same would
    // wait on us in turn.
    const bool finish_here = send.wait.count() > 0 && payload.size() >= kDirectWaitMinBytes && !OnIoThread();
    f.region = send_arena_.get() + *offset;
    std::memcpy(f.region, header, wire::kHeaderSize);
    if (finish_here) {
      f.external = payload.data();
    } else {
      std::memcpy(f.region + wire::kHeaderSize, payload.data(), payload.size());
    }
    f.written = static_cast<uint32_t>(*wrote);
    f.done = std::move(send.done);
    const uint32_t sequence = f.sequence;
    msgs_.push_back(std::move(f));
    admitted_ = 1;
    if (finish_here) {
      BeginLinkWaitLocked();
      NoteLinkFullLocked();  // it just took less than the frame: skip a write that would only say EAGAIN
      FinishExternalFrameLocked(lock, sequence, send.deadline);
      EndLinkWaitLocked();
    } else {
      PumpLocked();
    }
    RunCompletions(lock);
    *result = Status::Ok();
    return DirectStep::kDone;
  }
  // 2. A large message behind a full socket: copying it into the send arena
  // costs more than waiting, like a blocking socket, for the queue to
  // drain and then writing it from the caller's memory. Only when every
  // queued frame holds a credit (the queue drains by itself) and the
  // caller allows a wait; once per Send. Not on the I/O thread (see above).
  if (send.large && !send.waited_for_socket && send.wait.count() > 0 && OnlyLinkBlocksLocked() &&
      send_credits_ > 0 && !OnIoThread()) {
    send.waited_for_socket = true;
    BeginLinkWaitLocked();
    while (state_ == State::kOpen && !(msgs_.empty() && ctrl_.empty()) && OnlyLinkBlocksLocked() &&
           Clock::now() < send.deadline) {
      WaitForLinkLocked(lock, send.deadline);
    }
    EndLinkWaitLocked();
    return DirectStep::kWaited;
  }
  // 3. Likewise when the receiver has not returned credits yet: it is the
  // bottleneck, and copying 64 KiB only takes CPU it needs (two vCPUs
  // here); the credits come back in batches (a quarter of the window).
  // Never on the I/O thread: it is the one that would read the credits.
  if (send.large && !send.waited_for_credit && send.wait.count() > 0 && send_credits_ == 0 &&
      admitted_ == msgs_.size() && !OnIoThread()) {
    send.waited_for_credit = true;
    space_cv_.wait_until(lock, send.deadline, [&] { return state_ != State::kOpen || send_credits_ > 0; });
    return DirectStep::kWaited;
  }
  return DirectStep::kNotTaken;
}

void ConnectionCore::FinishExternalFrameLocked(std::unique_lock<std::mutex>& lock, uint32_t sequence,
                                               Clock::time_point deadline) {
  auto queued = [&] { return !msgs_.empty() && msgs_.front().sequence == sequence && msgs_.front().external != nullptr; };
  while (queued()) {
    if (Clock::now() >= deadline) {
      // Out of time: the payload moves into the slot reserved for it and
      // the I/O thread finishes the frame after we return.
      OutFrame& f = msgs_.front();
      std::memcpy(f.region + wire::kHeaderSize, f.external, f.size - wire::kHeaderSize);
      f.external = nullptr;
      break;
    }
    if (WriteBlockedLocked()) {
      WaitForLinkLocked(lock, deadline);
    } else {
      PumpLocked();
    }
  }
}

}  // namespace strata::rdma
