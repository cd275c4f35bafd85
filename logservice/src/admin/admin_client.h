// AdminClient: the caller's side of the admin API (proto/admin.proto), as
// logservicectl uses it: one node per client, the token in every call's
// metadata, TLS when a CA is given.
//
// Plaintext when tls_ca_file is empty: against a node with TLS the call then
// fails (UNAVAILABLE, the handshake never completes), never silently
// downgrades. Each call has its own deadline. Not thread-safe.
#pragma once
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "admin.grpc.pb.h"
#include "strata/logservice/status.h"

namespace strata::logservice::admin {

struct AdminClientOptions {
  std::string token;            // read-only or admin token; empty: none sent (the node refuses)
  std::string tls_ca_file;      // PEM CA that signed the nodes' certificates; empty: plaintext
  std::string tls_server_name;  // name to verify instead of the address's host (optional)
  std::chrono::milliseconds timeout{3000};
};

class AdminClient {
 public:
  // kNotFound / kInvalidArgument if the CA file is unreadable or not PEM.
  static Result<std::unique_ptr<AdminClient>> Connect(const std::string& address, const AdminClientOptions& options);

  grpc::Status GetStatus(NodeStatus* out);
  grpc::Status DropVolume(const std::string& cluster_id, VolumeReply* out);
  grpc::Status CreateVolume(VolumeReply* out);

 private:
  AdminClient(std::unique_ptr<Admin::Stub> stub, AdminClientOptions options)
      : stub_(std::move(stub)), options_(std::move(options)) {}
  void Prepare(grpc::ClientContext* ctx) const;

  std::unique_ptr<Admin::Stub> stub_;
  AdminClientOptions options_;
};

// "UNAUTHENTICATED: <message>" for the operator.
std::string Describe(const grpc::Status& s);

}  // namespace strata::logservice::admin
