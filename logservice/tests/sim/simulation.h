// One seed of the log service simulation: three real server::Node's and a
// sequence of real LogClient writers (each generation its own process), on
// the Scheduler's fibers and virtual clock, over SimNetwork and one
// FaultInjectionFileSystem per node, with a chaos loop injecting faults and
// the Oracle checking the invariants (docs/design/logservice-simulation.md).
//
// Phases: setup (start the nodes and the first writer); chaos (for a random
// virtual duration: crash, restart and pause nodes, crash them at their
// k-th next disk write, fail an fdatasync, partition, clog and break links,
// start writers while older ones still write, kill and pause writers);
// final (heal everything, stop the writers, restart every node, then for
// each pair of nodes a new writer recovers with the third cut off and must
// hold every acknowledged byte; then a writer with all nodes must make a new
// write durable); teardown (every fiber must finish).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::logservice::sim {

struct SimOptions {
  std::uint64_t seed = 1;
  bool print_trace = false;       // every event to stdout
  bool unsafe_transport = false;  // drop / duplicate / reorder inside connections too
  double chaos_seconds_min = 3, chaos_seconds_max = 20;  // virtual
  // A deliberately broken disk, to show the oracle catches what it exists
  // for: fdatasync of redo segment files returns OK without persisting
  // anything, so a power loss drops bytes nodes acknowledged.
  bool lying_fsync = false;
  // A deliberately broken node: it answers followers up to its durable end,
  // not below the writer's acknowledged frontier
  // (NodeOptions::testing_follow_to_durable): the follower's bytes must then
  // sometimes not be the log a later recovery holds.
  bool follow_unacknowledged = false;
  // Diagnosis: skip the check of every reply header's epoch (invariant 4),
  // to see what a stale acknowledgement leads to rather than the ack itself.
  bool check_reply_epochs = true;
  // Each writer's ClusterConfig::node_requests_in_flight: drawn per writer
  // (mostly the default 1; also 0, no holding, and 2 or 3) when negative.
  int node_requests_in_flight = -1;
};

struct SimResult {
  bool ok = false;
  std::string failure;              // the violated invariant (or liveness / budget / stuck)
  std::vector<std::string> trace;   // the last trace records
  std::uint64_t trace_hash = 0;     // of the whole execution
  std::uint64_t steps = 0;
  double virtual_seconds = 0;
  std::size_t writers = 0, node_crashes = 0, claims = 0;
  std::uint64_t committed_bytes = 0;
  // The writers' write requests, and those that carried several write calls
  // coalesced while a node had requests unanswered (WriteStats).
  std::uint64_t write_posts = 0, coalesced_posts = 0, coalesced_writes = 0;
};

// Runs one seed to the end. A failed seed's state is deliberately leaked
// (its fibers are suspended mid-stack and cannot be unwound).
SimResult RunSeed(const SimOptions& options);

}  // namespace strata::logservice::sim
