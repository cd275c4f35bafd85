// Connection: one authenticated, ordered, framed message stream to a peer.
//
// Thread-safety: every method may be called from any thread concurrently.
// Messages from one Send* caller arrive in the order that caller's calls
// returned OK; ordinary and bulk messages share one order.
//
// Callbacks: the receive handler and on_close run on the connection's I/O
// thread; one connection's handlers never run concurrently with each other.
// They must not block for long: other connections share the I/O thread. To
// process a message later, Retain() it (backpressure follows automatically).
// A SendCallback runs on the I/O thread or inline on the sending thread
// after Send's internal locks are dropped; it may call Send again.
//
// Errors: a failed connection reports its Status once through on_close
// (kOk after a local Close(), kClosed when the peer closed, kTimeout when the
// peer went silent, kProtocolError/kAuthFailed for bad input); after that
// Send* return kClosed and pending SendCallbacks receive the same Status.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include "strata/rdma/endpoint.h"
#include "strata/rdma/message.h"
#include "strata/rdma/status.h"

namespace strata::rdma {

class Connection;

// Local completion: OK once the message has left this process (TCP: written
// to the socket; verbs: send/write work request completed, i.e. acknowledged
// by the peer's NIC). Not an application-level acknowledgement.
using SendCallback = std::function<void(const Status&)>;

// Hints for Send/SendBulk.
enum class SendFlags : uint32_t {
  kNone = 0,
  // More messages follow at once: this one may wait in the send buffer so
  // that a batch leaves in one write (writev) / one doorbell. It is sent by
  // the next Send without kMore, by Flush(), or at the latest by the I/O
  // thread's next timer tick.
  kMore = 1,
};

struct ConnectionHandlers {
  std::function<void(Connection&, const Message&)> on_message;
  std::function<void(Connection&, const Status&)> on_close;  // exactly once
};

struct ConnectionStats {
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;
  uint64_t bytes_sent = 0;      // payload bytes
  uint64_t bytes_received = 0;  // payload bytes
  uint32_t send_credits = 0;    // messages we may still send before waiting
  uint32_t queued_messages = 0; // accepted by Send* but not yet on the wire
  uint64_t queued_bytes = 0;    // bytes of send buffer those occupy
  uint64_t busy_rejections = 0; // Send* calls that returned kBusy
  // TCP low_latency_reads: blocking reads tried, and those that timed out
  // (each miss backs the connection off from trying; see TransportOptions).
  uint64_t blocking_reads = 0;
  uint64_t blocking_read_misses = 0;
};

class Connection {
 public:
  virtual ~Connection() = default;

  // Queues one message of at most max_message_size() bytes; the payload is
  // copied (or written) before return. When credits or send-buffer space are
  // exhausted, waits up to `wait` for them and then returns kBusy.
  virtual Status Send(std::span<const std::byte> payload, SendCallback done = {},
                      std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                      SendFlags flags = SendFlags::kNone) = 0;

  // A large message (up to max_bulk_size()) through the peer's bulk ring:
  // on verbs an RDMA WRITE with immediate, on TCP the same frame on the stream.
  virtual Status SendBulk(std::span<const std::byte> payload, SendCallback done = {},
                          std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                          SendFlags flags = SendFlags::kNone) = 0;

  // Pushes out messages held back by SendFlags::kMore.
  virtual void Flush() = 0;

  // Graceful: stops accepting sends, drains queued messages (up to
  // close_linger), tells the peer, then reports kOk through on_close.
  // Idempotent; does not wait.
  virtual void Close() = 0;

  virtual bool is_open() const = 0;
  virtual Scheme backend() const = 0;
  virtual std::string peer_address() const = 0;
  virtual uint32_t max_message_size() const = 0;  // negotiated with the peer
  virtual uint32_t max_bulk_size() const = 0;     // 0 if either side disabled bulk
  virtual ConnectionStats stats() const = 0;
};

}  // namespace strata::rdma
