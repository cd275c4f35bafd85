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
#include <set>
#include <string>

#include "codec.h"
#include "runtime/network.h"
#include "runtime/runtime.h"
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

  // Call() in two halves, so that one thread can keep several requests in
  // flight on one channel (the client's read-ahead, read_ahead.h) without a
  // thread per request. Start sends `req` (waiting up to `timeout` for
  // transport credit) and registers it; PendingCall::Wait then blocks for
  // its response, as Call does. A PendingCall holds its channel alive.
  // A Wait that timed out, or destroying a PendingCall before its Wait
  // returned a response, abandons the request: its response, if it still
  // comes, is dropped here and never reaches the async handler (which would
  // take it for news from the node).
  class PendingCall;
  Result<std::unique_ptr<PendingCall>> Start(Frame req, std::chrono::milliseconds timeout);
  // Sends without waiting for the response. `wait` bounds the wait for
  // transport credit; kIoError("busy") if it is exhausted, kIoError(reason) if closed.
  // `request_id`, if given, receives the id the request was sent with (its
  // response carries it; ids grow with each request on a channel).
  [[nodiscard]] Status Post(Frame req, std::chrono::milliseconds wait = std::chrono::milliseconds(0),
                            std::uint64_t* request_id = nullptr);
  bool open() const { return open_.load(); }
  // Closes the connection. On return neither handler runs any more, nor is
  // one still running on another thread: their owner may go away (the
  // transport's threads outlive a client that shares it). May be called
  // from a handler.
  void Close();
  std::string close_reason() const;

 private:
  struct Pending {
    bool done = false;
    Frame response;
  };

  explicit RpcChannel(Runtime& rt) : rt_(rt), cv_(rt) {}
  void OnMessage(const rdma::Message& m);
  void OnClose(const rdma::Status& why);
  // The halves shared by Call and Start/PendingCall. SendRegistered assigns the id,
  // registers `p` under it and sends; on failure nothing stays registered.
  // Await waits for p until `deadline`; on timeout or close it unregisters
  // p, and with `drop_late` remembers the id so a late response is dropped.
  Status SendRegistered(Frame& req, Pending* p, std::chrono::milliseconds timeout);
  Result<Frame> Await(std::uint64_t id, Pending& p, Runtime::TimePoint deadline, bool drop_late);
  void AbandonLocked(std::uint64_t id);

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
  std::map<std::uint64_t, Pending*> pending_;
  // Ids of abandoned requests whose response has not come (bounded: the
  // oldest are forgotten first; a response that outlives that goes to the
  // async handler, as a late Call response does).
  std::set<std::uint64_t> abandoned_;
  std::string close_reason_;
};

class RpcChannel::PendingCall {
 public:
  ~PendingCall();
  PendingCall(const PendingCall&) = delete;
  PendingCall& operator=(const PendingCall&) = delete;
  // The response, or kIoError as Call's. Once per call (then the call is done).
  Result<Frame> Wait(std::chrono::milliseconds timeout);
  std::uint64_t request_id() const { return id_; }

 private:
  friend class RpcChannel;
  explicit PendingCall(std::shared_ptr<RpcChannel> ch) : ch_(std::move(ch)) {}
  std::shared_ptr<RpcChannel> ch_;
  std::uint64_t id_ = 0;
  bool finished_ = false;
  Pending p_;
};

}  // namespace strata::logservice::repl
