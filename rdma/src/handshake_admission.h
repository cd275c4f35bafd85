// HandshakeAdmission: how many peers may be in the handshake at once.
//
// Why: from the moment a listener accepts a connection (a TCP accept, an
// RDMA connect request) until the peer has authenticated, the connection
// costs a socket or a queue pair, a little memory and a timer, and anybody
// who can reach the port can cause that. This caps the number of such
// connections per Transport (TransportOptions::max_pending_handshakes),
// across all its listeners and both backends. Beyond the cap a new one is
// refused at once, before anything is allocated for it; handshake_timeout
// bounds how long an admitted peer may keep its place, so silent peers
// cannot hold the cap forever.
//
// A server-side connection holds a Slot from its accept until it has
// authenticated or is closed, whichever comes first; the Slot's destructor
// gives the place back, so a connection dropped on any path cannot leak one.
//
// Refusals are logged rate-limited, since a flood of them is exactly when a
// line per refusal would hurt: the first one at once, then at most one line
// per kRefusalLogInterval saying how many were refused since the last line.
//
// Thread-safety: TryAdmit runs on a listener's thread (TCP: shard 0; verbs:
// the rdma_cm thread) concurrently with Slots released on I/O threads.
// Slots must not outlive their HandshakeAdmission (connections keep the
// TransportContext that owns it alive).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "strata/rdma/log.h"

namespace strata::rdma {

class HandshakeAdmission {
 public:
  static constexpr std::chrono::seconds kRefusalLogInterval{10};

  // One admitted, not yet authenticated connection. Move-only.
  class Slot {
   public:
    Slot() = default;
    Slot(Slot&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Slot& operator=(Slot&& other) noexcept {
      if (this != &other) {
        Release();
        owner_ = std::exchange(other.owner_, nullptr);
      }
      return *this;
    }
    Slot(const Slot&) = delete;
    Slot& operator=(const Slot&) = delete;
    ~Slot() { Release(); }

    // Gives the place back (authenticated or closed). Idempotent.
    void Release();
    bool held() const { return owner_ != nullptr; }

   private:
    friend class HandshakeAdmission;
    explicit Slot(HandshakeAdmission* owner) : owner_(owner) {}
    HandshakeAdmission* owner_ = nullptr;
  };

  // `log` receives the refusal lines.
  HandshakeAdmission(uint32_t max_pending, LogSink log) : max_pending_(max_pending), log_(std::move(log)) {}

  // A slot for a connection from `peer`, or nullopt (logged, rate-limited)
  // when max_pending connections are already in the handshake. `now` is the
  // transport's clock (for the log's rate limit).
  std::optional<Slot> TryAdmit(std::string_view peer, std::chrono::steady_clock::time_point now);

  uint32_t pending() const { return pending_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint32_t max_pending() const { return max_pending_; }

 private:
  void LogRefusal(std::string_view peer, std::chrono::steady_clock::time_point now);

  const uint32_t max_pending_;
  const LogSink log_;
  std::atomic<uint32_t> pending_{0};
  std::atomic<uint64_t> refused_{0};
  // Rate limit of the refusal log.
  std::mutex log_mu_;
  bool logged_once_ = false;
  std::chrono::steady_clock::time_point last_line_{};
  uint64_t unlogged_ = 0;  // refusals since the last line
};

}  // namespace strata::rdma
