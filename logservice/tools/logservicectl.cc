// logservicectl: admin CLI for log service nodes.
//
//   logservicectl status --admin=10.0.0.1:7200,10.0.0.2:7200 --token_file=F
//                        [--tls_ca_file=CA.pem [--tls_server_name=NAME]] [--json]
//     asks each node's gRPC admin endpoint (logserviced --admin_listen) for
//     its state: epoch, seal, durable/complete LSN, segments, disk use,
//     counters, volume. The read-only or the admin token will do.
//
//   logservicectl drop-volume --admin=A,B,C --token_file=F --cluster_id=ID [TLS]
//     empties every node's volume (redo, pages, checkpoint, tail) and fences
//     its writers; the node then serves no writer until create-volume.
//     --cluster_id is required and must be the nodes' own (a node of another
//     cluster refuses and keeps its data). Admin token only.
//
//   logservicectl create-volume --admin=A,B,C --token_file=F [TLS]
//     gives every node whose volume was dropped an empty one again; a writer
//     (mysqld --initialize) then starts at LSN 0. Admin token only. Refused,
//     changing nothing, while any listed node answers no status or still
//     holds log (a partial drop would let the next writer recover the old
//     log from that node).
//
//   logservicectl status --nodes=tcp://10.0.0.1:7100,... --cluster_id=prod-1 --secret_file=F [--json]
//     the same status over the replication transport, authenticated with the
//     writers' cluster secret: for builds without gRPC.
//
//   logservicectl pin-list --nodes=A,B,C --cluster_id=ID --secret_file=F [--json]
//   logservicectl pin-set  --nodes=... --name=NAME --lsn=LSN ...
//   logservicectl pin-drop --nodes=... --name=NAME ...
//     retention pins (docs/design/page-server.md 7.4): a node frees no redo at
//     or above its lowest pin. pageserverd sets its own; these verbs list them
//     and let an operator drop the pin of a page server that is gone (or set
//     one by hand). One line per node and pin; set and drop are durable on a
//     node before it answers.
//
// Output: one line per node ("key=value ..." or JSON with --json); a node
// that fails gets an error= line. Exit code 0 if every node succeeded, 1
// otherwise, 2 for a usage error.
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "codec.h"
#include "config.h"
#include "rpc.h"
#ifdef STRATA_LOGSERVICE_WITH_GRPC
#include "admin_client.h"
#endif

using namespace strata::logservice;

namespace {

constexpr const char* kUsage =
    "usage: logservicectl status --admin=H:P,... --token_file=FILE [--tls_ca_file=FILE [--tls_server_name=NAME]] "
    "[--json]\n"
    "       logservicectl drop-volume --admin=H:P,... --token_file=FILE --cluster_id=ID [--tls_ca_file=FILE ...]\n"
    "       logservicectl create-volume --admin=H:P,... --token_file=FILE [--tls_ca_file=FILE ...]\n"
    "       logservicectl status --nodes=A,B,C --cluster_id=ID --secret_file=FILE [--json]\n"
    "       logservicectl pin-list --nodes=A,B,C --cluster_id=ID --secret_file=FILE [--json]\n"
    "       logservicectl pin-set --nodes=A,B,C --name=NAME --lsn=LSN --cluster_id=ID --secret_file=FILE\n"
    "       logservicectl pin-drop --nodes=A,B,C --name=NAME --cluster_id=ID --secret_file=FILE\n";

using KeyValues = std::vector<std::pair<std::string, std::string>>;

std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += static_cast<unsigned char>(c) < 0x20 ? ' ' : c;
  }
  return o;
}

void Print(const KeyValues& kv, bool json) {
  std::string line;
  for (std::size_t i = 0; i < kv.size(); ++i) {
    const auto& [k, v] = kv[i];
    if (json) {
      line += (i ? ",\"" : "{\"") + k + "\":\"" + JsonEscape(v) + "\"";
    } else {
      const bool quote = v.find(' ') != std::string::npos || v.empty();
      line += (i ? " " : "") + k + "=" + (quote ? "\"" + v + "\"" : v);
    }
  }
  std::cout << line << (json ? "}" : "") << "\n";
}

struct Args {
  std::string command;
  std::string nodes, admin, cluster, secret_file, token_file, tls_ca_file, tls_server_name;
  std::string pin_name, pin_lsn;
  bool cluster_given = false;
  bool json = false;
};

