// RpcChannel; see rpc.h.
#include "rpc.h"

#include "send_path.h"

namespace strata::logservice::repl {

rdma::TransportOptions ReplicationTransportOptions(std::string cluster_id, std::string secret, rdma::LogSink log) {
  rdma::TransportOptions o;
  o.cluster_id = std::move(cluster_id);
  o.secret = std::move(secret);
  // Receive slots for the common message, larger ones through the bulk
  // ring (send_path.h). Per verbs connection that registers 96 slots of
  // 32 KiB, a 1 MiB send arena and two 4 MiB rings (~12 MiB; 2 MiB slots and
  // a 16 MiB arena pinned ~216 MiB): docs/logservice-replication.md.
  o.max_message_size = kReceiveSlotBytes;
  o.bulk_ring_size = kBulkRingBytes;
  o.receive_credits = 32;
  // Holds only messages up to a slot: 32 credits' worth.
  o.send_buffer_size = 1u << 20;
  o.lease_pool_buffers = 4;
  o.connect_timeout = std::chrono::milliseconds(1000);
  o.handshake_timeout = std::chrono::milliseconds(2000);
  o.keepalive_interval = std::chrono::milliseconds(300);
  // 5 s, not less: on an overloaded host (mtr's upstream innodb tier beside
  // other benchmarks, load average 100-280 on 2 vCPUs) a whole mysqld was
  // seen unscheduled for 2.8-3.7 s, and a 2 s timeout then dropped all three
  // nodes at once and stalled the redo while they re-sealed. A dead node is
  // still seen at once (EOF/RST); only a silent one takes this long, and with
  // W=2 of 3 the other two carry the commits meanwhile.
  o.keepalive_timeout = std::chrono::milliseconds(5000);
  o.close_linger = std::chrono::milliseconds(500);
  o.log = log ? std::move(log) : [](rdma::LogLevel, std::string_view) {};
  return o;
}

std::string DescribeTransportError(const rdma::Status& s) {
  const std::string& m = s.message();
  if (m.find("ECONNREFUSED") != std::string::npos || m.find("onnection refused") != std::string::npos)
    return "connection refused";
  switch (s.code()) {
    case rdma::StatusCode::kTimeout: return "timeout";
    case rdma::StatusCode::kAuthFailed: return "authentication failed (" + m + ")";
    case rdma::StatusCode::kClosed: return "connection closed";
    default: return std::string(rdma::StatusCodeName(s.code())) + ": " + m;
  }
}

Result<std::shared_ptr<RpcChannel>> RpcChannel::Connect(rdma::Transport& transport, const std::string& address,
                                                        AsyncHandler on_async, CloseHandler on_close) {
  return Connect(*BorrowedTransportNetwork(transport), address, std::move(on_async), std::move(on_close));
}

Result<std::shared_ptr<RpcChannel>> RpcChannel::Connect(Network& network, const std::string& address,
                                                        AsyncHandler on_async, CloseHandler on_close) {
  std::shared_ptr<RpcChannel> ch(new RpcChannel(network.runtime()));
  ch->on_async_ = std::move(on_async);
  ch->on_close_ = std::move(on_close);
  std::weak_ptr<RpcChannel> weak = ch;
  rdma::ConnectionHandlers h;
  h.on_message = [weak](rdma::Connection&, const rdma::Message& m) {
    if (auto c = weak.lock()) c->OnMessage(m);
  };
  h.on_close = [weak](rdma::Connection&, const rdma::Status& why) {
    if (auto c = weak.lock()) c->OnClose(why);
  };
  auto conn = network.Connect(address, std::move(h));
  if (!conn.ok()) return Status::IoError(DescribeTransportError(conn.status()));
  std::lock_guard<std::mutex> l(ch->mu_);
  ch->conn_ = std::move(conn.value());
  return ch;
}

RpcChannel::~RpcChannel() {
  if (conn_) conn_->Close();
}

void RpcChannel::OnMessage(const rdma::Message& m) {
  Frame f;
  Status s = Decode(m.payload(), &f);
  if (!s.ok() || !wire::IsResponse(f.type)) {
    {
      std::lock_guard<std::mutex> l(mu_);
      close_reason_ = "protocol error from node: " + (s.ok() ? std::string("request on a client channel") : s.message());
    }
    if (conn_) conn_->Close();
    return;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = pending_.find(f.request_id);
    if (it != pending_.end()) {
      it->second->done = true;
      it->second->response = std::move(f);
      pending_.erase(it);
      cv_.notify_all();
      return;
    }
    if (abandoned_.erase(f.request_id) != 0) return;  // nobody wants it (Start)
  }
  std::lock_guard<std::recursive_mutex> gate(handlers_mu_);
  if (!handlers_detached_ && on_async_) on_async_(f);
}

void RpcChannel::OnClose(const rdma::Status& why) {
  {
    std::lock_guard<std::mutex> l(mu_);
    open_ = false;
    abandoned_.clear();
    if (close_reason_.empty()) close_reason_ = why.ok() ? "closed" : DescribeTransportError(why);
    cv_.notify_all();
  }
  std::lock_guard<std::recursive_mutex> gate(handlers_mu_);
  if (!handlers_detached_ && on_close_) on_close_(close_reason());
}

Status RpcChannel::SendRegistered(Frame& req, Pending* p, std::chrono::milliseconds timeout) {
  req.request_id = next_id_++;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!open_) return Status::IoError(close_reason_);
    pending_[req.request_id] = p;
  }
  const std::string bytes = Encode(req);
  rdma::Status s = SendMessage(*conn_, bytes, timeout);
  if (s.ok()) return Status::Ok();
  std::lock_guard<std::mutex> l(mu_);
  pending_.erase(req.request_id);
  return Status::IoError(DescribeTransportError(s));
}

