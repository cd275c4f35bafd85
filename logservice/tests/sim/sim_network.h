// SimNetwork: the simulator's in-memory network (network.h's Network, with
// rdma::Connection and rdma::Listener in memory), driven by the Scheduler.
//
// Contract kept (the rdma transport's): a connection is reliable and FIFO
// per direction; it breaks as a whole (both ends get on_close once, what was
// in flight is lost); Send may return kBusy (not sent, and the sender knows);
// handlers run in the scheduler's context (an "I/O thread") and never
// concurrently. Faults, all from the seed: per-message delay (so messages on
// different connections reorder), kBusy, broken connections, crashed
// processes (their connections reset, their listeners gone), partitions
// (connects time out; a connection partitioned longer than the keepalive
// timeout breaks, a shorter partition only delays it), clogged links, and
// paused processes (their handlers wait). Options::unsafe additionally
// drops, duplicates and reorders inside a connection, beyond the contract.
//
// Every message accepted by Send is shown to `tap` first (the oracle's view
// of what each process sent). Single-threaded, like the Scheduler.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "scheduler.h"
#include "runtime/network.h"

namespace strata::logservice::sim {

struct NetworkOptions {
  std::uint64_t base_delay_min_us = 20, base_delay_max_us = 300;
  double slow_chance = 0.05;          // a message takes up to slow_max_us more
  std::uint64_t slow_max_us = 50000;
  double very_slow_chance = 0.005;    // ... or up to very_slow_max_us more
  std::uint64_t very_slow_max_us = 2000000;
  double busy_chance = 0.002;         // Send returns kBusy
  Duration connect_timeout = milliseconds(1000);
  Duration keepalive_timeout = milliseconds(5000);
  bool unsafe = false;                // drop / duplicate / reorder inside a connection
  double unsafe_chance = 0.01;
};

class SimNetwork {
 public:
  class Endpoint;
  struct Link;

  // from/to: processes; link: connection id; dir 0: connector to acceptor.
  using Tap = std::function<void(int from, int to, std::uint64_t link, std::string_view payload)>;

  SimNetwork(Scheduler& s, NetworkOptions o);
  ~SimNetwork();

  // A new network for (an incarnation of) process p. It lives as long as
  // its last reference; destroying it aborts its connections.
  std::shared_ptr<Network> NewEndpoint(int p);

  // ---- faults ----
  // Process p crashed: its endpoints are dead (connections reset on both
  // sides, listeners gone, every later call fails).
  void Kill(int p);
  // Every connection of p breaks (both ends see kClosed), p lives on.
  void BreakConnections(int p);
  void Partition(int a, int b);
  void Heal(int a, int b);
  void HealAll();
  bool Partitioned(int a, int b) const;
  // Messages between a and b take up to `extra` more until `until`.
  void Clog(int a, int b, Duration extra, TimePoint until);
  // A paused process's connections break when it stays paused longer than
  // the keepalive timeout; the simulation calls this when it pauses one.
  void OnPause(int p, Duration d);

  Tap tap;

  // Used by the pieces in sim_network.cc.
  Scheduler& scheduler() { return s_; }
  const NetworkOptions& options() const { return o_; }
  Duration DelayFor(int from, int to);
  void Pump(const std::shared_ptr<Link>& l, int dir);
  void Break(const std::shared_ptr<Link>& l, rdma::StatusCode why, const char* reason);
  void ReportClose(const std::shared_ptr<Link>& l, int side, rdma::Status why);
  void Register(Endpoint* e);
  void Unregister(Endpoint* e);
  struct ListenerEntry {
    Endpoint* endpoint;
    rdma::AcceptHandler accept;
    std::uint64_t id;
  };
  std::map<std::string, ListenerEntry>& listeners() { return listeners_; }
  std::uint64_t NextId() { return ++next_id_; }

 private:
  static std::pair<int, int> Key(int a, int b) { return a < b ? std::pair{a, b} : std::pair{b, a}; }

  Scheduler& s_;
  NetworkOptions o_;
  std::vector<Endpoint*> endpoints_;
  std::map<std::string, ListenerEntry> listeners_;
  std::map<std::uint64_t, std::weak_ptr<Link>> links_;  // by id: deterministic order
  std::map<std::pair<int, int>, std::uint64_t> partitions_;  // pair -> partition generation
  std::map<std::pair<int, int>, std::pair<Duration, TimePoint>> clogs_;
  std::uint64_t next_id_ = 0;
};

}  // namespace strata::logservice::sim
