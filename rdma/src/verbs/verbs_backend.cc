// VerbsBackend: connection setup with librdmacm; the per-message path lives
// in VerbsConnection.
//
// Threads: one CM thread (an EventLoop watching the rdma_cm event channel)
// handles connect requests, establishment and disconnects for listeners and
// established connections; io_threads VerbsShards poll completions. Connect
// runs its address/route resolution and rdma_connect synchronously on the
// caller's thread with a private event channel, then migrates the id to the
// shared channel. Setup steps are undone in reverse order on failure, and
// every failing call is named in the Status.
#include "verbs/verbs_backend.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <sys/epoll.h>

#include <cerrno>
#include <fcntl.h>
#include <future>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "verbs/ibv_queue_pair.h"
#include "verbs/verbs_connection.h"
#include "verbs/verbs_status.h"

namespace strata::rdma {
namespace {

constexpr int kResolveTimeoutMs = 2000;

rdma_conn_param ConnParam() {
  rdma_conn_param p{};
  p.retry_count = 7;
  p.rnr_retry_count = 7;  // 7 = retry forever; credits make RNR rare anyway
  return p;
}

// "<call> failed: ENODEV (No such device)", with ErrnoStatus's code.
Status CmError(const char* call) {
  const int err = errno;
  return Status(ErrnoStatus(call, err).code(), VerbError(call, err).message());
}

std::string PeerName(rdma_cm_id* id) {
  const sockaddr* sa = rdma_get_peer_addr(id);
  char host[INET6_ADDRSTRLEN] = "?";
  if (sa->sa_family == AF_INET) ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, host, sizeof host);
  if (sa->sa_family == AF_INET6) ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(rdma_get_dst_port(id)));
}

// Waits on a private channel for the event that follows a resolve/connect step.
Status WaitCmEvent(rdma_event_channel* ch, rdma_cm_event_type want, const char* step, Clock::time_point deadline) {
  pollfd pfd{ch->fd, POLLIN, 0};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  const int ready = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left, 0)));
  if (ready == 0) return Timeout(std::string(step) + " timed out");
  if (ready < 0) return ErrnoStatus("poll(rdma_cm channel)", errno);
  rdma_cm_event* ev = nullptr;
  if (rdma_get_cm_event(ch, &ev) != 0) return CmError("rdma_get_cm_event");
  const rdma_cm_event_type got = ev->event;
  const int status = ev->status;
  rdma_ack_cm_event(ev);
  if (got != want)
    return Unavailable(std::string(step) + " failed: " + rdma_event_str(got) + " (status " + std::to_string(status) + ")");
  return Status::Ok();
}

}  // namespace

class VerbsBackend;

struct VerbsListenerState {
  rdma_cm_id* id = nullptr;
  AcceptHandler on_accept;
  Endpoint endpoint;
  bool closed = false;
};

class VerbsBackend final : public detail::Backend, public IoHandler {
 public:
  explicit VerbsBackend(std::shared_ptr<TransportContext> ctx)
      : ctx_(std::move(ctx)),
        cm_loop_(ctx_->TickInterval(), {}),
        shard_picker_(std::max<uint32_t>(ctx_->options.io_threads, 1)) {}  // Init starts that many shards

  Status Init() {
    channel_ = rdma_create_event_channel();
    if (channel_ == nullptr) return CmError("rdma_create_event_channel");
    const int flags = ::fcntl(channel_->fd, F_GETFL);
    if (::fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) return ErrnoStatus("fcntl(rdma_cm channel)", errno);
    for (uint32_t i = 0; i < std::max<uint32_t>(ctx_->options.io_threads, 1); ++i) {
      shards_.push_back(std::make_unique<VerbsShard>(ctx_));
      if (Status s = shards_.back()->Start(); !s.ok()) return s;
    }
    if (Status s = cm_loop_.Start([this](Clock::time_point) { ExpireUnestablished(); }, {}); !s.ok()) return s;
    Status watched;
    cm_loop_.RunSync([&] { watched = cm_loop_.Watch(channel_->fd, EPOLLIN, this); });
    return watched;
  }

