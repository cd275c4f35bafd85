// RpcChannel: request/response over one rdma::Connection, for the client
// library, node-to-node gap filling and logservicectl.
//
// Threads: Call() blocks the calling thread until the response with its
// request id arrives, the connection closes, or the timeout passes (waits
// and the clock are the Network's Runtime, runtime.h). Post()
// sends without waiting; its response (and any response nobody waits for)
// goes to the async handler, which runs on the transport's I/O thread and
// must not block. on_close runs once, on the I/O thread, with the reason.
// All methods are thread-safe. Malformed responses close the channel.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "codec.h"
#include "strata/logservice/network.h"
#include "strata/logservice/runtime.h"
#include "strata/logservice/status.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice::repl {

// Transport settings shared by every replication endpoint: receive slots
// for the common message, the bulk ring for the rest (send_path.h). `log`
// receives the transport's own lines
// (refused handshakes, bad frames); empty: dropped (reasons still surface
// through Status / on_close).
rdma::TransportOptions ReplicationTransportOptions(std::string cluster_id, std::string secret,
                                                   rdma::LogSink log = {});

// "connection refused", "timeout", "authentication failed: ..." : short reason
// strings for status lines.
std::string DescribeTransportError(const rdma::Status& s);

class RpcChannel : public std::enable_shared_from_this<RpcChannel> {
 public:
  using AsyncHandler = std::function<void(const Frame&)>;
  using CloseHandler = std::function<void(const std::string& why)>;

  // Blocks up to the transport's connect_timeout. On failure the Status
  // message is DescribeTransportError's reason.
  static Result<std::shared_ptr<RpcChannel>> Connect(Network& network, const std::string& address,
                                                     AsyncHandler on_async, CloseHandler on_close);
  // The same over a transport (on SystemRuntime()).
  static Result<std::shared_ptr<RpcChannel>> Connect(rdma::Transport& transport, const std::string& address,
                                                     AsyncHandler on_async, CloseHandler on_close);
  ~RpcChannel();

  // Sends `req` (request_id assigned here) and waits for its response.
  // kIoError with the reason if the channel closes or times out ("timeout").
  Result<Frame> Call(Frame req, std::chrono::milliseconds timeout);
  // Sends without waiting for the response. `wait` bounds the wait for
  // transport credit; kIoError("busy") if it is exhausted, kIoError(reason) if closed.
  [[nodiscard]] Status Post(Frame req, std::chrono::milliseconds wait = std::chrono::milliseconds(0));
  bool open() const { return open_.load(); }
  // Closes the connection. On return neither handler runs any more, nor is
  // one still running on another thread: their owner may go away (the
  // transport's threads outlive a client that shares it). May be called
  // from a handler.
  void Close();
  std::string close_reason() const;

 private:
  explicit RpcChannel(Runtime& rt) : rt_(rt), cv_(rt) {}
  void OnMessage(const rdma::Message& m);
  void OnClose(const rdma::Status& why);

  Runtime& rt_;
  std::shared_ptr<rdma::Connection> conn_;
  AsyncHandler on_async_;
  CloseHandler on_close_;
  // Held while a handler runs; Close() takes it to wait for one in flight
  // (recursive: a handler may close its own channel).
  std::recursive_mutex handlers_mu_;
  bool handlers_detached_ = false;  // under handlers_mu_
  std::atomic<bool> open_{true};
  std::atomic<std::uint64_t> next_id_{1};
  mutable std::mutex mu_;
  CondVar cv_;
  struct Pending {
    bool done = false;
    Frame response;
  };
  std::map<std::uint64_t, Pending*> pending_;
  std::string close_reason_;
};

}  // namespace strata::logservice::repl
