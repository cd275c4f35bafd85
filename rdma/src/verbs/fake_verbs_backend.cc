// FakeVerbsBackend and FakeVerbsFabric: see fake_verbs_backend.h and
// strata/rdma/fake_verbs_fabric.h.
#include "verbs/fake_verbs_backend.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <future>
#include <map>
#include <mutex>
#include <vector>

#include "verbs/fake_nic.h"
#include "verbs/verbs_connection.h"

namespace strata::rdma {

class FakeVerbsBackend;

namespace {

constexpr uint16_t kFirstFabricPort = 40000;

FakeNicOptions NicOptions(const FakeVerbsFabricOptions& o) {
  FakeNicOptions n;
  n.seed = o.seed;
  n.poison = o.poison;
  n.delay_probability = o.delay_probability;
  n.max_faults = o.faults.max_faults;
  using K = FakeFault::Kind;
  const std::pair<K, double> kinds[] = {
      {K::kPostSendFails, o.faults.post_send_fails}, {K::kPostRecvFails, o.faults.post_recv_fails},
      {K::kPollFails, o.faults.poll_fails},          {K::kRetryExceeded, o.faults.error_completion},
      {K::kRemoteAccessError, o.faults.remote_access_error}, {K::kQpError, o.faults.qp_error},
      {K::kDisconnect, o.faults.disconnect}};
  for (const auto& [kind, probability] : kinds) {
    if (probability <= 0) continue;
    FakeFault f;
    f.kind = kind;
    f.probability = probability;
    f.error = ENOMEM;  // what a provider returns when its queue or memory runs out
    n.faults.push_back(f);
  }
  return n;
}

// One listening port of the fabric.
struct ListenerEntry {
  std::mutex mu;  // held while a connection is handed to `backend`
  bool closed = false;
  FakeVerbsBackend* backend = nullptr;  // valid while !closed
  std::shared_ptr<TransportContext> ctx;  // the listener's options (queue depths)
  AcceptHandler on_accept;
  uint16_t port = 0;
};

}  // namespace

struct FakeVerbsFabric::Impl {
  explicit Impl(const FakeVerbsFabricOptions& o) : nic(NicOptions(o)), seed(o.seed) {
    nic.SetFaultsEnabled(o.faults.enabled);
  }

