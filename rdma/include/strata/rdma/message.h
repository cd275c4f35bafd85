// Message and MessageLease: how a receive handler sees incoming bytes.
//
// A Message is a view: its payload stays valid until the receive handler
// returns, and only on the thread running the handler. To keep the bytes
// longer, call Retain() inside the handler; the MessageLease keeps them
// valid until it is destroyed or Release()d, on any thread.
//
// Flow control is tied to this: the message's receive credit is returned to
// the sender when the handler returns, or, if retained, when the lease is
// released. A consumer that holds leases therefore slows the sender down
// (backpressure) instead of letting memory grow.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>

#include "strata/rdma/buffer_pool.h"

namespace strata::rdma {

namespace detail {
// Implemented by the connection that received a message.
class ReceiveOwner {
 public:
  virtual ~ReceiveOwner() = default;
  // Returns the credit (and, for bulk, the ring space) of a message.
  virtual void ReleaseReceive(uint64_t token) = 0;
  virtual std::shared_ptr<ReceiveOwner> ReceiveOwnerRef() = 0;
  // Copies a payload that lives in transient memory (a TCP read buffer) into
  // a pooled buffer, or into `heap` when the pool is exhausted.
  virtual std::optional<PooledBuffer> CopyForLease(std::span<const std::byte> payload,
                                                   std::unique_ptr<std::byte[]>& heap) = 0;
};
}  // namespace detail

class MessageLease {
 public:
  MessageLease() = default;
  MessageLease(MessageLease&&) noexcept = default;
  MessageLease& operator=(MessageLease&& other) noexcept;
  MessageLease(const MessageLease&) = delete;
  MessageLease& operator=(const MessageLease&) = delete;
  ~MessageLease() { Release(); }

  std::span<const std::byte> payload() const { return view_; }
  explicit operator bool() const { return owner_ != nullptr; }
  // Gives the credit back to the sender. Idempotent.
  void Release();

 private:
  friend class Message;
  std::shared_ptr<detail::ReceiveOwner> owner_;
  uint64_t token_ = 0;
  std::span<const std::byte> view_;
  std::optional<PooledBuffer> pooled_;
  std::unique_ptr<std::byte[]> heap_;
};

class Message {
 public:
  Message(detail::ReceiveOwner* owner, uint64_t token, std::span<const std::byte> payload,
          bool bulk, uint32_t sequence, bool transient)
      : owner_(owner), token_(token), payload_(payload), bulk_(bulk), sequence_(sequence),
        transient_(transient) {}
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;

  std::span<const std::byte> payload() const { return payload_; }
  // True if it was sent with SendBulk (arrived through the bulk ring).
  bool is_bulk() const { return bulk_; }
  // Per-connection, per-direction sequence number of messages, from 1.
  uint32_t sequence() const { return sequence_; }

  // Keep the payload (and hold back its credit) beyond the handler. At most
  // once per message; a second call returns an empty lease.
  MessageLease Retain() const;
  bool retained() const { return retained_; }

 private:
  detail::ReceiveOwner* owner_;
  uint64_t token_;
  std::span<const std::byte> payload_;
  bool bulk_;
  uint32_t sequence_;
  bool transient_;  // payload is in a buffer reused after the handler returns
  mutable bool retained_ = false;
};

}  // namespace strata::rdma
