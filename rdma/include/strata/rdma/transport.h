// Transport: the entry point. Owns the backends (TCP always, verbs when a
// device exists), their I/O threads, and every connection made through it.
//
//   auto t = Transport::Create(options);                 // once per process role
//   auto l = t.value()->Listen("tcp://0.0.0.0:7000", on_accept);
//   auto c = t.value()->Connect("auto://10.0.0.5:7000", handlers);
//   c.value()->Send(bytes, on_done);
//
// auto:// tries verbs when an RDMA device is present and falls back to TCP
// when verbs setup fails there: the verbs backend does not start, a verbs
// listener cannot be set up (Listen then listens on TCP only), or a Connect
// fails before its RDMA link is up (address/route resolution, queue pair,
// rdma_connect rejected: the peer may listen on TCP only). A failure after
// the link came up (handshake, authentication) is returned as is. With both
// backends usable, an auto:// Listen listens on verbs and on TCP (same
// port), so peers without RDMA reach it too. The first fallback is logged
// once as a warning with its reason; later ones at debug level.
//
// Thread-safety: Listen and Connect may be called from any thread. Connect
// blocks the caller until the handshake succeeds, fails, or connect_timeout
// passes. The destructor closes every listener and connection (on_close gets
// kAborted), then joins the I/O threads: do not destroy a Transport from
// inside one of its callbacks.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "strata/rdma/connection.h"
#include "strata/rdma/endpoint.h"
#include "strata/rdma/options.h"
#include "strata/rdma/status.h"

namespace strata::rdma {

// Runs on the I/O thread once a peer has passed the handshake, before any of
// its messages is delivered; returns the handlers for that connection.
using AcceptHandler = std::function<ConnectionHandlers(const std::shared_ptr<Connection>&)>;

// Accepting stops when the Listener is destroyed; accepted connections live on.
class Listener {
 public:
  virtual ~Listener() = default;
  // The bound address, with the real port when 0 was asked for.
  virtual Endpoint endpoint() const = 0;
};

// What a Transport holds right now (Transport::stats()).
struct TransportStats {
  // Server-side connections accepted but not yet authenticated, and how
  // many were refused because max_pending_handshakes of them were pending.
  uint32_t pending_handshakes = 0;
  uint64_t refused_handshakes = 0;
  // Memory the transport's connections hold: their buffers, queues and
  // connection objects (not the kernel's socket buffers, nor the
  // transport-wide lease pool).
  uint64_t connection_memory_bytes = 0;
};

struct TransportContext;

namespace detail {
class Backend;
struct TransportFactory;  // src/transport_internal.h (tests replace the device probe)
}

class Transport {
 public:
  static Result<std::unique_ptr<Transport>> Create(TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  Result<std::unique_ptr<Listener>> Listen(std::string_view address, AcceptHandler on_accept);
  Result<std::shared_ptr<Connection>> Connect(std::string_view address, ConnectionHandlers handlers);

  // True when libibverbs sees at least one RDMA device (what "auto" uses).
  static bool RdmaDeviceAvailable();

  // Thread-safe snapshot.
  TransportStats stats() const;

 private:
  friend struct detail::TransportFactory;
  explicit Transport(TransportOptions options);
  Result<detail::Backend*> BackendFor(Scheme scheme);
  // Logs an auto:// fallback to TCP: the first at kWarning, later ones at kDebug.
  void NoteFallback(const std::string& what);

  TransportOptions options_;
  std::shared_ptr<TransportContext> ctx_;
  std::unique_ptr<detail::Backend> tcp_;
  std::unique_ptr<detail::Backend> verbs_;
  Status verbs_failed_;  // why verbs_ is null although a device is present
  std::atomic<bool> fallback_logged_{false};
};

}  // namespace strata::rdma