  FakeNic nic;
  const uint64_t seed;
  std::mutex mu;
  std::map<uint16_t, std::shared_ptr<ListenerEntry>> listeners;
  uint16_t next_port = kFirstFabricPort;
  std::atomic<uint64_t> connections{0};
};

std::shared_ptr<FakeVerbsFabric> FakeVerbsFabric::Create(FakeVerbsFabricOptions options) {
  return std::shared_ptr<FakeVerbsFabric>(new FakeVerbsFabric(std::make_unique<Impl>(options)));
}
FakeVerbsFabric::FakeVerbsFabric(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FakeVerbsFabric::~FakeVerbsFabric() = default;
std::vector<std::string> FakeVerbsFabric::violations() const { return impl_->nic.violations(); }
uint64_t FakeVerbsFabric::registered_bytes() const { return impl_->nic.stats().registered_bytes; }
uint64_t FakeVerbsFabric::seed() const { return impl_->seed; }
void FakeVerbsFabric::SetFaultsEnabled(bool enabled) { impl_->nic.SetFaultsEnabled(enabled); }

FakeVerbsFaultCounts FakeVerbsFabric::faults_fired() const {
  const auto by_kind = impl_->nic.stats().faults_by_kind;
  auto at = [&](FakeFault::Kind k) { return by_kind[static_cast<size_t>(k)]; };
  using K = FakeFault::Kind;
  FakeVerbsFaultCounts c;
  c.post_send_fails = at(K::kPostSendFails);
  c.post_recv_fails = at(K::kPostRecvFails);
  c.poll_fails = at(K::kPollFails);
  c.error_completion = at(K::kRetryExceeded);
  c.remote_access_error = at(K::kRemoteAccessError);
  c.qp_error = at(K::kQpError);
  c.disconnect = at(K::kDisconnect);
  return c;
}

std::string FakeVerbsFaultCounts::ToString() const {
  std::string out;
  auto add = [&](const char* name, uint64_t n) {
    if (n == 0) return;
    if (!out.empty()) out += ' ';
    out += std::string(name) + "=" + std::to_string(n);
  };
  add("post_send_fails", post_send_fails);
  add("post_recv_fails", post_recv_fails);
  add("poll_fails", poll_fails);
  add("error_completion", error_completion);
  add("remote_access_error", remote_access_error);
  add("qp_error", qp_error);
  add("disconnect", disconnect);
  return out.empty() ? "none" : out;
}

namespace {

class FakeVerbsListener final : public Listener {
 public:
  FakeVerbsListener(std::shared_ptr<FakeVerbsFabric> fabric, std::shared_ptr<ListenerEntry> entry, Endpoint ep)
      : fabric_(std::move(fabric)), entry_(std::move(entry)), endpoint_(std::move(ep)) {}
  ~FakeVerbsListener() override {
    {
      std::lock_guard lock(entry_->mu);  // waits for a hand-off in progress
      entry_->closed = true;
    }
    auto& f = fabric_->impl();
    std::lock_guard lock(f.mu);
    if (auto it = f.listeners.find(entry_->port); it != f.listeners.end() && it->second == entry_) f.listeners.erase(it);
  }
  Endpoint endpoint() const override { return endpoint_; }

 private:
  std::shared_ptr<FakeVerbsFabric> fabric_;
  std::shared_ptr<ListenerEntry> entry_;
  Endpoint endpoint_;
};

}  // namespace

class FakeVerbsBackend final : public detail::Backend {
 public:
  FakeVerbsBackend(std::shared_ptr<TransportContext> ctx, std::shared_ptr<FakeVerbsFabric> fabric)
      : ctx_(std::move(ctx)), fabric_(std::move(fabric)), picker_(std::max<uint32_t>(ctx_->options.io_threads, 1)) {}

  Status Init() {
    for (uint32_t i = 0; i < std::max<uint32_t>(ctx_->options.io_threads, 1); ++i) {
      shards_.push_back(std::make_unique<VerbsShard>(ctx_));
      if (Status s = shards_.back()->Start(); !s.ok()) return s;
    }
    return Status::Ok();
  }

  ~FakeVerbsBackend() override {
    // No connection may be handed to us from here on (listeners are
    // normally gone already: Transport's contract).
    std::vector<std::shared_ptr<ListenerEntry>> mine;
    {
      std::lock_guard lock(mu_);
      mine.swap(entries_);
    }
    for (auto& entry : mine) {
      {
        // The table's reference would keep our context (and through its
        // options the fabric) alive: drop it with the backend.
        std::lock_guard lock(entry->mu);
        entry->closed = true;
        entry->ctx.reset();
        entry->on_accept = nullptr;
      }
      auto& f = fabric_->impl();
      std::lock_guard lock(f.mu);
      if (auto it = f.listeners.find(entry->port); it != f.listeners.end() && it->second == entry) f.listeners.erase(it);
    }
    for (auto& shard : shards_) shard->Stop();
    shards_.clear();
  }

  Result<std::unique_ptr<Listener>> Listen(const Endpoint& ep, AcceptHandler on_accept) override {
    if (!on_accept) return InvalidArgument("Listen needs an accept handler");
    auto entry = std::make_shared<ListenerEntry>();
    entry->backend = this;
    entry->ctx = ctx_;
    entry->on_accept = std::move(on_accept);
    auto& f = fabric_->impl();
    {
      std::lock_guard lock(f.mu);
      uint16_t port = ep.port;
      if (port == 0) {
        while (f.listeners.count(f.next_port) != 0) ++f.next_port;
        port = f.next_port++;
      } else if (f.listeners.count(port) != 0) {
        return Unavailable("rdma_bind_addr failed: EADDRINUSE (fake fabric port " + std::to_string(port) + " is taken)");
      }
      entry->port = port;
      f.listeners[port] = entry;
    }
    {
      std::lock_guard lock(mu_);
      entries_.push_back(entry);
    }
    Endpoint bound = ep;
    bound.port = entry->port;
    return std::unique_ptr<Listener>(new FakeVerbsListener(fabric_, std::move(entry), std::move(bound)));
  }

  Result<std::shared_ptr<Connection>> Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                              detail::ConnectReport* report) override {
    const auto deadline = Clock::now() + ctx_->options.connect_timeout;
    auto& f = fabric_->impl();
    std::shared_ptr<ListenerEntry> entry;
    {
      std::lock_guard lock(f.mu);
      if (auto it = f.listeners.find(ep.port); it != f.listeners.end()) entry = it->second;
    }
    const std::string refused = "rdma_connect failed: RDMA_CM_EVENT_REJECTED: connection refused (nothing listens on fake fabric port " +
                                std::to_string(ep.port) + ")";
    if (!entry) return Unavailable(refused);
    const uint64_t number = ++f.connections;
    // Both ends' receive queues as verbs_backend.cc sizes each from its own options.
    uint32_t depth = VerbsConnection::RecvQueueDepth(ctx_->options);
    {
      std::lock_guard lock(entry->mu);
      if (entry->closed) return Unavailable(refused);
      depth = std::max(depth, VerbsConnection::RecvQueueDepth(entry->ctx->options));
    }
    auto [client_qp, server_qp] = f.nic.CreatePair(VerbsConnection::kSendQueueDepth, depth);
    auto conn = std::make_shared<VerbsConnection>(ctx_, Role::kClient, ep.host + ":" + std::to_string(ep.port),
                                                  std::move(client_qp), NextShard());
    if (Status s = conn->Init(); !s.ok()) return s;
    {
      std::lock_guard lock(entry->mu);
      if (entry->closed) return Unavailable(refused);
      if (Status s = entry->backend->Accept(std::move(server_qp), "fake-client-" + std::to_string(number), entry->on_accept);
          !s.ok())
        return s;
    }
    // The link is up: what fails from here on is not a setup failure.
    if (report != nullptr) report->link_established = true;
    conn->SetHandlers(std::move(handlers));
    auto established = std::make_shared<std::promise<Status>>();
    auto result = established->get_future();
    conn->SetEstablishedCallback([established](const Status& st) { established->set_value(st); });
    VerbsShard* shard = conn->shard();
    shard->loop().Post([shard, conn] { shard->Adopt(conn); });
    if (result.wait_until(deadline) != std::future_status::ready) {
      conn->Fail(Timeout("handshake with " + ep.ToString() + " did not complete within " +
                         std::to_string(ctx_->options.connect_timeout.count()) + " ms"));
    }
    if (Status st = result.get(); !st.ok()) return st;
    return std::shared_ptr<Connection>(conn);
  }

  // The listening side of Connect (under the listener entry's mutex): what
  // the rdma_cm CONNECT_REQUEST handler does, on the caller's thread.
  Status Accept(std::unique_ptr<QueuePair> qp, const std::string& peer, const AcceptHandler& on_accept) {
    auto slot = ctx_->admission.TryAdmit(peer, ctx_->Now());
    if (!slot) return Unavailable("rdma_connect failed: RDMA_CM_EVENT_REJECTED (the server is over its cap of pending handshakes)");
    auto conn = std::make_shared<VerbsConnection>(ctx_, Role::kServer, peer, std::move(qp), NextShard());
    if (Status s = conn->Init(); !s.ok()) {
      ctx_->Log(LogLevel::kWarning, "refusing fake RDMA connect request: " + s.ToString());
      return Unavailable("rdma_connect failed: RDMA_CM_EVENT_REJECTED (" + s.ToString() + ")");
    }
    conn->AdoptHandshakeSlot(std::move(*slot));
    conn->SetAcceptHandler(on_accept);
    VerbsShard* shard = conn->shard();
    shard->loop().Post([shard, conn] { shard->Adopt(conn); });
    return Status::Ok();
  }

 private:
  VerbsShard* NextShard() { return shards_[picker_.Next()].get(); }

  std::shared_ptr<TransportContext> ctx_;
  std::shared_ptr<FakeVerbsFabric> fabric_;
  std::vector<std::unique_ptr<VerbsShard>> shards_;
  ShardPicker picker_;
  std::mutex mu_;
  std::vector<std::shared_ptr<ListenerEntry>> entries_;
};

Result<std::unique_ptr<detail::Backend>> CreateFakeVerbsBackend(std::shared_ptr<TransportContext> ctx,
                                                                std::shared_ptr<FakeVerbsFabric> fabric) {
  if (!fabric) return InvalidArgument("no fake verbs fabric");
  auto backend = std::make_unique<FakeVerbsBackend>(std::move(ctx), std::move(fabric));
  if (Status s = backend->Init(); !s.ok()) return s;
  return std::unique_ptr<detail::Backend>(std::move(backend));
}

}  // namespace strata::rdma
