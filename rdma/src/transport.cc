// Transport: picks a backend per address scheme and owns the backends.
#include "strata/rdma/transport.h"

#include <algorithm>

#include "backend.h"
#include "tcp/tcp_backend.h"
#include "transport_context.h"
#include "transport_internal.h"
#include "verbs/fake_verbs_backend.h"
#include "verbs/verbs_backend.h"
#include "verbs/verbs_device.h"

namespace strata::rdma {

namespace {
Status ValidateOptions(const TransportOptions& o) {
  if (o.secret.empty()) return InvalidArgument("TransportOptions::secret must not be empty");
  if (o.cluster_id.empty() || o.cluster_id.size() > wire::kClusterIdSize)
    return InvalidArgument("TransportOptions::cluster_id must be 1.." + std::to_string(wire::kClusterIdSize) + " bytes");
  if (o.max_message_size == 0 || o.max_message_size > wire::kMaxMessageLimit)
    return InvalidArgument("TransportOptions::max_message_size must be 1.." + std::to_string(wire::kMaxMessageLimit));
  if (o.receive_credits == 0 || o.receive_credits > (1u << 16)) return InvalidArgument("TransportOptions::receive_credits must be 1..65536");
  if (o.keepalive_interval.count() <= 0 || o.keepalive_timeout <= o.keepalive_interval)
    return InvalidArgument("keepalive_timeout must exceed keepalive_interval > 0");
  if (o.max_pending_handshakes == 0) return InvalidArgument("TransportOptions::max_pending_handshakes must be at least 1");
  if (o.handshake_timeout.count() <= 0) return InvalidArgument("TransportOptions::handshake_timeout must be positive");
  return Status::Ok();
}
}  // namespace

bool Transport::RdmaDeviceAvailable() { return RdmaDeviceCount() > 0; }

Transport::Transport(TransportOptions options) : options_(std::move(options)) {}

TransportStats Transport::stats() const {
  TransportStats s;
  s.pending_handshakes = ctx_->admission.pending();
  s.refused_handshakes = ctx_->admission.refused();
  s.connection_memory_bytes = static_cast<uint64_t>(std::max<int64_t>(ctx_->connection_bytes.load(), 0));
  return s;
}

Transport::~Transport() {
  // Verbs first: its connections may still be reported through the log sink.
  verbs_.reset();
  tcp_.reset();
}

Result<std::unique_ptr<Transport>> Transport::Create(TransportOptions options) {
  return detail::TransportFactory::Create(std::move(options), {});
}

Result<std::unique_ptr<Transport>> detail::TransportFactory::Create(TransportOptions options, TransportHooks hooks) {
  if (!hooks.device_count) hooks.device_count = RdmaDeviceCount;
  if (!hooks.create_verbs) hooks.create_verbs = CreateVerbsBackend;
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  std::unique_ptr<Transport> t(new Transport(options));
  auto ctx = std::make_shared<TransportContext>(std::move(options));
  auto tcp = TcpBackend::Create(ctx);
  if (!tcp.ok()) return tcp.status();
  t->tcp_ = std::move(tcp).value();
  t->ctx_ = ctx;
  if (ctx->options.fake_verbs_for_tests) {
    // Tests only (options.h): never probes a device, never falls back.
    ctx->Log(LogLevel::kWarning,
             "rdma:// and auto:// run on an in-process fake NIC (TransportOptions::fake_verbs_for_tests, fabric seed " +
                 std::to_string(ctx->options.fake_verbs_for_tests->seed()) + "): for tests only");
    auto verbs = CreateFakeVerbsBackend(ctx, ctx->options.fake_verbs_for_tests);
    if (!verbs.ok()) return verbs.status();
    t->verbs_ = std::move(verbs).value();
  } else if (hooks.device_count() > 0) {
    auto verbs = hooks.create_verbs(ctx);
    if (verbs.ok()) {
      t->verbs_ = std::move(verbs).value();
    } else {
      t->verbs_failed_ = verbs.status();
      t->NoteFallback(": an RDMA device is present but the verbs backend failed to start: " + verbs.status().ToString());
    }
  }
  return t;
}

void Transport::NoteFallback(const std::string& what) {
  const bool first = !fallback_logged_.exchange(true);
  ctx_->Log(first ? LogLevel::kWarning : LogLevel::kDebug,
            "auto:// falls back to TCP" + what + (first ? " (further fallbacks are logged at debug level)" : ""));
}

namespace {
// auto:// with both backends: accepts over verbs and over TCP on one port.
class DualListener final : public Listener {
 public:
  DualListener(std::unique_ptr<Listener> verbs, std::unique_ptr<Listener> tcp)
      : verbs_(std::move(verbs)), tcp_(std::move(tcp)) {}
  Endpoint endpoint() const override {
    Endpoint ep = tcp_->endpoint();
    ep.scheme = Scheme::kAuto;
    return ep;
  }

 private:
  std::unique_ptr<Listener> verbs_;
  std::unique_ptr<Listener> tcp_;
};
}  // namespace

Result<detail::Backend*> Transport::BackendFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kTcp:
      return tcp_.get();
    case Scheme::kRdma:
      if (!verbs_ && !verbs_failed_.ok())
        return Unavailable("rdma:// requested but the verbs backend failed to start: " + verbs_failed_.ToString());
      if (!verbs_) return Unavailable("rdma:// requested but no usable RDMA device (ibv_get_device_list found none)");
      return verbs_.get();
    case Scheme::kAuto:
      return verbs_ ? verbs_.get() : tcp_.get();
  }
  return InvalidArgument("unknown scheme");
}

Result<std::unique_ptr<Listener>> Transport::Listen(std::string_view address, AcceptHandler on_accept) {
  auto ep = Endpoint::Parse(address);
  if (!ep.ok()) return ep.status();
  if (ep->scheme == Scheme::kAuto && verbs_) {
    auto tcp = tcp_->Listen(ep.value(), on_accept);
    if (!tcp.ok()) return tcp.status();
    Endpoint same_port = ep.value();
    same_port.port = tcp.value()->endpoint().port;
    auto verbs = verbs_->Listen(same_port, std::move(on_accept));
    if (!verbs.ok()) {
      NoteFallback(" for the listener on " + same_port.ToString() + " (TCP only): an RDMA device is present but verbs setup failed: " +
                   verbs.status().ToString());
      return tcp;
    }
    return std::unique_ptr<Listener>(new DualListener(std::move(verbs).value(), std::move(tcp).value()));
  }
  auto backend = BackendFor(ep->scheme);
  if (!backend.ok()) return backend.status();
  return backend.value()->Listen(ep.value(), std::move(on_accept));
}

Result<std::shared_ptr<Connection>> Transport::Connect(std::string_view address, ConnectionHandlers handlers) {
  auto ep = Endpoint::Parse(address);
  if (!ep.ok()) return ep.status();
  if (ep->scheme == Scheme::kAuto && verbs_) {
    detail::ConnectReport report;
    auto c = verbs_->Connect(ep.value(), handlers, &report);
    if (c.ok() || report.link_established) return c;
    NoteFallback(" for " + ep->ToString() + ": an RDMA device is present but verbs setup failed: " + c.status().ToString());
    return tcp_->Connect(ep.value(), std::move(handlers));
  }
  auto backend = BackendFor(ep->scheme);
  if (!backend.ok()) return backend.status();
  return backend.value()->Connect(ep.value(), std::move(handlers));
}

}  // namespace strata::rdma
