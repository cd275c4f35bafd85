// AdminServer over gRPC; see admin_server.h.
#include "admin_server.h"

#include <grpcpp/grpcpp.h>

#include <fstream>
#include <sstream>

#include "admin.grpc.pb.h"
#include "codec.h"

namespace strata::logservice::admin {

const char* CounterName(std::size_t i) {
  static constexpr const char* kNames[] = {"appends",       "append_bytes",   "fdatasyncs", "segments",
                                           "disk_bytes",    "stale_refused",  "gap_fill_bytes",
                                           "tail_writes",   "reads",          "promises",   "seals",
                                           "append_queue_ns", "append_write_ns", "sync_queue_ns", "sync_batches",
                                           "sync_ns",       "sync_acks",      "append_ack_ns", "append_total_ns",
                                           "tail_requests", "tail_queue_ns",  "tail_save_ns", "tail_total_ns"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(wire::NodeCounter::kCount));
  return i < std::size(kNames) ? kNames[i] : "unknown";
}

namespace {

const char* RoleName(AdminRole r) { return r == AdminRole::kAdmin ? "admin" : "read-only"; }

class Service final : public Admin::Service {
 public:
  Service(server::NodeHost& host, const AdminServerOptions& o)
      : host_(host), credentials_(o.readonly_token, o.admin_token), node_id_(o.node_id), log_(o.log) {}

  grpc::Status GetStatus(grpc::ServerContext* ctx, const GetStatusRequest*, NodeStatus* out) override {
    if (grpc::Status a = Authorize(ctx, AdminRole::kReadOnly, "GetStatus"); !a.ok()) return a;
    const repl::NodeState s = host_.State();
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
    out->set_volume(host_.volume_present() ? "present" : "dropped");
    return grpc::Status::OK;
  }

  grpc::Status DropVolume(grpc::ServerContext* ctx, const DropVolumeRequest* req, VolumeReply* out) override {
    if (grpc::Status a = Authorize(ctx, AdminRole::kAdmin, "DropVolume"); !a.ok()) return a;
    auto r = host_.DropVolume(req->cluster_id());
    if (!r.ok()) return ToGrpc(r.status());
    return Reply(*r, out);
  }

  grpc::Status CreateVolume(grpc::ServerContext* ctx, const CreateVolumeRequest*, VolumeReply* out) override {
    if (grpc::Status a = Authorize(ctx, AdminRole::kAdmin, "CreateVolume"); !a.ok()) return a;
    auto r = host_.CreateVolume();
    if (!r.ok()) return ToGrpc(r.status());
    return Reply(*r, out);
  }

 private:
  grpc::Status Authorize(grpc::ServerContext* ctx, AdminRole need, const char* rpc) {
    const auto& md = ctx->client_metadata();
    const auto it = md.find(kAuthorizationKey);
    grpc::Status refusal;
    if (it == md.end()) {
      refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                             std::string(rpc) + " needs a credential: the " + RoleName(need) +
                                 " token as 'authorization: Bearer <token>' (logservicectl --token_file)");
    } else {
      const AdminRole got = credentials_.Authenticate(std::string_view(it->second.data(), it->second.size()));
      if (got == AdminRole::kNone)
        refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                               std::string(rpc) + ": credential not accepted by this node");
      else if (need == AdminRole::kAdmin && got != AdminRole::kAdmin)
        refusal = grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                               std::string(rpc) + " needs the admin token; the read-only token may only read");
    }
    if (!refusal.ok() && log_)
      log_("warn", "node=" + node_id_ + " event=admin_refused rpc=" + std::string(rpc) + " peer=" + ctx->peer() + " reason=\"" +
                       refusal.error_message() + "\"");
    return refusal;
  }

  static grpc::Status ToGrpc(const Status& s) {
    const auto code = s.code() == StatusCode::kInvalidArgument ? grpc::StatusCode::FAILED_PRECONDITION
                                                                : grpc::StatusCode::INTERNAL;
    return grpc::Status(code, s.message());
  }

  grpc::Status Reply(const server::VolumeActionResult& r, VolumeReply* out) {
    out->set_node_id(host_.State().node_id);
    out->set_changed(r.changed);
    out->set_detail(r.detail);
    return grpc::Status::OK;
  }

  server::NodeHost& host_;
  AdminCredentials credentials_;
  std::string node_id_;
  std::function<void(std::string_view, std::string_view)> log_;
};

class Impl final : public AdminServer {
 public:
  Impl(server::NodeHost& host, const AdminServerOptions& o) : service_(host, o) {}
  ~Impl() override {
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }
  int port() const override { return port_; }
  bool tls() const override { return tls_; }

  Service service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool tls_ = false;
};

Result<std::string> ReadPem(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().find("-----BEGIN ") == std::string::npos) return Status::InvalidArgument(path + " is not PEM");
  return ss.str();
}

}  // namespace

Result<std::unique_ptr<AdminServer>> AdminServer::Start(server::NodeHost& host, AdminServerOptions options) {
  STRATA_RETURN_IF_ERROR(ValidateAdminTokens(options.readonly_token, options.admin_token, ""));
  auto impl = std::make_unique<Impl>(host, options);
  std::shared_ptr<grpc::ServerCredentials> creds = grpc::InsecureServerCredentials();
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    auto cert = ReadPem(options.tls_cert_file);
    if (!cert.ok()) return Status::InvalidArgument("admin_tls_cert_file: " + cert.status().message());
    auto key = ReadPem(options.tls_key_file);
    if (!key.ok()) return Status::InvalidArgument("admin_tls_key_file: " + key.status().message());
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
    impl->tls_ = true;
  }
  grpc::ServerBuilder b;
  b.AddListeningPort(options.address, creds, &impl->port_);
  b.RegisterService(&impl->service_);
  impl->server_ = b.BuildAndStart();
  if (!impl->server_ || impl->port_ == 0)
    return Status::IoError("admin gRPC server could not listen on " + options.address +
                           (impl->tls_ ? " (check the TLS certificate and key)" : ""));
  return std::unique_ptr<AdminServer>(std::move(impl));
}

}  // namespace strata::logservice::admin