  ~VerbsBackend() override {
    cm_loop_.RunSync([this] {
      for (auto& [id, state] : listeners_) rdma_destroy_id(id);
      listeners_.clear();
      cm_loop_.Unwatch(channel_ ? channel_->fd : -1);
    });
    for (auto& shard : shards_) shard->Stop();
    shards_.clear();  // drops connections: their ids are destroyed here
    cm_loop_.Stop();
    if (channel_ != nullptr) rdma_destroy_event_channel(channel_);
  }

  Result<std::unique_ptr<Listener>> Listen(const Endpoint& ep, AcceptHandler on_accept) override;
  Result<std::shared_ptr<Connection>> Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                              detail::ConnectReport* report = nullptr) override;

  // CM thread: drain the shared event channel.
  void OnIoEvent(uint32_t) override {
    for (;;) {
      rdma_cm_event* ev = nullptr;
      if (rdma_get_cm_event(channel_, &ev) != 0) {
        // EAGAIN: drained. Anything else leaves CM events (disconnects,
        // connect requests) unread: say so, once.
        if (errno != EAGAIN && !cm_error_logged_) {
          cm_error_logged_ = true;
          ctx_->Log(LogLevel::kError, CmError("rdma_get_cm_event").ToString());
        }
        return;
      }
      std::shared_ptr<VerbsConnection> hold;  // released only after the ack
      rdma_cm_id* destroy = nullptr;          // rdma_destroy_id waits for acks
      HandleCmEvent(ev, hold, destroy);
      rdma_ack_cm_event(ev);
      hold.reset();
      if (destroy != nullptr) rdma_destroy_id(destroy);
    }
  }

  void CloseListener(VerbsListenerState* state) {
    cm_loop_.RunSync([&] {
      if (state->closed) return;
      state->closed = true;
      listeners_.erase(state->id);
      rdma_destroy_id(state->id);
    });
  }

 private:
  // CM thread and Connect callers concurrently (ShardPicker is atomic).
  VerbsShard* NextShard() { return shards_[shard_picker_.Next()].get(); }

  // CM thread tick. The handshake deadline starts once a connection is
  // established; a peer that sends a connect request and never completes
  // it would keep its queue pair and its place among the pending
  // handshakes (max_pending_handshakes) forever without this.
  void ExpireUnestablished() {
    std::vector<std::shared_ptr<VerbsConnection>> expired;
    const auto now = ctx_->Now();
    {
      std::lock_guard lock(mu_);
      for (auto it = pending_.begin(); it != pending_.end();) {
        if (now <= it->second.deadline) {
          ++it;
          continue;
        }
        expired.push_back(std::move(it->second.conn));
        it = pending_.erase(it);
      }
    }
    for (auto& conn : expired) {
      conn->Fail(Timeout("RDMA connection accepted but not established within handshake_timeout (" +
                         std::to_string(ctx_->options.handshake_timeout.count()) + " ms)"));
    }
  }

  Result<std::shared_ptr<VerbsConnection>> MakeConnection(rdma_cm_id* id, Role role, std::string peer) {
    const auto& o = ctx_->options;
    auto qp = IbvQueuePair::Create(id, VerbsConnection::kSendQueueDepth,
                                   std::max<uint32_t>(o.receive_credits, 1) + VerbsConnection::kControlReserve);
    if (!qp.ok()) return qp.status();
    VerbsShard* shard = NextShard();
    auto conn = std::make_shared<VerbsConnection>(ctx_, role, std::move(peer), std::move(qp).value(), shard);
    if (Status s = conn->Init(); !s.ok()) return s;
    conn->set_on_finalized([this, id] {
      std::lock_guard lock(mu_);
      by_id_.erase(id);
    });
    return conn;
  }

  void HandleCmEvent(rdma_cm_event* ev, std::shared_ptr<VerbsConnection>& hold, rdma_cm_id*& destroy) {
    switch (ev->event) {
      case RDMA_CM_EVENT_CONNECT_REQUEST: {
        auto it = listeners_.find(ev->listen_id);
        if (it == listeners_.end()) {
          rdma_reject(ev->id, nullptr, 0);
          destroy = ev->id;
          return;
        }
        // Over the cap of pending handshakes: reject before a queue pair
        // or any memory exists for the peer (logged, rate-limited).
        auto slot = ctx_->admission.TryAdmit(PeerName(ev->id), ctx_->Now());
        if (!slot) {
          rdma_reject(ev->id, nullptr, 0);
          destroy = ev->id;
          return;
        }
        auto conn = MakeConnection(ev->id, Role::kServer, PeerName(ev->id));
        if (!conn.ok()) {
          ctx_->Log(LogLevel::kWarning, "refusing RDMA connect request: " + conn.status().ToString());
          rdma_reject(ev->id, nullptr, 0);
          destroy = ev->id;  // Create() handed the id back on failure
          return;
        }
        conn.value()->AdoptHandshakeSlot(std::move(*slot));
        conn.value()->SetAcceptHandler(it->second->on_accept);
        rdma_conn_param param = ConnParam();
        if (rdma_accept(ev->id, &param) != 0) {
          ctx_->Log(LogLevel::kWarning, CmError("rdma_accept").ToString());
          hold = std::move(conn).value();  // freed (with its id) after the ack
          return;
        }
        std::lock_guard lock(mu_);
        by_id_[ev->id] = conn.value();
        pending_[ev->id] = {conn.value(), ctx_->Now() + ctx_->options.handshake_timeout};
        return;
      }
      case RDMA_CM_EVENT_ESTABLISHED: {
        std::shared_ptr<VerbsConnection> conn;
        {
          std::lock_guard lock(mu_);
          auto it = pending_.find(ev->id);
          if (it == pending_.end()) return;
          conn = std::move(it->second.conn);
          pending_.erase(it);
        }
        VerbsShard* shard = conn->shard();
        shard->loop().Post([shard, conn] { shard->Adopt(conn); });
        return;
      }
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_REJECTED:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_DEVICE_REMOVAL: {
        {
          std::lock_guard lock(mu_);
          if (auto it = pending_.find(ev->id); it != pending_.end()) {
            hold = std::move(it->second.conn);
            pending_.erase(it);
          } else if (auto weak = by_id_.find(ev->id); weak != by_id_.end()) {
            hold = weak->second.lock();
          }
        }
        if (hold) {
          const Status why = ev->event == RDMA_CM_EVENT_DISCONNECTED
                                 ? Closed("connection lost: peer disconnected (RDMA_CM_EVENT_DISCONNECTED)")
                                 : IoError(std::string("rdma_cm reported ") + rdma_event_str(ev->event) + " (status " +
                                           std::to_string(ev->status) + ")");
          hold->Fail(why);
        }
        return;
      }
      default:
        return;  // TIMEWAIT_EXIT, ADDR_CHANGE, ...: nothing to do
    }
  }

  std::shared_ptr<TransportContext> ctx_;
  EventLoop cm_loop_;
  rdma_event_channel* channel_ = nullptr;
  std::vector<std::unique_ptr<VerbsShard>> shards_;
  ShardPicker shard_picker_;
  bool cm_error_logged_ = false;  // CM thread
  std::unordered_map<rdma_cm_id*, VerbsListenerState*> listeners_;  // CM thread
  std::mutex mu_;
  std::unordered_map<rdma_cm_id*, std::weak_ptr<VerbsConnection>> by_id_;
  // Accepted, not established; failed by ExpireUnestablished at `deadline`.
  struct Unestablished {
    std::shared_ptr<VerbsConnection> conn;
    Clock::time_point deadline;  // TransportContext::Now() clock
  };
  std::unordered_map<rdma_cm_id*, Unestablished> pending_;
  friend class VerbsListener;
};

