// InProcessCluster: N log service nodes (server::Node, as logserviced runs
// them) in this process, each on its own rdma::Transport, over TCP on
// loopback or over rdma:// on the fake NIC (one FakeVerbsFabric shared by
// every Transport of the cluster: rdma/include/strata/rdma/
// fake_verbs_fabric.h). The same test body runs over both, so the verbs
// engine carries the cluster's traffic exactly as TCP does: receive slots,
// SEND, RDMA WRITE with immediate for bulk messages, credits, handshake.
//
// A node keeps its data directory and its listen address across Stop/Start
// (a restart). Stopping a node destroys its Transport, which closes its
// connections as a dying process would. Warn/error lines of the nodes and
// of every Transport are collected; tests fail on any they did not provoke.
// Used by in_process_cluster_test.cc and bench/transport_bench.cc.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "node.h"
#include "strata/logservice/client.h"
#include "runtime/network.h"
#include "strata/rdma/fake_verbs_fabric.h"

namespace strata::logservice::testing {

enum class TestTransport { kTcp, kFakeVerbs };
const char* TestTransportName(TestTransport t);

class InProcessCluster {
 public:
  InProcessCluster(int n, TestTransport transport, std::uint64_t seed);
  // Over the fake NIC with these fabric options (its faults, fake_nic_fault_test.cc);
  // the cluster's seed is the fabric's.
  InProcessCluster(int n, const rdma::FakeVerbsFabricOptions& fabric);
  ~InProcessCluster();  // stops every node, removes the data (unless STRATA_KEEP_TEST_DIRS)
  InProcessCluster(const InProcessCluster&) = delete;
  InProcessCluster& operator=(const InProcessCluster&) = delete;

  bool StartAll();
  bool Start(int i);  // (re)start node i on its data directory and address
  void Stop(int i);   // Node::Stop: finishes queued work, syncs, closes its Transport
  bool running(int i) const { return nodes_[i] != nullptr; }
  server::Node& node(int i) { return *nodes_[i]; }
  std::string data_dir(int i) const { return root_ + "/n" + std::to_string(i + 1); }

  std::vector<std::string> addresses() const { return addresses_; }  // tcp://... or rdma://...
  // A Network (own Transport) on the cluster's transport, for a client or a
  // status tool; connections made through it reach the nodes.
  std::shared_ptr<Network> NewNetwork();
  // A writer's configuration (W = 2 of 3) using NewNetwork().
  client::ClusterConfig Config(client::OpenMode mode = client::OpenMode::kWriter);

  // Warn/error lines of nodes and transports not matching any allowed
  // substring, joined by newlines ("" when clean).
  std::string UnexpectedLogLines(const std::vector<std::string>& allowed = {}) const;
  // Info lines too (the test reads events such as event=stopped).
  std::string NodeLog(int i) const;
  // Fake NIC only: buffers touched while the NIC owned them; registered bytes.
  std::vector<std::string> violations() const;
  std::uint64_t registered_bytes() const;
  // The fabric itself (null over TCP), e.g. to turn its faults off, or to
  // check registered_bytes() after the cluster is gone.
  std::shared_ptr<rdma::FakeVerbsFabric> fabric() const { return fabric_; }
  const std::string& cluster_id() const { return cluster_id_; }
  const std::string& secret() const { return secret_; }

 private:
  InProcessCluster(int n, TestTransport transport, std::uint64_t seed, const rdma::FakeVerbsFabricOptions& fabric);
  rdma::TransportOptions TransportOptionsFor(const std::string& who);

  const TestTransport transport_;
  const std::uint64_t seed_;
  std::string root_, cluster_id_ = "ipc-cluster", secret_ = "ipc-secret";
  std::shared_ptr<rdma::FakeVerbsFabric> fabric_;  // kFakeVerbs
  std::vector<std::unique_ptr<server::Node>> nodes_;
  std::vector<std::string> addresses_;
  mutable std::mutex log_mu_;
  std::vector<std::string> bad_lines_;
  std::vector<std::string> node_logs_;
};

}  // namespace strata::logservice::testing
