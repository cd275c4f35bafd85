// AdminClient; see admin_client.h.
#include "admin_client.h"

#include <fstream>
#include <sstream>

#include "admin_credentials.h"

namespace strata::logservice::admin {

Result<std::unique_ptr<AdminClient>> AdminClient::Connect(const std::string& address,
                                                          const AdminClientOptions& options) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  grpc::ChannelArguments args;
  if (!options.tls_ca_file.empty()) {
    std::ifstream in(options.tls_ca_file);
    if (!in) return Status::NotFound("cannot read the TLS CA file " + options.tls_ca_file);
    std::stringstream pem;
    pem << in.rdbuf();
    if (pem.str().find("-----BEGIN ") == std::string::npos)
      return Status::InvalidArgument(options.tls_ca_file + " is not PEM");
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pem.str();
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  }
  auto channel = grpc::CreateCustomChannel(address, creds, args);
  return std::unique_ptr<AdminClient>(new AdminClient(Admin::NewStub(channel), options));
}

void AdminClient::Prepare(grpc::ClientContext* ctx) const {
  ctx->set_deadline(std::chrono::system_clock::now() + options_.timeout);
  if (!options_.token.empty()) ctx->AddMetadata(kAuthorizationKey, kBearerPrefix + options_.token);
}

grpc::Status AdminClient::GetStatus(NodeStatus* out) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->GetStatus(&ctx, GetStatusRequest(), out);
}

grpc::Status AdminClient::DropVolume(const std::string& cluster_id, VolumeReply* out) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  DropVolumeRequest req;
  req.set_cluster_id(cluster_id);
  return stub_->DropVolume(&ctx, req, out);
}

grpc::Status AdminClient::CreateVolume(VolumeReply* out) {
  grpc::ClientContext ctx;
  Prepare(&ctx);
  return stub_->CreateVolume(&ctx, CreateVolumeRequest(), out);
}

std::string Describe(const grpc::Status& s) {
  static constexpr const char* kNames[] = {"OK",        "CANCELLED",         "UNKNOWN",           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
                                           "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const auto code = static_cast<std::size_t>(s.error_code());
  return std::string(code < std::size(kNames) ? kNames[code] : "UNKNOWN") + ": " + s.error_message();
}

}  // namespace strata::logservice::admin
