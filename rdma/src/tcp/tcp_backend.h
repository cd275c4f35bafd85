// TcpBackend: listeners, connects and the I/O shards of the TCP backend.
//
// Threads: io_threads shards, each an EventLoop owning its connections (the
// shared_ptr that keeps a connection registered lives in its shard and is
// only touched on that shard's thread). Listeners live on shard 0 and hand
// accepted sockets round-robin to the shards.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "backend.h"
#include "tcp/event_loop.h"
#include "transport_context.h"

namespace strata::rdma {

class TcpConnection;
struct TcpListenerState;

class TcpShard {
 public:
  TcpShard(std::shared_ptr<TransportContext> ctx);
  EventLoop& loop() { return loop_; }
  // Loop thread: register, watch and start a connection.
  void Adopt(const std::shared_ptr<TcpConnection>& conn);
  void Drop(TcpConnection* conn) { conns_.erase(conn); }
  Status Start();

 private:
  std::shared_ptr<TransportContext> ctx_;
  EventLoop loop_;
  std::unordered_map<TcpConnection*, std::shared_ptr<TcpConnection>> conns_;  // loop thread only
};

class TcpBackend final : public detail::Backend {
 public:
  static Result<std::unique_ptr<TcpBackend>> Create(std::shared_ptr<TransportContext> ctx);
  ~TcpBackend() override;

  Result<std::unique_ptr<Listener>> Listen(const Endpoint& ep, AcceptHandler on_accept) override;
  Result<std::shared_ptr<Connection>> Connect(const Endpoint& ep, ConnectionHandlers handlers,
                                              detail::ConnectReport* report = nullptr) override;

  TcpShard* NextShard();

 private:
  explicit TcpBackend(std::shared_ptr<TransportContext> ctx) : ctx_(std::move(ctx)) {}

  std::shared_ptr<TransportContext> ctx_;
  std::vector<std::unique_ptr<TcpShard>> shards_;
  std::atomic<uint32_t> next_shard_{0};
  std::mutex listeners_mu_;
  std::vector<std::weak_ptr<TcpListenerState>> listeners_;
};

}  // namespace strata::rdma
