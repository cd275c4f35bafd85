// TransportOptions: everything a Transport is configured with, in one place.
//
// Both sides of a connection must agree on cluster_id and secret; the other
// limits are advertised in the handshake and each side honours the peer's.
// Memory per connection is bounded by these numbers (see README "Memory").
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "strata/rdma/log.h"

namespace strata::rdma {

struct TransportOptions {
  // --- Authentication (handshake) ---
  // Peers with a different cluster id are refused (at most 64 bytes).
  std::string cluster_id = "strata";
  // Shared secret for HMAC-SHA256 challenge/response. Must be non-empty.
  std::string secret;

  // --- Message limits and memory ---
  // Largest payload of an ordinary message (Send). Larger ones go via SendBulk.
  uint32_t max_message_size = 64 * 1024;
  // Receive credits granted to the peer: how many messages (ordinary or bulk)
  // it may have in flight towards us before we have consumed them.
  uint32_t receive_credits = 64;
  // Bytes of the per-connection send buffer that holds frames not yet on the
  // wire (frames waiting for credit or socket space). Send() returns kBusy
  // when it is full: this is what bounds a sender's memory when the receiver
  // stalls. Must hold at least one maximal frame.
  uint32_t send_buffer_size = 512 * 1024;
  // Bytes of the bulk receive ring (peer RDMA-WRITEs land here); 0 disables
  // bulk for this side. The sender's staging ring is min(ours, peer's).
  uint32_t bulk_ring_size = 4 * 1024 * 1024;
  // Buffers of max_message_size in the transport-wide lease pool (used when a
  // receive handler retains a message). Exhausting it falls back to the heap.
  uint32_t lease_pool_buffers = 64;

  // --- Liveness ---
  std::chrono::milliseconds connect_timeout{5000};    // connect + handshake
  std::chrono::milliseconds handshake_timeout{5000};  // server side
  // A PING is sent when nothing was sent for keepalive_interval; the
  // connection fails with kTimeout when nothing arrived for keepalive_timeout.
  std::chrono::milliseconds keepalive_interval{1000};
  std::chrono::milliseconds keepalive_timeout{5000};
  // Close(): how long queued messages may take to drain before they are aborted.
  std::chrono::milliseconds close_linger{2000};

  // --- Threads and polling ---
  // I/O threads per backend; connections are spread round-robin.
  uint32_t io_threads = 1;
  // Busy-poll this long before sleeping in epoll_wait / the verbs completion
  // channel (adaptive: the spin restarts after each event). 0 = never spin.
  std::chrono::microseconds busy_poll{0};
  // TCP: an I/O thread that serves exactly one socket, after handling input,
  // waits for that socket's next bytes in a blocking recv() (up to 1 ms)
  // before going back to epoll_wait. A reply that arrives within the 1 ms
  // then costs one syscall instead of epoll_wait + recv (the ping-pong case;
  // on our VMs epoll alone costs ~20% of a loopback round trip). Price:
  // while it waits, tasks posted to the thread and write-readiness are
  // noticed up to 1 ms late (other fds on the thread, e.g. a listener, are
  // polled at least every 1 ms). Loops with several sockets never block so.
  bool low_latency_reads = false;

  // --- Time ---
  // The clock behind every protocol timer: keepalive (PING after
  // keepalive_interval, kTimeout after keepalive_timeout), the handshake and
  // connect deadlines and close_linger. Empty: std::chrono::steady_clock.
  // Tests install a manual clock and advance it to fire (or withhold) those
  // timeouts without sleeping. Must be monotonic and thread-safe. The I/O
  // threads still wake every few ms of real time to consult it; Send's
  // `wait` and Connect's blocking are bounded in real time.
  std::function<std::chrono::steady_clock::time_point()> clock;

  // --- Determinism ---
  // 0: nonces come from OpenSSL's CSPRNG (production). Non-zero: from a
  // PRNG seeded with this value, so a failing test reproduces exactly.
  uint64_t random_seed = 0;

  // --- Observability ---
  LogSink log;  // empty: StderrLogSink()
};

}  // namespace strata::rdma
