// HandshakeAdmission: see handshake_admission.h.
#include "handshake_admission.h"

namespace strata::rdma {

void HandshakeAdmission::Slot::Release() {
  if (owner_ == nullptr) return;
  owner_->pending_.fetch_sub(1, std::memory_order_relaxed);
  owner_ = nullptr;
}

std::optional<HandshakeAdmission::Slot> HandshakeAdmission::TryAdmit(std::string_view peer,
                                                                    std::chrono::steady_clock::time_point now) {
  uint32_t pending = pending_.load(std::memory_order_relaxed);
  while (pending < max_pending_) {
    if (pending_.compare_exchange_weak(pending, pending + 1, std::memory_order_relaxed)) return Slot(this);
  }
  refused_.fetch_add(1, std::memory_order_relaxed);
  LogRefusal(peer, now);
  return std::nullopt;
}

void HandshakeAdmission::LogRefusal(std::string_view peer, std::chrono::steady_clock::time_point now) {
  std::string line;
  {
    std::lock_guard lock(log_mu_);
    ++unlogged_;
    if (logged_once_ && now - last_line_ < kRefusalLogInterval) return;
    const std::string cap = std::to_string(max_pending_);
    if (!logged_once_) {
      line = "refusing connection from " + std::string(peer) + ": " + cap +
             " handshakes pending, the cap (TransportOptions::max_pending_handshakes " + cap +
             "); further refusals are summarized at most every " + std::to_string(kRefusalLogInterval.count()) + " s";
    } else {
      const auto since = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_line_).count();
      line = "refused " + std::to_string(unlogged_) + " connections in the last " + std::to_string(since) +
             " ms (latest from " + std::string(peer) + "): handshakes pending at the cap (max_pending_handshakes " +
             cap + ")";
    }
    logged_once_ = true;
    last_line_ = now;
    unlogged_ = 0;
  }
  log_(LogLevel::kWarning, line);  // outside the lock: the sink may be slow
}

}  // namespace strata::rdma
