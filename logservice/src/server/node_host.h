// NodeHost: what logserviced runs. Owns the Node while its volume is present
// and runs the volume actions of the admin API (volume.h) on it.
//
// Why a host around Node: dropping a volume replaces the node's stores, and
// the Node's threads (worker, group commit, catch-up) and the transport all
// hold them. Rather than teach every one of them to let go, the host stops
// the Node (its Stop() finishes queued work, syncs and joins), changes the
// data directory, and starts a new Node on it, listening on the address the
// old one had bound. Writers see their connections close, and the drop's
// epoch raise fences them (volume.h).
//
// States: serving (a Node runs: volume present) or dropped (no Node, the
// replication listener is closed; State() still answers from node_meta, so
// the admin API shows the node and its volume state).
//
// Healing: when the running Node finds its log damaged (a read or the scrub,
// NodeOptions::on_log_damaged), the host's healer thread restarts it the
// same way: stop, move the log aside (log_quarantine.h; always, even if a
// restart's recovery would take the damage for a torn tail and cut it: the
// bytes were acknowledged), start on the same address, rebuilding from
// peers. If that start fails the node stays down and says why.
//
// Threads: every method is thread-safe. State() and address() take a shared
// lock; DropVolume, CreateVolume and Stop take it exclusively, so a status
// request never sees a half-stopped node. on_listening runs under the
// exclusive lock and must not call back into the host.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>

#include "node.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

struct VolumeActionResult {
  bool changed = false;  // false: the volume was already in the wanted state
  std::string detail;    // one line for the operator
};

class NodeHost {
 public:
  // Starts the Node unless the data directory's volume was dropped (then
  // finishes the removal of its files, volume.h, and waits for CreateVolume).
  // on_listening(address) is called each time a Node starts listening (the
  // daemon rewrites its port file).
  static Result<std::unique_ptr<NodeHost>> Start(NodeOptions options,
                                                 std::function<void(const std::string&)> on_listening = {});
  ~NodeHost();  // Stop()

  void Stop();  // idempotent
  bool volume_present() const;
  // The bound replication address; "" while the volume is dropped.
  std::string address() const;
  // The running Node's state, or (dropped) node id and promise from node_meta.
  repl::NodeState State() const;

  // Drops the volume (volume.h) if confirm_cluster_id equals the node's
  // cluster id; kInvalidArgument (nothing changed) otherwise. Dropping a
  // dropped volume changes nothing and succeeds.
  Result<VolumeActionResult> DropVolume(const std::string& confirm_cluster_id);
  // Creates an empty volume and starts serving it. On a node that holds a
  // volume: changes nothing, succeeds with changed=false (the detail names
  // the volume's durable LSN, so nobody mistakes it for an empty one).
  Result<VolumeActionResult> CreateVolume();

 private:
  NodeHost(NodeOptions options, std::function<void(const std::string&)> on_listening);
  Status StartNodeLocked();
  void Log(std::string_view level, const std::string& line) const;
  void HealLoop();
  void Heal(const std::string& reason);

  mutable std::shared_mutex mu_;
  NodeOptions options_;  // listen is replaced by the bound address after the first start
  std::function<void(const std::string&)> on_listening_;
  std::unique_ptr<Node> node_;  // null while dropped or stopped
  bool stopped_ = false;

  // Heal requests from the Node's threads (they must not stop their own node).
  std::mutex heal_mu_;
  std::condition_variable heal_cv_;
  std::string heal_reason_;  // non-empty: a heal is requested
  bool heal_stop_ = false;
  std::thread healer_;
};

}  // namespace strata::logservice::server