Result<Frame> RpcChannel::Await(std::uint64_t id, Pending& p, Runtime::TimePoint deadline, bool drop_late) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_until(l, deadline, [&] { return p.done || !open_; });
  if (p.done) return std::move(p.response);
  pending_.erase(id);
  if (drop_late) AbandonLocked(id);
  return Status::IoError(open_ ? "timeout" : close_reason_);
}

void RpcChannel::AbandonLocked(std::uint64_t id) {
  if (!open_) return;  // no response can come any more
  // 4096: far more than anyone keeps in flight; only a node that never
  // answers could fill it, and then the oldest ids are the ones to forget.
  if (abandoned_.size() >= 4096) abandoned_.erase(abandoned_.begin());
  abandoned_.insert(id);
}

Result<Frame> RpcChannel::Call(Frame req, std::chrono::milliseconds timeout) {
  const auto deadline = rt_.Now() + timeout;
  Pending p;
  Status s = SendRegistered(req, &p, timeout);
  if (!s.ok()) return s;
  return Await(req.request_id, p, deadline, /*drop_late=*/false);
}

Result<std::unique_ptr<RpcChannel::PendingCall>> RpcChannel::Start(Frame req, std::chrono::milliseconds timeout) {
  std::unique_ptr<PendingCall> call(new PendingCall(shared_from_this()));
  Status s = SendRegistered(req, &call->p_, timeout);
  if (!s.ok()) {
    call->finished_ = true;
    return s;
  }
  call->id_ = req.request_id;
  return std::move(call);
}

Result<Frame> RpcChannel::PendingCall::Wait(std::chrono::milliseconds timeout) {
  if (finished_) return Status::IoError("PendingCall::Wait called twice");
  finished_ = true;
  return ch_->Await(id_, p_, ch_->rt_.Now() + timeout, /*drop_late=*/true);
}

RpcChannel::PendingCall::~PendingCall() {
  if (finished_) return;
  std::lock_guard<std::mutex> l(ch_->mu_);
  // Still registered unless the response came (then it is simply dropped
  // with p_, which nobody else points to any more).
  if (ch_->pending_.erase(id_) != 0) ch_->AbandonLocked(id_);
}

Status RpcChannel::Post(Frame req, std::chrono::milliseconds wait, std::uint64_t* request_id) {
  req.request_id = next_id_++;
  if (request_id) *request_id = req.request_id;
  const std::string bytes = Encode(req);
  rdma::Status s = SendMessage(*conn_, bytes, wait);
  if (s.ok()) return Status::Ok();
  if (s.code() == rdma::StatusCode::kBusy) return Status::IoError("busy");
  return Status::IoError(DescribeTransportError(s));
}

void RpcChannel::Close() {
  {
    std::lock_guard<std::recursive_mutex> gate(handlers_mu_);
    handlers_detached_ = true;
  }
  if (conn_) conn_->Close();
}

std::string RpcChannel::close_reason() const {
  std::lock_guard<std::mutex> l(mu_);
  return close_reason_;
}

}  // namespace strata::logservice::repl