bool Parse(const std::vector<std::string>& argv, Args* a) {
  if (argv.empty()) return false;
  a->command = argv[0];
  a->cluster = "strata";
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : s.substr(eq + 1);
    if (s == "--json") a->json = true;
    else if (key == "--nodes") a->nodes = val;
    else if (key == "--admin") a->admin = val;
    else if (key == "--cluster_id") a->cluster = val, a->cluster_given = true;
    else if (key == "--secret_file") a->secret_file = val;
    else if (key == "--token_file") a->token_file = val;
    else if (key == "--tls_ca_file") a->tls_ca_file = val;
    else if (key == "--tls_server_name") a->tls_server_name = val;
    else if (key == "--name") a->pin_name = val;
    else if (key == "--lsn") a->pin_lsn = val;
    else {
      std::cerr << "logservicectl: unknown argument " << s << "\n";
      return false;
    }
  }
  return true;
}

#ifdef STRATA_LOGSERVICE_WITH_GRPC
// Runs `call` against every admin endpoint; 0 if all succeeded.
template <typename Call>
int ForEachAdmin(const Args& a, Call call) {
  admin::AdminClientOptions o;
  o.tls_ca_file = a.tls_ca_file;
  o.tls_server_name = a.tls_server_name;
  if (!a.token_file.empty()) {
    auto t = server::ReadSecretFile(a.token_file);
    if (!t.ok()) {
      std::cerr << "logservicectl: --token_file: " << t.status().message() << "\n";
      return 2;
    }
    o.token = *t;
  }
  int rc = 0;
  for (const auto& addr : server::SplitList(a.admin)) {
    auto client = admin::AdminClient::Connect(addr, o);
    if (!client.ok()) {
      std::cerr << "logservicectl: " << client.status().message() << "\n";
      return 2;
    }
    if (!call(addr, **client)) rc = 1;
  }
  return rc;
}

int AdminStatus(const Args& a) {
  return ForEachAdmin(a, [&](const std::string& addr, admin::AdminClient& c) {
    admin::NodeStatus s;
    const grpc::Status st = c.GetStatus(&s);
    if (!st.ok()) {
      Print({{"admin", addr}, {"error", admin::Describe(st)}}, a.json);
      return false;
    }
    KeyValues kv = {{"admin", addr},
                    {"node", s.node_id()},
                    {"volume", s.volume()},
                    {"promised_epoch", std::to_string(s.promised_epoch())},
                    {"seal_epoch", std::to_string(s.seal_epoch())},
                    {"seal_lsn", std::to_string(s.seal_lsn())},
                    {"durable_lsn", std::to_string(s.durable_lsn())},
                    {"complete_lsn", std::to_string(s.complete_lsn())},
                    {"highest_lsn", std::to_string(s.highest_lsn())}};
    std::map<std::string, std::uint64_t> sorted(s.counters().begin(), s.counters().end());
    for (const auto& [k, v] : sorted) kv.emplace_back(k, std::to_string(v));
    Print(kv, a.json);
    return true;
  });
}

// create-volume goes ahead only when no node still holds data: a node left
// out of the drop would hand the old log to the next writer's recovery,
// which copies it to the others.
int CheckEveryNodeEmpty(const Args& a) {
  return ForEachAdmin(a, [&](const std::string& addr, admin::AdminClient& c) {
    admin::NodeStatus s;
    const grpc::Status st = c.GetStatus(&s);
    if (!st.ok()) {
      Print({{"admin", addr}, {"error", "cannot check the node before creating: " + admin::Describe(st)}}, a.json);
      return false;
    }
    if (s.volume() == "present" && s.highest_lsn() > 0) {
      Print({{"admin", addr},
             {"node", s.node_id()},
             {"error", "still holds a volume (highest_lsn " + std::to_string(s.highest_lsn()) +
                           "): drop-volume on every node first; nothing was created"}},
            a.json);
      return false;
    }
    return true;
  });
}

int AdminVolumeAction(const Args& a) {
  const bool drop = a.command == "drop-volume";
  if (drop && !a.cluster_given) {
    std::cerr << "logservicectl: drop-volume destroys the nodes' redo; confirm with --cluster_id=<the nodes' "
                 "cluster id>\n";
    return 2;
  }
  if (!drop) {
    if (const int rc = CheckEveryNodeEmpty(a); rc != 0) return rc;
  }
  return ForEachAdmin(a, [&](const std::string& addr, admin::AdminClient& c) {
    admin::VolumeReply r;
    const grpc::Status st = drop ? c.DropVolume(a.cluster, &r) : c.CreateVolume(&r);
    if (!st.ok()) {
      Print({{"admin", addr}, {"error", admin::Describe(st)}}, a.json);
      return false;
    }
    Print({{"admin", addr},
           {"node", r.node_id()},
           {"result", r.changed() ? (drop ? "dropped" : "created") : "unchanged"},
           {"detail", r.detail()}},
          a.json);
    return true;
  });
}
#endif

