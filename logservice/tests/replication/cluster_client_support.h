// What the multi-process cluster tests (real logserviced processes of a
// LocalCluster) share on the client side: a client configuration for the
// cluster, reading a range back, appending durable blocks, and a probe that
// asks one node directly (its own state and its own bytes, not the
// client's choice of node). One copy, so a change to how tests talk to a
// cluster is made once.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "codec.h"
#include "local_cluster.h"
#include "strata/logservice/client.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice::testing {

// STRATA_TEST_SEED if set, else a random seed; printed once per process.
std::uint64_t ClusterTestSeed();

// W = majority, TCP, the cluster's id and secret, 8 s to open, 2 s per
// operation, 100 ms between reconnects; the seed from STRATA_TEST_SEED if
// set (printed once), else random. Tests change fields as they need.
client::ClusterConfig LocalClusterConfig(const LocalCluster& c);

// The client's durable log [from, to), retrying a short or failed read for
// up to about 2 s (a node may be reconnecting); shorter if it never came.
std::string ReadRange(client::LogClient& lc, std::uint64_t from, std::uint64_t to);

// Appends `blocks` 512-byte blocks of RedoBytes at the stream end and waits
// (10 s at most) until they are durable; gtest failures otherwise.
void AppendBlocksDurable(client::LogClient& lc, int blocks);

// On a fresh volume: no checkpoint, then one written and read back; two
// versions of a page and the one at or below a read LSN; a missing page is
// kNotFound. The same assertions for every transport and cluster kind.
void ExpectCheckpointAndPageRoundTrips(client::LogClient& lc);

// Runs `cmd` through the shell, stdout and stderr appended to *out; its
// exit status (-1 if it could not start). For the CLI tools' tests.
int RunShell(const std::string& cmd, std::string* out);

// Talks to one node of the cluster directly, as logservicectl status does.
class NodeProbe {
 public:
  explicit NodeProbe(const LocalCluster& c);
  // The node's StatusResp state; nullopt if it does not answer.
  std::optional<repl::NodeState> State(int i);
  // The node's own durable bytes [from, to) from its ReadResp; shorter if
  // the node holds less.
  std::string ReadFrom(int i, std::uint64_t from, std::uint64_t to);

 private:
  std::optional<repl::Frame> Call(int i, const repl::Frame& q);
  const LocalCluster& c_;
  std::unique_ptr<rdma::Transport> transport_;
};

}  // namespace strata::logservice::testing
