// NodeHost: a Node that can be stopped and started again around a volume
// action; design comment in node_host.h.
#include "node_host.h"

#include <chrono>
#include <mutex>

#include "log_quarantine.h"
#include "node_meta.h"
#include "volume.h"

namespace strata::logservice::server {
namespace {
std::uint64_t UnixNow() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
}
}  // namespace

NodeHost::NodeHost(NodeOptions options, std::function<void(const std::string&)> on_listening)
    : options_(std::move(options)), on_listening_(std::move(on_listening)) {
  if (!options_.fs) options_.fs = PosixFileSystem();
  options_.on_log_damaged = [this](const std::string& reason) {
    std::lock_guard<std::mutex> l(heal_mu_);
    if (heal_reason_.empty()) heal_reason_ = reason;
    heal_cv_.notify_all();
  };
  healer_ = std::thread([this] { HealLoop(); });
}

NodeHost::~NodeHost() { Stop(); }

void NodeHost::HealLoop() {
  for (;;) {
    std::string reason;
    {
      std::unique_lock<std::mutex> l(heal_mu_);
      heal_cv_.wait(l, [&] { return heal_stop_ || !heal_reason_.empty(); });
      if (heal_stop_) return;
      reason = heal_reason_;
    }
    Heal(reason);
    std::lock_guard<std::mutex> l(heal_mu_);
    heal_reason_.clear();
  }
}

void NodeHost::Heal(const std::string& reason) {
  std::unique_lock<std::shared_mutex> l(mu_);
  if (stopped_ || options_.damaged_log != NodeOptions::DamagedLog::kRebuild) return;
  if (node_) node_->Stop();
  node_.reset();
  auto moved = QuarantineLog(*options_.fs, options_.data_dir, reason);
  if (!moved.ok()) {
    Log("error", "event=heal_failed reason=\"" + moved.status().ToString() + "\" action=\"the node stays down\"");
    return;
  }
  Log("error", "event=log_quarantined moved_to=" + *moved + " reason=\"" + reason +
                   "\" action=\"restarting to rebuild the log from peers\"");
  Status s = StartNodeLocked();
  if (!s.ok())
    Log("error", "event=heal_failed reason=\"" + s.ToString() + "\" action=\"the node stays down\"");
}

void NodeHost::Log(std::string_view level, const std::string& line) const {
  if (options_.log) options_.log(level, "node=" + options_.node_id + " " + line);
}

Result<std::unique_ptr<NodeHost>> NodeHost::Start(NodeOptions options,
                                                  std::function<void(const std::string&)> on_listening) {
  if (options.data_dir.empty()) return Status::InvalidArgument("data directory is required");
  std::unique_ptr<NodeHost> host(new NodeHost(std::move(options), std::move(on_listening)));
  std::unique_lock<std::shared_mutex> l(host->mu_);
  FileSystem& fs = *host->options_.fs;
  STRATA_RETURN_IF_ERROR(fs.CreateDirs(host->options_.data_dir));
  auto present = VolumePresent(fs, host->options_.data_dir);
  if (!present.ok()) return present.status();
  if (*present) {
    STRATA_RETURN_IF_ERROR(host->StartNodeLocked());
  } else {
    // A drop may have crashed between its record and the last removal.
    STRATA_RETURN_IF_ERROR(RemoveVolumeFiles(fs, host->options_.data_dir));
    host->Log("warn", "event=volume_dropped reason=\"this node's volume was dropped; it serves no writer until "
                      "logservicectl create-volume\"");
  }
  l.unlock();
  return host;
}

Status NodeHost::StartNodeLocked() {
  auto node = Node::Start(options_);
  if (!node.ok()) return node.status();
  node_ = std::move(node.value());
  // A restart must come back where writers and peers look for this node,
  // even when the configured port was 0.
  options_.listen = node_->address();
  if (on_listening_) on_listening_(node_->address());
  return Status::Ok();
}

void NodeHost::Stop() {
  {
    std::lock_guard<std::mutex> h(heal_mu_);
    heal_stop_ = true;
    heal_cv_.notify_all();
  }
  if (healer_.joinable()) healer_.join();
  std::unique_lock<std::shared_mutex> l(mu_);
  stopped_ = true;
  if (node_) node_->Stop();
  node_.reset();
}

bool NodeHost::volume_present() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return node_ != nullptr;
}

std::string NodeHost::address() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  return node_ ? node_->address() : "";
}

repl::NodeState NodeHost::State() const {
  std::shared_lock<std::shared_mutex> l(mu_);
  if (node_) return node_->State();
  repl::NodeState st;
  st.node_id = options_.node_id;
  auto meta = LoadNodeMeta(*options_.fs, options_.data_dir);
  if (meta.ok()) {
    st.promised_epoch = meta->promised_epoch;
    st.writer_id = meta->writer_id;
  }
  st.counters.assign(static_cast<std::size_t>(wire::NodeCounter::kCount), 0);
  return st;
}

Result<VolumeActionResult> NodeHost::DropVolume(const std::string& confirm_cluster_id) {
  std::unique_lock<std::shared_mutex> l(mu_);
  if (confirm_cluster_id != options_.cluster_id) {
    Log("info", "event=volume_drop_refused reason=\"cluster id mismatch\"");
    return Status::InvalidArgument("node " + options_.node_id + " belongs to cluster '" + options_.cluster_id +
                                   "', not '" + confirm_cluster_id + "'; nothing was dropped");
  }
  if (stopped_) return Status::InvalidArgument("node " + options_.node_id + " is shutting down");
  if (!node_) {
    // An earlier drop may have stopped before its last removal: finish it.
    STRATA_RETURN_IF_ERROR(RemoveVolumeFiles(*options_.fs, options_.data_dir));
    return VolumeActionResult{false, "the volume was already dropped"};
  }
  const repl::NodeState before = node_->State();
  node_->Stop();
  node_.reset();
  Status s = server::DropVolume(*options_.fs, options_.data_dir, options_.cluster_id, UnixNow());
  if (!s.ok()) {
    // Steps 1-2 of the drop may not have happened: serve what is there
    // again rather than stay down (a completed step 2 keeps it dropped).
    Log("error", "event=volume_drop_failed reason=\"" + s.ToString() + "\"");
    auto present = VolumePresent(*options_.fs, options_.data_dir);
    if (present.ok() && *present) StartNodeLocked().IgnoreError();
    return s;
  }
  const std::string detail = "dropped: durable_lsn was " + std::to_string(before.durable) + ", promised_epoch " +
                             std::to_string(before.promised_epoch) + " is now fenced";
  Log("warn", "event=volume_dropped durable_lsn=" + std::to_string(before.durable) +
                  " promised_epoch=" + std::to_string(before.promised_epoch));
  return VolumeActionResult{true, detail};
}

Result<VolumeActionResult> NodeHost::CreateVolume() {
  std::unique_lock<std::shared_mutex> l(mu_);
  if (stopped_) return Status::InvalidArgument("node " + options_.node_id + " is shutting down");
  if (node_)
    return VolumeActionResult{false, "a volume exists (durable_lsn " + std::to_string(node_->State().durable) +
                                         "); drop it first to start empty"};
  STRATA_RETURN_IF_ERROR(server::CreateVolume(*options_.fs, options_.data_dir, options_.cluster_id, UnixNow()));
  STRATA_RETURN_IF_ERROR(StartNodeLocked());
  Log("info", "event=volume_created listen=" + options_.listen);
  return VolumeActionResult{true, "created: empty, serving on " + options_.listen};
}

}  // namespace strata::logservice::server