class VerbsListener final : public Listener {
 public:
  VerbsListener(VerbsBackend* backend, std::unique_ptr<VerbsListenerState> state)
      : backend_(backend), state_(std::move(state)) {}
  ~VerbsListener() override { backend_->CloseListener(state_.get()); }
  Endpoint endpoint() const override { return state_->endpoint; }

 private:
  VerbsBackend* backend_;
  std::unique_ptr<VerbsListenerState> state_;
};

Result<std::unique_ptr<Listener>> VerbsBackend::Listen(const Endpoint& ep, AcceptHandler on_accept) {
  if (!on_accept) return InvalidArgument("Listen needs an accept handler");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(ep.port);
  if (int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &list); rc != 0)
    return Unavailable("getaddrinfo(" + ep.host + ") failed: " + ::gai_strerror(rc));
  auto state = std::make_unique<VerbsListenerState>();
  state->on_accept = std::move(on_accept);
  state->endpoint = ep;
  Status result;
  cm_loop_.RunSync([&] {
    if (rdma_create_id(channel_, &state->id, state.get(), RDMA_PS_TCP) != 0) {
      result = CmError("rdma_create_id");
      return;
    }
    if (rdma_bind_addr(state->id, list->ai_addr) != 0) {
      result = CmError("rdma_bind_addr");
    } else if (rdma_listen(state->id, 128) != 0) {
      result = CmError("rdma_listen");
    }
    if (!result.ok()) {
      rdma_destroy_id(state->id);
      return;
    }
    state->endpoint.port = ntohs(rdma_get_src_port(state->id));
    listeners_[state->id] = state.get();
  });
  ::freeaddrinfo(list);
  if (!result.ok()) return result;
  return std::unique_ptr<Listener>(new VerbsListener(this, std::move(state)));
}

