// TransportContext: what every backend and connection of one Transport
// shares: the options, the log, the nonce source, the lease pool, the cap
// on pending handshakes and the count of connection memory.
// Immutable after construction except through its own thread-safe members.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "handshake.h"
#include "handshake_admission.h"
#include "strata/rdma/buffer_pool.h"
#include "strata/rdma/log.h"
#include "strata/rdma/options.h"

namespace strata::rdma {

struct TransportContext {
  explicit TransportContext(TransportOptions opts)
      : options(std::move(opts)),
        sink(options.log ? options.log : StderrLogSink()),
        nonces(options.random_seed, options.random_bytes),
        lease_pool(options.max_message_size, options.lease_pool_buffers),
        admission(options.max_pending_handshakes, sink) {}

  void Log(LogLevel level, const std::string& line) const { sink(level, line); }

  // "Now" for protocol timers (options.clock, else the steady clock).
  std::chrono::steady_clock::time_point Now() const {
    return options.clock ? options.clock() : std::chrono::steady_clock::now();
  }

  // How often I/O threads run timers: fine enough for the shortest timeout.
  std::chrono::milliseconds TickInterval() const {
    auto t = std::min({options.keepalive_interval / 4, options.handshake_timeout / 4,
                       options.close_linger / 4, std::chrono::milliseconds(50)});
    return std::max(t, std::chrono::milliseconds(1));
  }

  const TransportOptions options;
  const LogSink sink;
  NonceSource nonces;
  BufferPool lease_pool;
  // Server-side connections between accept and authentication.
  HandshakeAdmission admission;
  // Bytes of memory the connections of this transport hold (buffers,
  // queues, the connection objects; not the kernel's socket buffers). Each
  // connection adds what it allocates and takes it back when destroyed
  // (ConnectionCore::Account); Transport::stats() reports it.
  std::atomic<int64_t> connection_bytes{0};
};

}  // namespace strata::rdma
