// AdminServer over gRPC; see admin_server.h.
#include "admin_server.h"

#include <grpcpp/grpcpp.h>

#include "admin.grpc.pb.h"
#include "codec.h"

namespace strata::logservice::admin {

const char* CounterName(std::size_t i) {
  static constexpr const char* kNames[] = {"appends",       "append_bytes",   "fdatasyncs", "segments",
                                           "disk_bytes",    "stale_refused",  "gap_fill_bytes",
                                           "tail_writes",   "reads",          "promises",   "seals"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(wire::NodeCounter::kCount));
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

namespace {

class Service final : public Admin::Service {
 public:
  explicit Service(server::Node& node) : node_(node) {}
  grpc::Status GetStatus(grpc::ServerContext*, const GetStatusRequest*, NodeStatus* out) override {
    const repl::NodeState s = node_.State();
    out->set_node_id(s.node_id);
    out->set_promised_epoch(s.promised_epoch);
    out->set_seal_epoch(s.seal_epoch);
    out->set_seal_lsn(s.seal_lsn);
    out->set_last_epoch(s.last_epoch);
    out->set_released_lsn(s.released);
    out->set_durable_lsn(s.durable);
    out->set_complete_lsn(s.complete);
    out->set_highest_lsn(s.highest);
    out->set_tail_epoch(s.tail.epoch);
    out->set_tail_block_lsn(s.tail.block_lsn);
    out->set_tail_data_end(s.tail.data_end);
    for (std::size_t i = 0; i < s.counters.size(); ++i) (*out->mutable_counters())[CounterName(i)] = s.counters[i];
    return grpc::Status::OK;
  }

 private:
  server::Node& node_;
};

class Impl final : public AdminServer {
 public:
  Impl(server::Node& node) : service_(node) {}
  ~Impl() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  int port() const override { return port_; }

  Service service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace

Result<std::unique_ptr<AdminServer>> AdminServer::Start(server::Node& node, const std::string& address) {
  auto impl = std::make_unique<Impl>(node);
  grpc::ServerBuilder b;
  b.AddListeningPort(address, grpc::InsecureServerCredentials(), &impl->port_);
  b.RegisterService(&impl->service_);
  impl->server_ = b.BuildAndStart();
  if (!impl->server_ || impl->port_ == 0) return Status::IoError("admin gRPC server could not listen on " + address);
  return std::unique_ptr<AdminServer>(std::move(impl));
}

}  // namespace strata::logservice::admin
