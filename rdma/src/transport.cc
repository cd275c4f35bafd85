// Transport: picks a backend per address scheme and owns the backends.
#include "strata/rdma/transport.h"

#include "backend.h"
#include "tcp/tcp_backend.h"
#include "transport_context.h"
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
  return Status::Ok();
}
}  // namespace

bool Transport::RdmaDeviceAvailable() { return RdmaDeviceCount() > 0; }

Transport::Transport(TransportOptions options) : options_(std::move(options)) {}

Transport::~Transport() {
  // Verbs first: its connections may still be reported through the log sink.
  verbs_.reset();
  tcp_.reset();
}

Result<std::unique_ptr<Transport>> Transport::Create(TransportOptions options) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  std::unique_ptr<Transport> t(new Transport(options));
  auto ctx = std::make_shared<TransportContext>(std::move(options));
  auto tcp = TcpBackend::Create(ctx);
  if (!tcp.ok()) return tcp.status();
  t->tcp_ = std::move(tcp).value();
  if (RdmaDeviceCount() > 0) {
    auto verbs = CreateVerbsBackend(ctx);
    if (verbs.ok()) {
      t->verbs_ = std::move(verbs).value();
    } else {
      ctx->Log(LogLevel::kWarning, "RDMA device present but the verbs backend failed to start: " + verbs.status().ToString());
    }
  }
  return t;
}

Result<detail::Backend*> Transport::BackendFor(Scheme scheme) {
  switch (scheme) {
    case Scheme::kTcp:
      return tcp_.get();
    case Scheme::kRdma:
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
  auto backend = BackendFor(ep->scheme);
  if (!backend.ok()) return backend.status();
  return backend.value()->Listen(ep.value(), std::move(on_accept));
}

Result<std::shared_ptr<Connection>> Transport::Connect(std::string_view address, ConnectionHandlers handlers) {
  auto ep = Endpoint::Parse(address);
  if (!ep.ok()) return ep.status();
  auto backend = BackendFor(ep->scheme);
  if (!backend.ok()) return backend.status();
  return backend.value()->Connect(ep.value(), std::move(handlers));
}

}  // namespace strata::rdma
