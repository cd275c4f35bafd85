// InProcessCluster; see in_process_cluster.h.
#include "in_process_cluster.h"

#include <cstdlib>
#include <filesystem>

#include "rpc.h"

namespace strata::logservice::testing {

const char* TestTransportName(TestTransport t) { return t == TestTransport::kTcp ? "Tcp" : "FakeVerbs"; }

namespace {
rdma::FakeVerbsFabricOptions DefaultFabric(std::uint64_t seed) {
  rdma::FakeVerbsFabricOptions o;
  o.seed = seed ? seed : 1;
  return o;
}
}  // namespace

InProcessCluster::InProcessCluster(int n, TestTransport transport, std::uint64_t seed)
    : InProcessCluster(n, transport, seed, DefaultFabric(seed)) {}

InProcessCluster::InProcessCluster(int n, const rdma::FakeVerbsFabricOptions& fabric)
    : InProcessCluster(n, TestTransport::kFakeVerbs, fabric.seed, fabric) {}

InProcessCluster::InProcessCluster(int n, TestTransport transport, std::uint64_t seed,
                                   const rdma::FakeVerbsFabricOptions& fabric)
    : transport_(transport), seed_(seed), nodes_(n), addresses_(n), node_logs_(n) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/strata-ipc-XXXXXX";
  root_ = mkdtemp(tmpl.data()) ? tmpl : "/tmp/strata-ipc-fallback";
  if (transport_ == TestTransport::kFakeVerbs) fabric_ = rdma::FakeVerbsFabric::Create(fabric);
  for (int i = 0; i < n; ++i)
    addresses_[i] = std::string(transport_ == TestTransport::kTcp ? "tcp" : "rdma") + "://127.0.0.1:0";
}

InProcessCluster::~InProcessCluster() {
  for (std::size_t i = 0; i < nodes_.size(); ++i) Stop(static_cast<int>(i));
  if (!std::getenv("STRATA_KEEP_TEST_DIRS")) {
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
}

rdma::TransportOptions InProcessCluster::TransportOptionsFor(const std::string& who) {
  auto o = repl::ReplicationTransportOptions(cluster_id_, secret_, [this, who](rdma::LogLevel l, std::string_view line) {
    if (l < rdma::LogLevel::kWarning) return;
    // As logserviced classifies them (node.cc): a peer going away is routine.
    if (line.find(" Closed: ") != std::string_view::npos || line.find("IoError: ") != std::string_view::npos) return;
    std::lock_guard<std::mutex> lock(log_mu_);
    bad_lines_.push_back(who + " transport: " + std::string(line));
  });
  o.fake_verbs_for_tests = fabric_;
  o.random_seed = seed_ ? seed_ : 0;
  return o;
}

std::shared_ptr<Network> InProcessCluster::NewNetwork() {
  auto net = TransportNetwork(TransportOptionsFor("client"));
  return net.ok() ? std::shared_ptr<Network>(std::move(net.value())) : nullptr;
}

bool InProcessCluster::StartAll() {
  bool ok = true;
  for (std::size_t i = 0; i < nodes_.size(); ++i) ok &= Start(static_cast<int>(i));
  return ok;
}

bool InProcessCluster::Start(int i) {
  if (nodes_[i]) return true;
  const std::string id = "n" + std::to_string(i + 1);
  auto net = TransportNetwork(TransportOptionsFor(id));
  if (!net.ok()) return false;
  server::NodeOptions o;
  o.node_id = id;
  o.listen = addresses_[i];
  o.data_dir = root_ + "/" + id;
  o.cluster_id = cluster_id_;
  o.secret = secret_;
  o.segment_bytes = 8 << 20;
  o.network = std::shared_ptr<Network>(std::move(net.value()));  // the node holds the only reference
  o.log = [this, i](std::string_view level, std::string_view line) {
    std::lock_guard<std::mutex> lock(log_mu_);
    node_logs_[i] += std::string(level) + " " + std::string(line) + "\n";
    if (level != "info") bad_lines_.push_back(std::string(level) + " " + std::string(line));
  };
  auto node = server::Node::Start(std::move(o));
  if (!node.ok()) {
    std::lock_guard<std::mutex> lock(log_mu_);
    bad_lines_.push_back("node " + id + " did not start: " + node.status().ToString());
    return false;
  }
  nodes_[i] = std::move(node.value());
  addresses_[i] = nodes_[i]->address();  // the bound port, kept for restarts
  return true;
}

void InProcessCluster::Stop(int i) {
  if (!nodes_[i]) return;
  nodes_[i]->Stop();
  nodes_[i].reset();
}

client::ClusterConfig InProcessCluster::Config(client::OpenMode mode) {
  client::ClusterConfig cfg;
  cfg.nodes = addresses_;
  cfg.write_quorum = 2;
  cfg.cluster_id = cluster_id_;
  cfg.secret = secret_;
  cfg.mode = mode;
  cfg.open_timeout = std::chrono::milliseconds(8000);
  cfg.op_timeout = std::chrono::milliseconds(2000);
  cfg.reconnect_interval = std::chrono::milliseconds(100);
  cfg.seed = seed_;
  cfg.network = NewNetwork();
  return cfg;
}

std::string InProcessCluster::UnexpectedLogLines(const std::vector<std::string>& allowed) const {
  std::lock_guard<std::mutex> lock(log_mu_);
  std::string out;
  for (const auto& line : bad_lines_) {
    bool ok = false;
    for (const auto& a : allowed) ok |= line.find(a) != std::string::npos;
    if (!ok) out += line + "\n";
  }
  return out;
}

std::string InProcessCluster::NodeLog(int i) const {
  std::lock_guard<std::mutex> lock(log_mu_);
  return node_logs_[i];
}

std::vector<std::string> InProcessCluster::violations() const {
  return fabric_ ? fabric_->violations() : std::vector<std::string>{};
}

std::uint64_t InProcessCluster::registered_bytes() const { return fabric_ ? fabric_->registered_bytes() : 0; }

}  // namespace strata::logservice::testing
