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
#include <memory>
#include <span>
#include <string>

#include "strata/rdma/log.h"

namespace strata::rdma {

class FakeVerbsFabric;  // strata/rdma/fake_verbs_fabric.h (tests only)

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

  // --- Unauthenticated peers (see README "Security") ---
  // Server side: how many accepted connections (TCP accepts and RDMA
  // connect requests, over all listeners of this Transport) may be in the
  // handshake at once. Beyond it a new one is refused at once: TCP gets a
  // REFUSE frame ("server busy") and is closed, an RDMA connect request is
  // rejected; the refusals are logged at most one line per 10 s. Each
  // admitted one holds its place until it authenticates or fails, at the
  // latest after handshake_timeout, and costs a few KiB until it has
  // authenticated (the full per-connection buffers come only after that).
  // A client refused this way gets kUnavailable and may retry.
  uint32_t max_pending_handshakes = 64;

  // --- Threads and polling ---
  // I/O threads per backend; connections are spread round-robin.
  uint32_t io_threads = 1;
  // Busy-poll this long before sleeping in epoll_wait / the verbs completion
  // channel (adaptive: the spin restarts after each event). 0 = never spin.
  std::chrono::microseconds busy_poll{0};
  // TCP: an I/O thread that serves exactly one socket, after handling input,
  // waits for that socket's next bytes in a blocking recv() before going
  // back to epoll_wait. A reply that arrives meanwhile costs one syscall and
  // one wake-up instead of epoll_wait + recv (the request/response case; on
  // our VMs epoll alone costs ~20% of a small loopback round trip). The wait
  // is SO_RCVTIMEO = 1 ms, which the kernel rounds up to whole scheduler
  // ticks (10 ms at HZ=100). Adaptive: a read that times out makes the
  // connection skip the next 1, 2, 4 ... 64 chances to block (a hit resets
  // it), so one that is not in a request/response rhythm rarely blocks.
  // Price, while a read blocks: tasks posted to the thread (connection
  // set-up and teardown) and write readiness wait for it to return (other
  // fds on the thread, e.g. a listener, are still polled every 1 ms while
  // reads keep succeeding). Large sends never wait for it: a Send that
  // finds the socket full pushes its bytes itself. Loops with several
  // sockets never block so. On by default (measurements: bench/results-*).
  bool low_latency_reads = true;

  // --- Time ---
  // The clock behind every protocol timer: keepalive (PING after
  // keepalive_interval, kTimeout after keepalive_timeout), the handshake and
  // connect deadlines and close_linger. Empty: std::chrono::steady_clock.
  // Tests install a manual clock and advance it to fire (or withhold) those
  // timeouts without sleeping. Must be monotonic and thread-safe. The I/O
  // threads still wake every few ms of real time to consult it; Send's
  // `wait` and Connect's blocking are bounded in real time.
  std::function<std::chrono::steady_clock::time_point()> clock;

  // --- Randomness ---
  // 0: nonces come from random_bytes (production). Non-zero: from a PRNG
  // seeded with this value, so a failing test reproduces exactly.
  uint64_t random_seed = 0;
  // The OS random source behind handshake nonces: fills its argument and
  // returns true, or returns false when it cannot. Empty: OpenSSL's
  // RAND_bytes. When it fails, the handshake fails closed (the connection
  // is refused with kIoError naming the random source); there is no weaker
  // fallback. Tests inject a failing source. Must be thread-safe.
  std::function<bool(std::span<std::byte>)> random_bytes;

  // --- Observability ---
  LogSink log;  // empty: StderrLogSink()

  // --- Tests only ---
  // Non-null: this Transport's verbs backend is the in-process fake NIC of
  // this fabric (no device is probed, libibverbs is not used), shared with
  // every other Transport given the same fabric; rdma:// and auto:// run
  // the verbs engine over it. Only tests set it (they create the fabric);
  // nothing reads it from a configuration, and Create() logs a warning when
  // it is set, so a production log would show it.
  std::shared_ptr<FakeVerbsFabric> fake_verbs_for_tests;
};

}  // namespace strata::rdma