// Sends `req` to every node of --nodes over the replication transport and
// hands each OK reply to `print`; a node that cannot be asked or refuses
// gets an error line. Returns 2 when the transport cannot be set up, 1 when
// some node failed, else 0.
int CallEachNode(const Args& a, const repl::Frame& req,
                 const std::function<void(const std::string& addr, const repl::Frame& rep)>& print) {
  auto secret = server::ReadSecretFile(a.secret_file);
  if (!secret.ok()) {
    std::cerr << "logservicectl: " << secret.status().message() << "\n";
    return 2;
  }
  auto t = strata::rdma::Transport::Create(repl::ReplicationTransportOptions(a.cluster, *secret));
  if (!t.ok()) {
    std::cerr << "logservicectl: " << t.status().message() << "\n";
    return 2;
  }
  int rc = 0;
  for (const auto& addr : server::SplitList(a.nodes)) {
    auto ch = repl::RpcChannel::Connect(**t, addr, nullptr, nullptr);
    Result<repl::Frame> rep = ch.ok() ? (*ch)->Call(req, std::chrono::milliseconds(3000)) : Result<repl::Frame>(ch.status());
    if (!rep.ok()) {
      rc = 1;
      Print({{"address", addr}, {"error", rep.status().message()}}, a.json);
    } else if (rep->code != wire::ReplyCode::kOk) {
      rc = 1;
      Print({{"address", addr}, {"error", std::string(repl::ReplyCodeName(rep->code)) + ": " + rep->error}}, a.json);
    } else {
      print(addr, *rep);
    }
  }
  return rc;
}

int TransportStatus(const Args& a) {
  return CallEachNode(a, repl::Frame{}, [&](const std::string& addr, const repl::Frame& rep) {
    const repl::NodeState& s = rep.state;
    KeyValues kv = {
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
                     std::to_string(s.tail.epoch)},
        // member: counts toward quorums; rebuilding: copying its log from a
        // peer (new, lost its storage, or moved a damaged log aside).
        {"membership", s.rebuilding ? (s.was_member ? "rebuilding (lost a member's log)" : "rebuilding") : "member"}};
    for (std::size_t i = 0; i < s.counters.size() && i < std::size(wire::kNodeCounterNames); ++i)
      kv.emplace_back(wire::kNodeCounterNames[i], std::to_string(s.counters[i]));
    Print(kv, a.json);
  });
}

// pin-list / pin-set / pin-drop over the replication transport.
int TransportPins(const Args& a) {
  repl::Frame req;
  req.type = wire::MsgType::kPinReq;
  req.pins = {repl::Pin{a.pin_name, 0}};
  if (a.command == "pin-list") {
    req.pin_op = wire::PinOp::kList;
  } else {
    if (a.pin_name.empty() || a.pin_name.size() > wire::kMaxPinName) {
      std::cerr << "logservicectl: " << a.command << " needs --name=NAME (1.." << wire::kMaxPinName << " bytes)\n";
      return 2;
    }
    if (a.command == "pin-set") {
      char* end = nullptr;
      const unsigned long long v = a.pin_lsn.empty() ? 0 : std::strtoull(a.pin_lsn.c_str(), &end, 10);
      if (a.pin_lsn.empty() || *end != '\0') {
        std::cerr << "logservicectl: pin-set needs --lsn=LSN (a decimal number)\n";
        return 2;
      }
      req.pin_op = wire::PinOp::kSet;
      req.lsn = req.pins[0].lsn = v;
    } else {
      req.pin_op = wire::PinOp::kDrop;
    }
  }
  return CallEachNode(a, req, [&](const std::string& addr, const repl::Frame& rep) {
    if (rep.pins.empty()) Print({{"address", addr}, {"pins", "0"}}, a.json);
    for (const auto& p : rep.pins) Print({{"address", addr}, {"pin", p.name}, {"lsn", std::to_string(p.lsn)}}, a.json);
  });
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  if (!Parse(std::vector<std::string>(argv + 1, argv + argc), &a)) {
    std::cerr << kUsage;
    return 2;
  }
  const bool volume_action = a.command == "drop-volume" || a.command == "create-volume";
  const bool pin_action = a.command == "pin-list" || a.command == "pin-set" || a.command == "pin-drop";
  if (pin_action) {
    if (a.nodes.empty()) {
      std::cerr << "logservicectl: " << a.command << " goes over the replication transport: give --nodes=A,B,C\n";
      return 2;
    }
    return TransportPins(a);
  }
  if (a.command != "status" && !volume_action) {
    std::cerr << kUsage;
    return 2;
  }
  if (volume_action && a.admin.empty()) {
    std::cerr << "logservicectl: " << a.command << " goes through the nodes' admin API: give --admin=H:P,...\n";
    return 2;
  }
  if (!a.admin.empty()) {
#ifdef STRATA_LOGSERVICE_WITH_GRPC
    return volume_action ? AdminVolumeAction(a) : AdminStatus(a);
#else
    std::cerr << "logservicectl: built without gRPC: no --admin (status works with --nodes)\n";
    return 2;
#endif
  }
  return TransportStatus(a);
}
