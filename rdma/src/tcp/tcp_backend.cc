// TcpBackend: socket setup (listen/accept/connect) and shard management.
// Setup code only; the per-message path is in tcp_connection.cc.
#include "tcp/tcp_backend.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <future>
#include <string_view>
#include <vector>

#include "frame_codec.h"

#include "tcp/tcp_connection.h"

namespace strata::rdma {
namespace {

// Closes the fd unless released; keeps early returns in setup code leak-free.
class FdGuard {
 public:
  explicit FdGuard(int fd) : fd_(fd) {}
  ~FdGuard() { if (fd_ >= 0) ::close(fd_); }
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
 private:
  int fd_;
};

std::string AddressString(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host);
    port = ntohs(in6->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "?";
}

Status Resolve(const Endpoint& ep, bool passive, addrinfo** out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string port = std::to_string(ep.port);
  const int rc = ::getaddrinfo(ep.host.c_str(), port.c_str(), &hints, out);
  if (rc != 0) return Unavailable("getaddrinfo(" + ep.host + ") failed: " + ::gai_strerror(rc));
  return Status::Ok();
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Turns away an accepted socket over max_pending_handshakes: one REFUSE
// frame in place of the CHALLENGE (so the client can tell "busy, retry"
// from a lost link; nothing in it depends on the cluster or the secret),
// sent without waiting, then close. Nothing is allocated for the peer.
void RefuseBusy(int fd) {
  static const std::vector<std::byte> frame = [] {
    const std::string_view reason = wire::kBusyReason;
    std::vector<std::byte> f(wire::kHeaderSize + reason.size());
    std::memcpy(f.data() + wire::kHeaderSize, reason.data(), reason.size());
    FrameHeader h;
    h.type = wire::FrameType::kRefuse;
    h.length = static_cast<uint32_t>(reason.size());
    EncodeHeader(h, f.data());
    SealHeader(f.data(), PayloadCrc({f.data() + wire::kHeaderSize, reason.size()}));
    return f;
  }();
  [[maybe_unused]] const ssize_t n = ::send(fd, frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

}  // namespace

// ---------------------------------------------------------------- listener

struct TcpListenerState : IoHandler {
  std::mutex mu;
  bool closed = false;
  int fd = -1;
  TcpBackend* backend = nullptr;
  TcpShard* home = nullptr;
  std::shared_ptr<TransportContext> ctx;
  AcceptHandler on_accept;
  Endpoint endpoint;

  void OnIoEvent(uint32_t) override {
    for (;;) {
      sockaddr_storage addr{};
      socklen_t len = sizeof addr;
      const int cfd = ::accept4(fd, reinterpret_cast<sockaddr*>(&addr), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (cfd < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
          ctx->Log(LogLevel::kWarning, "accept4 on " + endpoint.ToString() + " failed: " + std::strerror(errno));
        return;
      }
      std::string peer = AddressString(reinterpret_cast<sockaddr*>(&addr));
      auto slot = ctx->admission.TryAdmit(peer, ctx->Now());
      if (!slot) {
        RefuseBusy(cfd);
        continue;
      }
      SetNoDelay(cfd);
      TcpShard* shard = backend->NextShard();
      auto conn = std::make_shared<TcpConnection>(ctx, Role::kServer, std::move(peer), cfd, shard);
      conn->AdoptHandshakeSlot(std::move(*slot));
      conn->SetAcceptHandler(on_accept);
      shard->loop().Post([shard, conn] { shard->Adopt(conn); });
    }
  }

  // Idempotent; safe from any thread except while the backend is destroyed.
  void Close() {
    std::lock_guard lock(mu);
    if (closed) return;
    closed = true;
    home->loop().RunSync([this] {
      home->loop().Unwatch(fd);
      ::close(fd);
    });
  }
};

namespace {
class TcpListener final : public Listener {
 public:
  explicit TcpListener(std::shared_ptr<TcpListenerState> state) : state_(std::move(state)) {}
  ~TcpListener() override { state_->Close(); }
  Endpoint endpoint() const override { return state_->endpoint; }

 private:
  std::shared_ptr<TcpListenerState> state_;
};
}  // namespace

// ---------------------------------------------------------------- shards

TcpShard::TcpShard(std::shared_ptr<TransportContext> ctx)
    : ctx_(std::move(ctx)), loop_(ctx_->TickInterval(), ctx_->options.busy_poll, ctx_->options.low_latency_reads) {}

Status TcpShard::Start() {
  return loop_.Start(
      [this](Clock::time_point) {
        const auto now = ctx_->Now();  // the protocol clock (options.clock)
        for (auto& [ptr, conn] : conns_) {
          conn->Tick(now);
          conn->TickLink(now);
        }
      },
      [this] {
        for (auto& [ptr, conn] : conns_) {
          conn->Fail(Aborted("transport shutting down"));
          conn->TickLink(Clock::time_point::max());  // ends a graceful close now
        }
      });
}

void TcpShard::Adopt(const std::shared_ptr<TcpConnection>& conn) {
  conns_[conn.get()] = conn;
  if (Status s = loop_.Watch(conn->fd(), EPOLLIN | EPOLLRDHUP, conn.get()); !s.ok()) {
    conn->Fail(s);
    return;
  }
  conn->Start();
}

// ---------------------------------------------------------------- backend

Result<std::unique_ptr<TcpBackend>> TcpBackend::Create(std::shared_ptr<TransportContext> ctx) {
  std::unique_ptr<TcpBackend> backend(new TcpBackend(ctx));
  const uint32_t n = std::max<uint32_t>(ctx->options.io_threads, 1);
  for (uint32_t i = 0; i < n; ++i) {
    backend->shards_.push_back(std::make_unique<TcpShard>(ctx));
    if (Status s = backend->shards_.back()->Start(); !s.ok()) return s;
  }
  return backend;
}

TcpBackend::~TcpBackend() {
  {
    std::lock_guard lock(listeners_mu_);
    for (auto& weak : listeners_) {
      if (auto state = weak.lock()) state->Close();
    }
  }
  for (auto& shard : shards_) shard->loop().Stop();
}

TcpShard* TcpBackend::NextShard() {
  return shards_[next_shard_.fetch_add(1, std::memory_order_relaxed) % shards_.size()].get();
}

Result<std::unique_ptr<Listener>> TcpBackend::Listen(const Endpoint& ep, AcceptHandler on_accept) {
  if (!on_accept) return InvalidArgument("Listen needs an accept handler");
  addrinfo* list = nullptr;
  if (Status s = Resolve(ep, /*passive=*/true, &list); !s.ok()) return s;
  Status last = Unavailable("no address for " + ep.ToString());
  int fd = -1;
  for (addrinfo* ai = list; ai != nullptr && fd < 0; ai = ai->ai_next) {
    FdGuard guard(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (guard.get() < 0) { last = ErrnoStatus("socket", errno); continue; }
    int one = 1;
    ::setsockopt(guard.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(guard.get(), ai->ai_addr, ai->ai_addrlen) != 0) { last = ErrnoStatus("bind(" + ep.ToString() + ")", errno); continue; }
    if (::listen(guard.get(), 1024) != 0) { last = ErrnoStatus("listen", errno); continue; }
    fd = guard.release();
  }
  ::freeaddrinfo(list);
  if (fd < 0) return last;

  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  auto state = std::make_shared<TcpListenerState>();
  state->fd = fd;
  state->backend = this;
  state->home = shards_.front().get();
  state->ctx = ctx_;
  state->on_accept = std::move(on_accept);
  state->endpoint = ep;
  state->endpoint.port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  Status watched;
  state->home->loop().RunSync([&] { watched = state->home->loop().Watch(fd, EPOLLIN, state.get()); });
  if (!watched.ok()) {
    ::close(fd);
    return watched;
  }
  {
    std::lock_guard lock(listeners_mu_);
    listeners_.push_back(state);
  }
  ctx_->Log(LogLevel::kInfo, "listening on " + state->endpoint.ToString());
  return std::unique_ptr<Listener>(new TcpListener(std::move(state)));
}

Result<std::shared_ptr<Connection>> TcpBackend::Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                                        detail::ConnectReport* /*report*/) {
  const auto deadline = Clock::now() + ctx_->options.connect_timeout;
  addrinfo* list = nullptr;
  if (Status s = Resolve(ep, /*passive=*/false, &list); !s.ok()) return s;
  Status last = Unavailable("no address for " + ep.ToString());
  int fd = -1;
  for (addrinfo* ai = list; ai != nullptr && fd < 0; ai = ai->ai_next) {
    FdGuard guard(::socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (guard.get() < 0) { last = ErrnoStatus("socket", errno); continue; }
    if (::connect(guard.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      if (errno != EINPROGRESS) { last = ErrnoStatus("connect(" + ep.ToString() + ")", errno); continue; }
      pollfd pfd{guard.get(), POLLOUT, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      const int ready = ::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left, 0)));
      if (ready == 0) { last = Timeout("connect(" + ep.ToString() + ") timed out"); continue; }
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(guard.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (ready < 0 || err != 0) { last = ErrnoStatus("connect(" + ep.ToString() + ")", ready < 0 ? errno : err); continue; }
    }
    fd = guard.release();
  }
  ::freeaddrinfo(list);
  if (fd < 0) return last;
  SetNoDelay(fd);

  TcpShard* shard = NextShard();
  auto conn = std::make_shared<TcpConnection>(ctx_, Role::kClient, ep.host + ":" + std::to_string(ep.port), fd, shard);
  conn->SetHandlers(std::move(handlers));
  auto established = std::make_shared<std::promise<Status>>();
  auto result = established->get_future();
  conn->SetEstablishedCallback([established](const Status& s) { established->set_value(s); });
  shard->loop().Post([shard, conn] { shard->Adopt(conn); });
  if (result.wait_until(deadline) != std::future_status::ready) {
    conn->Fail(Timeout("handshake with " + ep.ToString() + " did not complete within " +
                       std::to_string(ctx_->options.connect_timeout.count()) + " ms"));
  }
  Status s = result.get();
  if (!s.ok()) return s;
  return std::shared_ptr<Connection>(conn);
}

}  // namespace strata::rdma
