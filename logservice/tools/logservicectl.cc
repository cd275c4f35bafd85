// logservicectl: admin CLI for log service nodes. Today one command:
//
//   logservicectl status --nodes=tcp://10.0.0.1:7100,tcp://10.0.0.2:7100 \
//                        --cluster_id=prod-1 --secret_file=/etc/strata/secret [--json]
//
// It asks every node for its state over the replication transport (a
// StatusReq message; see docs/logservice-replication.md "Admin") and prints
// one line per node: epoch, seal, durable/complete LSN, segments, disk use and
// counters. Exit code 0 if every node answered, 1 otherwise.
//
//   logservicectl status --admin=127.0.0.1:7200,127.0.0.1:7201 [--json]
//
// asks the nodes' gRPC admin endpoints (logserviced --admin_listen) instead.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "codec.h"
#include "config.h"
#include "rpc.h"
#ifdef STRATA_LOGSERVICE_WITH_GRPC
#include <grpcpp/grpcpp.h>

#include "admin.grpc.pb.h"
#endif

using namespace strata::logservice;

namespace {
void Print(const std::vector<std::pair<std::string, std::string>>& kv, bool json) {
  std::string line;
  for (std::size_t i = 0; i < kv.size(); ++i) {
    if (json) line += (i ? ",\"" : "{\"") + kv[i].first + "\":\"" + kv[i].second + "\"";
    else line += (i ? " " : "") + kv[i].first + "=" + kv[i].second;
  }
  std::cout << line << (json ? "}" : "") << "\n";
}

#ifdef STRATA_LOGSERVICE_WITH_GRPC
int AdminStatus(const std::string& addrs, bool json) {
  int rc = 0;
  for (const auto& addr : server::SplitList(addrs)) {
    auto stub = admin::Admin::NewStub(grpc::CreateChannel(addr, grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    admin::NodeStatus s;
    grpc::Status st = stub->GetStatus(&ctx, admin::GetStatusRequest(), &s);
    if (!st.ok()) {
      rc = 1;
      Print({{"admin", addr}, {"error", st.error_message()}}, json);
      continue;
    }
    std::vector<std::pair<std::string, std::string>> kv = {
        {"admin", addr},
        {"node", s.node_id()},
        {"promised_epoch", std::to_string(s.promised_epoch())},
        {"seal_epoch", std::to_string(s.seal_epoch())},
        {"seal_lsn", std::to_string(s.seal_lsn())},
        {"durable_lsn", std::to_string(s.durable_lsn())},
        {"complete_lsn", std::to_string(s.complete_lsn())},
        {"highest_lsn", std::to_string(s.highest_lsn())}};
    std::map<std::string, std::uint64_t> sorted(s.counters().begin(), s.counters().end());
    for (const auto& [k, v] : sorted) kv.emplace_back(k, std::to_string(v));
    Print(kv, json);
  }
  return rc;
}
#endif
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] != "status") {
    std::cerr << "usage: logservicectl status --nodes=A,B,C --cluster_id=ID --secret_file=FILE [--json]\n";
    return 2;
  }
  std::string nodes, cluster = "strata", secret_file, admin_addrs;
  bool json = false;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto val = [&](const char* k) { return a.rfind(k, 0) == 0 ? a.substr(std::string(k).size()) : std::string(); };
    if (a == "--json") json = true;
    else if (a.rfind("--nodes=", 0) == 0) nodes = val("--nodes=");
    else if (a.rfind("--admin=", 0) == 0) admin_addrs = val("--admin=");
    else if (a.rfind("--cluster_id=", 0) == 0) cluster = val("--cluster_id=");
    else if (a.rfind("--secret_file=", 0) == 0) secret_file = val("--secret_file=");
    else {
      std::cerr << "logservicectl: unknown argument " << a << "\n";
      return 2;
    }
  }
  if (!admin_addrs.empty()) {
#ifdef STRATA_LOGSERVICE_WITH_GRPC
    return AdminStatus(admin_addrs, json);
#else
    std::cerr << "logservicectl: built without gRPC; use --nodes\n";
    return 2;
#endif
  }
  auto secret = server::ReadSecretFile(secret_file);
  if (!secret.ok()) {
    std::cerr << "logservicectl: " << secret.status().message() << "\n";
    return 2;
  }
  auto t = strata::rdma::Transport::Create(repl::ReplicationTransportOptions(cluster, *secret));
  if (!t.ok()) {
    std::cerr << "logservicectl: " << t.status().message() << "\n";
    return 2;
  }
  static constexpr const char* kCounterNames[] = {"appends", "append_bytes", "fdatasyncs", "segments",
                                                  "disk_bytes", "stale_refused", "gap_fill_bytes",
                                                  "tail_writes", "reads", "promises", "seals"};
  int rc = 0;
  for (const auto& addr : server::SplitList(nodes)) {
    std::string line;
    auto ch = repl::RpcChannel::Connect(**t, addr, nullptr, nullptr);
    Result<repl::Frame> rep = ch.ok() ? (*ch)->Call(repl::Frame{}, std::chrono::milliseconds(3000))
                                      : Result<repl::Frame>(ch.status());
    if (!rep.ok()) {
      rc = 1;
      line = json ? "{\"address\":\"" + addr + "\",\"error\":\"" + rep.status().message() + "\"}"
                  : "address=" + addr + " error=\"" + rep.status().message() + "\"";
      std::cout << line << "\n";
      continue;
    }
    const repl::NodeState& s = rep->state;
    std::vector<std::pair<std::string, std::string>> kv = {
        {"address", addr},
        {"node", s.node_id},
        {"promised_epoch", std::to_string(s.promised_epoch)},
        {"seal_epoch", std::to_string(s.seal_epoch)},
        {"seal_lsn", std::to_string(s.seal_lsn)},
        {"last_epoch", std::to_string(s.last_epoch)},
        {"released_lsn", std::to_string(s.released)},
        {"durable_lsn", std::to_string(s.durable)},
        {"complete_lsn", std::to_string(s.complete)},
        {"highest_lsn", std::to_string(s.highest)},
        {"tail", std::to_string(s.tail.block_lsn) + "-" + std::to_string(s.tail.data_end) + "@" +
                     std::to_string(s.tail.epoch)}};
    for (std::size_t i = 0; i < s.counters.size() && i < std::size(kCounterNames); ++i)
      kv.emplace_back(kCounterNames[i], std::to_string(s.counters[i]));
    for (std::size_t i = 0; i < kv.size(); ++i) {
      if (json) line += (i ? ",\"" : "{\"") + kv[i].first + "\":\"" + kv[i].second + "\"";
      else line += (i ? " " : "") + kv[i].first + "=" + kv[i].second;
    }
    std::cout << line << (json ? "}" : "") << "\n";
  }
  return rc;
}