Result<std::shared_ptr<Connection>> VerbsBackend::Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                                          detail::ConnectReport* report) {
  const auto deadline = Clock::now() + ctx_->options.connect_timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  const std::string port = std::to_string(ep.port);
  if (int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, &list); rc != 0)
    return Unavailable("getaddrinfo(" + ep.host + ") failed: " + ::gai_strerror(rc));
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) {
    ::freeaddrinfo(list);
    return CmError("rdma_create_event_channel");
  }
  rdma_cm_id* id = nullptr;     // ours until a queue pair owns it
  rdma_cm_id* cm_id = nullptr;  // the connection's id once it does
  std::shared_ptr<VerbsConnection> conn;
  Status s;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) {
    s = CmError("rdma_create_id");
  } else if (rdma_resolve_addr(id, nullptr, list->ai_addr, kResolveTimeoutMs) != 0) {
    s = CmError("rdma_resolve_addr");
  } else if (s = WaitCmEvent(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "rdma_resolve_addr", deadline); !s.ok()) {
  } else if (rdma_resolve_route(id, kResolveTimeoutMs) != 0) {
    s = CmError("rdma_resolve_route");
  } else if (s = WaitCmEvent(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, "rdma_resolve_route", deadline); !s.ok()) {
  } else {
    auto made = MakeConnection(id, Role::kClient, ep.host + ":" + port);
    if (!made.ok()) {
      s = made.status();
    } else {
      conn = std::move(made).value();
      cm_id = id;
      id = nullptr;  // owned by the queue pair (and freed with it) from here on
    }
  }
  ::freeaddrinfo(list);
  if (s.ok()) {
    rdma_conn_param param = ConnParam();
    if (rdma_connect(cm_id, &param) != 0) s = CmError("rdma_connect");
    else s = WaitCmEvent(ch, RDMA_CM_EVENT_ESTABLISHED, "rdma_connect", deadline);
    // The peer answered over RDMA: whatever fails from here on is not a
    // setup failure auto:// could get around by using TCP.
    if (s.ok() && report != nullptr) report->link_established = true;
    // From now on the shared CM thread sees this id's events (disconnects).
    if (s.ok() && rdma_migrate_id(cm_id, channel_) != 0) s = CmError("rdma_migrate_id");
  }
  if (!s.ok()) {
    conn.reset();  // destroys the QP and its id before the channel
    if (id != nullptr) rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return s;
  }
  rdma_destroy_event_channel(ch);
  {
    std::lock_guard lock(mu_);
    by_id_[cm_id] = conn;
  }
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

Result<std::unique_ptr<detail::Backend>> CreateVerbsBackend(std::shared_ptr<TransportContext> ctx) {
  auto backend = std::make_unique<VerbsBackend>(std::move(ctx));
  if (Status s = backend->Init(); !s.ok()) return s;
  return std::unique_ptr<detail::Backend>(std::move(backend));
}

}  // namespace strata::rdma
