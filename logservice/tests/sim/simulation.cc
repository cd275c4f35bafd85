// One seed of the simulation; see simulation.h.
#include "simulation.h"

#include <algorithm>
#include <cerrno>
#include <memory>

#include "node.h"
#include "oracle.h"
#include "scheduler.h"
#include "sim_network.h"
#include "strata/logservice/client.h"
#include "storage/fault_injection_file_system.h"
#include "strata/logservice/follower.h"

namespace strata::logservice::sim {
namespace {

using client::Code;
using client::LogClient;
using CrashMode = FaultInjectionFileSystem::CrashMode;

const char* ModeName(CrashMode m) {
  switch (m) {
    case CrashMode::kDropUnsynced: return "power-loss";
    case CrashMode::kTornUnsynced: return "torn";
    default: return "kill-9";
  }
}

// The node's file layer: a FaultInjectionFileSystem whose armed crash point
// (CrashAfterMutations) takes the whole process down at that instant: the
// moment the dying call is made, `on_crash` cuts the node off the network,
// so nothing the node does after the crash point reaches anyone.
class WatchedFileSystem final : public FileSystem {
 public:
  WatchedFileSystem(std::shared_ptr<FaultInjectionFileSystem> fi, std::function<void()> on_crash, bool lying_fsync)
      : fi_(std::move(fi)), on_crash_(std::move(on_crash)), lying_fsync_(lying_fsync) {}
  void Rearm() { fired_ = false; }

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override {
    auto f = fi_->OpenWritable(path, mode);
    Check();
    if (!f.ok()) return f;
    const bool lie = lying_fsync_ && path.find("/redo/") != std::string::npos;
    return std::unique_ptr<WritableFile>(new File(this, std::move(f.value()), lie));
  }
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return fi_->OpenReadable(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override { return fi_->ListDir(dir); }
  Status CreateDirs(const std::string& dir) override { return Watch(fi_->CreateDirs(dir)); }
  Status SyncDir(const std::string& dir) override { return Watch(fi_->SyncDir(dir)); }
  Status Rename(const std::string& from, const std::string& to) override { return Watch(fi_->Rename(from, to)); }
  Status Remove(const std::string& path) override { return Watch(fi_->Remove(path)); }
  Result<bool> Exists(const std::string& path) override { return fi_->Exists(path); }

 private:
  class File final : public WritableFile {
   public:
    File(WatchedFileSystem* fs, std::unique_ptr<WritableFile> f, bool lie) : fs_(fs), f_(std::move(f)), lie_(lie) {}
    Status Append(std::string_view data) override { return fs_->Watch(f_->Append(data)); }
    Status Truncate(std::uint64_t size) override { return fs_->Watch(f_->Truncate(size)); }
    Status Sync() override { return lie_ ? Status::Ok() : fs_->Watch(f_->Sync()); }
    std::uint64_t Size() const override { return f_->Size(); }

   private:
    WatchedFileSystem* fs_;
    std::unique_ptr<WritableFile> f_;
    bool lie_;
  };
  Status Watch(Status s) {
    Check();
    return s;
  }
  void Check() {
    if (!fired_ && fi_->crash_point_reached()) {
      fired_ = true;
      on_crash_();
    }
  }

  std::shared_ptr<FaultInjectionFileSystem> fi_;
  std::function<void()> on_crash_;
  bool lying_fsync_;
  bool fired_ = false;
};

// Swarm testing: every seed draws its own fault intensities (from a stream
// of its own, so that they do not shift the rest of the run), so that some
// seeds are calm and some are storms, and bugs that need one extreme are
// not averaged away.
template <typename T, std::size_t N>
T OneOf(Rng& r, const T (&v)[N]) {
  return v[r.Pick(N)];
}

SchedulerOptions SchedulerFor(const SimOptions& o) {
  Rng r(o.seed * 0x9E3779B97F4A7C15ull + 1);
  SchedulerOptions so;
  so.print_trace = o.print_trace;
  static constexpr double kYield[] = {0.01, 0.05, 0.2};
  static constexpr double kStall[] = {0.001, 0.01, 0.05, 0.15};
  static constexpr std::uint64_t kStallMax[] = {2000, 20000, 100000};
  static constexpr double kEventFirst[] = {0.1, 0.3, 0.6};
  so.yield_chance = OneOf(r, kYield);
  so.stall_chance = OneOf(r, kStall);
  so.stall_max_us = OneOf(r, kStallMax);
  so.event_first_chance = OneOf(r, kEventFirst);
  return so;
}

NetworkOptions NetworkFor(const SimOptions& o) {
  Rng r(o.seed * 0xD1B54A32D192ED03ull + 2);
  NetworkOptions no;
  no.unsafe = o.unsafe_transport;
  static constexpr double kSlow[] = {0.01, 0.05, 0.2};
  static constexpr double kBusy[] = {0.0, 0.002, 0.02};
  no.slow_chance = OneOf(r, kSlow);
  no.busy_chance = OneOf(r, kBusy);
  return no;
}

class World {
 public:
  explicit World(const SimOptions& o)
      : o_(o), s_(o.seed, SchedulerFor(o)), net_(s_, NetworkFor(o)), oracle_(s_, o.check_reply_epochs) {}

  SimResult Run();

 private:
  struct NodeSlot {
    int index = 0;
    int process = -1;
    std::string address, dir;
    std::shared_ptr<FaultInjectionFileSystem> fi;
    std::shared_ptr<WatchedFileSystem> fs;
    std::unique_ptr<server::Node> node;
    bool up = false;
    bool crashed = false;       // hit an armed crash point; cleanup pending
    bool disk_failing = false;  // an fdatasync failure was injected
    bool broken = false;        // refused to start (its reason in broken_reason)
    std::string broken_reason;
    CrashMode pending_mode = CrashMode::kDropUnsynced;
  };
  enum class Role {
    kWriter,    // writes until stopped, killed or fenced
    kVerifier,  // recovers and reads back, writes nothing
    kFinal,     // recovers, then one write must become durable (liveness)
    kHealer,    // recovers, then stays (writing nothing) until no node is rebuilding
  };
  struct Writer {
    int gen = 0;
    int process = -1;
    Role role = Role::kWriter;
    bool kill = false, stop = false, done = false;
    bool opened = false, model_ready = false;
    Lsn pending_claim = 0;
    std::string model;          // its view of the log: recovered bytes + its own
    Scheduler::FiberPtr fiber;
    std::string outcome;
  };

  // A follower (what pageserverd is to the log, docs/design/page-server.md
  // 7.1) reading the acknowledged log as it grows, holding a retention pin
  // at what it has read. Checked at the end: every byte it was given, and
  // every tail byte, is the log the final writer recovered.
  struct Follower {
    int process = -1;
    bool stop = false, done = false;
    std::string bytes;                           // [0, bytes.size()) as followed
    std::vector<std::pair<Lsn, std::string>> tails;  // acknowledged tail bytes seen
    std::uint64_t not_found = 0, pins = 0;
    Scheduler::FiberPtr fiber;
  };
  void FollowerMain();
  void CheckFollower(const std::string& log);

  Rng& rng() { return s_.rng(); }
  milliseconds Ms(std::uint64_t lo, std::uint64_t hi) { return milliseconds(rng().Uniform(lo, hi)); }
  void Trace(const std::string& s) { s_.Trace(s); }

  void Main();
  void Chaos();
  void Final();
  void StartNode(NodeSlot& n);
  void CrashNode(NodeSlot& n, CrashMode mode);
  void NewDisk(NodeSlot& n);
  void WipeNode(NodeSlot& n);
  bool AnyRebuilding();
  std::string TwoCopiesLost();
  void AwaitMembers();
  void ReapCrashed();
  void CheckNodes();
  Writer& SpawnWriter(Role role);
  void WriterMain(Writer& w);
  void WriterLoop(Writer& w, LogClient& c, Lsn checkpoint);
  client::ClusterConfig Config(Writer& w);
  std::vector<int> LiveWriterIndexes() const;
  int PickProcess(bool nodes_only);

  SimOptions o_;
  Scheduler s_;
  SimNetwork net_;
  Oracle oracle_;
  std::vector<NodeSlot> nodes_;
  std::vector<std::unique_ptr<Writer>> writers_;
  std::vector<std::string> addresses_;
  std::size_t block_ = 512;
  bool main_done_ = false;
  std::size_t crashes_ = 0;
  std::uint64_t fsync_max_us_ = 0;
  std::uint64_t write_posts_ = 0, coalesced_posts_ = 0, coalesced_writes_ = 0;  // over the writers (SimResult)
  bool copies_lost_ = false;  // two nodes lost their logs: beyond the fault model
  Follower follower_;
};

client::ClusterConfig World::Config(Writer& w) {
  client::ClusterConfig cfg;
  cfg.nodes = addresses_;
  cfg.write_quorum = 2;
  cfg.cluster_id = "sim";
  cfg.secret = "sim-secret";
  cfg.max_inflight_bytes = rng().Uniform(2, 64) << 10;
  cfg.open_timeout = milliseconds(rng().Uniform(1000, 10000));
  cfg.op_timeout = milliseconds(rng().Uniform(100, 3000));
  cfg.reconnect_interval = milliseconds(rng().Uniform(5, 300));
  // Batching (docs/design/logservice-bulk-path.md, section 6): mostly the
  // default, one request unanswered per node; sometimes none held, or more.
  if (o_.node_requests_in_flight >= 0) {
    cfg.node_requests_in_flight = static_cast<std::size_t>(o_.node_requests_in_flight);
  } else {
    const std::uint64_t d = rng().Uniform(0, 9);
    cfg.node_requests_in_flight = d < 6 ? 1 : d < 8 ? 0 : d - 6;
  }
  cfg.runtime = s_.RuntimeFor(w.process);
  cfg.network = net_.NewEndpoint(w.process);
  Writer* wp = &w;
  cfg.on_durable = [this, wp](Lsn d) {
    if (!wp->model_ready) {
      wp->pending_claim = std::max(wp->pending_claim, d);
      return;
    }
    oracle_.Claim(wp->gen, d, wp->model);
  };
  cfg.log = [this, wp](std::string_view line) { Trace("w" + std::to_string(wp->gen) + " " + std::string(line)); };
  return cfg;
}

World::Writer& World::SpawnWriter(Role role) {
  auto w = std::make_unique<Writer>();
  w->gen = static_cast<int>(writers_.size());
  w->role = role;
  w->process = s_.AddProcess("w" + std::to_string(w->gen));
  oracle_.AddWriterProcess(w->process, w->gen);
  Writer* wp = w.get();
  writers_.push_back(std::move(w));
  Trace(std::string("start ") +
        (role == Role::kWriter     ? "writer "
         : role == Role::kVerifier ? "verifier "
         : role == Role::kHealer   ? "healer "
                                   : "final writer ") +
        "w" + std::to_string(wp->gen));
  wp->fiber = s_.Spawn(wp->process, "main", [this, wp] {
    WriterMain(*wp);
    wp->done = true;
    Trace("w" + std::to_string(wp->gen) + " ends: " + wp->outcome);
  });
  return *wp;
}

void World::WriterMain(Writer& w) {
  std::unique_ptr<LogClient> c;
  std::string last_error;
  const int attempts = w.role != Role::kWriter ? 1000 : static_cast<int>(rng().Uniform(1, 20));
  const TimePoint give_up = s_.now() + seconds(60);
  for (int a = 0; a < attempts && !w.kill && !w.stop && s_.now() < give_up; ++a) {
    auto r = LogClient::Open(Config(w));
    if (r.ok()) {
      c = std::move(r.value());
      break;
    }
    last_error = r.status().ToString();
    Trace("w" + std::to_string(w.gen) + " open failed: " + last_error);
    s_.SleepUntil(s_.now() + Ms(1, 500));
  }
  if (!c) {
    w.outcome = "never opened (" + last_error + ")";
    return;
  }
  w.opened = true;
  // Its write requests, counted when it ends, however it ends.
  struct CountWrites {
    World& world;
    LogClient& c;
    ~CountWrites() {
      const client::WriteStats s = c.write_stats();
      world.write_posts_ += s.posts;
      world.coalesced_posts_ += s.coalesced_posts;
      world.coalesced_writes_ += s.coalesced_writes;
    }
  } count_writes{*this, *c};
  oracle_.Opened(w.gen, c->epoch());
  Trace("w" + std::to_string(w.gen) + " opened: epoch " + std::to_string(c->epoch()) + " stream_end " +
        std::to_string(c->stream_end()) + " sealed_end " + std::to_string(c->sealed_end()));
  // Read back the recovered log, as InnoDB's recovery does: from the
  // checkpoint on (the nodes may have released the log below it). Below
  // it the writer's view is what was acknowledged there (checked by the
  // claims made before the release).
  const Lsn end = c->sealed_end();
  Lsn start = 0;
  for (int tries = 0; !w.kill; ++tries) {
    auto cp = c->ReadCheckpoint();
    if (cp.ok() || cp.status().code() == Code::kNotFound) {
      start = cp.ok() ? std::min(cp->lsn, end) : 0;
      break;
    }
    if (cp.status().code() == Code::kFenced || tries > 200) {
      w.outcome = "could not read the checkpoint: " + cp.status().ToString();
      return;
    }
    s_.SleepUntil(s_.now() + Ms(1, 50));
  }
  if (start > oracle_.committed_size()) {
    s_.Fail("a checkpoint at LSN " + std::to_string(start) + " lies beyond everything acknowledged (" +
            std::to_string(oracle_.committed_size()) + ")");
    return;
  }
  std::string rec = oracle_.committed().substr(0, start);
  int failures = 0;
  while (rec.size() < end && !w.kill) {
    auto r = c->Read(rec.size(), std::min<Lsn>(end - rec.size(), 256u << 10));
    if (r.ok() && !r->empty()) {
      rec += r->substr(0, end - rec.size());
      continue;
    }
    if (!r.ok() && r.status().code() == Code::kFenced) {
      w.outcome = "fenced while reading its recovery";
      return;
    }
    if (++failures > 200) {
      w.outcome = "could not read its recovery: " + (r.ok() ? std::string("empty read") : r.status().ToString());
      return;
    }
    s_.SleepUntil(s_.now() + Ms(1, 50));
  }
  if (rec.size() < end) {
    w.outcome = "killed while reading its recovery";
    return;
  }
  w.model = rec;
  oracle_.Recovered(w.gen, rec);
  w.model_ready = true;
  if (w.pending_claim) oracle_.Claim(w.gen, w.pending_claim, w.model);
  if (w.role == Role::kVerifier) {
    w.outcome = "verified " + std::to_string(rec.size()) + " bytes";
    return;
  }
  if (w.role == Role::kHealer) {
    // A rebuilding node may still need this writer: its seal set what the
    // node must reach, and the recovered tail it resends once the node has
    // caught up with the blocks below it.
    const TimePoint give_up = s_.now() + seconds(60);
    while (AnyRebuilding() && s_.now() < give_up && !w.stop && !c->status().fenced)
      s_.SleepUntil(s_.now() + milliseconds(100));
    w.outcome = !AnyRebuilding()       ? "every node is a member"
                : c->status().fenced ? "fenced: " + c->status().reason
                                     : "gave up waiting for rebuilds";
    return;
  }
  if (w.role == Role::kFinal) {
    // Two blocks and a tail; the whole log must then read back as written.
    Lsn stream_end = c->stream_end();
    w.model += GenBytes(w.gen, w.model.size(), 2 * block_ + block_ / 2);
    const std::size_t full = (w.model.size() - stream_end) / block_ * block_;
    auto st = c->Append(stream_end, std::string_view(w.model).substr(stream_end, full), seconds(30));
    if (st.ok()) stream_end += full;
    if (st.ok() && w.model.size() > stream_end) {
      std::string image = w.model.substr(stream_end);
      image.resize(block_, '\0');
      st = c->PutTail(stream_end, image, w.model.size());
    }
    if (st.ok()) st = c->WaitDurable(w.model.size(), seconds(30));
    if (!st.ok()) {
      s_.Fail("liveness: with every node up and the network healed, a new write did not become durable in 30 s: " +
              st.ToString());
      return;
    }
    oracle_.Claim(w.gen, w.model.size(), w.model);
    std::string all = w.model.substr(0, start);  // released below the checkpoint
    int failures = 0;
    while (all.size() < w.model.size()) {
      auto r = c->Read(all.size(), w.model.size() - all.size());
      if (r.ok() && !r->empty()) {
        all += r->substr(0, w.model.size() - all.size());
        continue;
      }
      if (++failures > 200) {  // a read is one request to one node: retried, as InnoDB's recovery would
        s_.Fail("liveness: reading the final log back failed at LSN " + std::to_string(all.size()) + ": " +
                (r.ok() ? std::string("empty read") : r.status().ToString()));
        return;
      }
      s_.SleepUntil(s_.now() + Ms(1, 50));
    }
    if (all != w.model) s_.Fail("the final log read back differs from what its writer holds");
    w.outcome = "wrote and read back " + std::to_string(all.size()) + " bytes";
    return;
  }
  WriterLoop(w, *c, start);
}

void World::WriterLoop(Writer& w, LogClient& c, Lsn checkpoint) {
  Lsn stream_end = c.stream_end();
  auto fenced = [&](const client::ClientStatus& st) {
    if (st.code() != Code::kFenced) return false;
    w.outcome = "fenced: " + st.message();
    return true;
  };
  for (int op = 0; !w.kill && !w.stop && !s_.failed(); ++op) {
    if (stream_end != c.stream_end()) {
      s_.Fail("simulator: writer's stream end " + std::to_string(stream_end) + " != client's " +
              std::to_string(c.stream_end()));
      return;
    }
    const std::uint64_t dice = rng().Uniform(0, 99);
    if (dice < 55) {  // write: complete blocks are appended, the partial one is the tail
      const std::size_t before = w.model.size();
      w.model += GenBytes(w.gen, before, rng().Uniform(1, 3 * block_));
      const std::size_t full = (w.model.size() - stream_end) / block_ * block_;
      if (full > 0 && w.model.size() > stream_end + full && rng().Chance(0.5)) {
        // Blocks and the tail in one call (InnoDB's usual write): one
        // message per node carries both.
        std::string image = w.model.substr(stream_end + full);
        image.resize(block_, '\0');
        auto st = c.AppendWithTail(stream_end, std::string_view(w.model).substr(stream_end, full), image,
                                   w.model.size(), Ms(1, 2000));
        if (!st.ok()) {
          w.model.resize(before);  // nothing was appended
          if (fenced(st)) return;
          continue;
        }
        stream_end += full;
        continue;
      }
      if (full > 0) {
        auto st = c.Append(stream_end, std::string_view(w.model).substr(stream_end, full), Ms(1, 2000));
        if (!st.ok()) {
          w.model.resize(before);  // nothing was appended
          if (fenced(st)) return;
          continue;
        }
        stream_end += full;
      }
      if (w.model.size() > stream_end) {
        std::string image = w.model.substr(stream_end);
        image.resize(block_, '\0');
        auto st = c.PutTail(stream_end, image, w.model.size());
        if (fenced(st)) return;
        if (!st.ok()) {
          s_.Fail("simulator: PutTail refused: " + st.ToString());
          return;
        }
      }
    } else if (dice < 80) {  // wait for some of it to be durable
      const Lsn lo = c.durable_lsn();
      const Lsn target = lo >= w.model.size() ? lo : rng().Uniform(lo + 1, w.model.size());
      auto st = c.WaitDurable(target, Ms(1, 2000));
      if (st.ok()) oracle_.Claim(w.gen, target, w.model);
      else if (fenced(st)) return;
    } else if (dice < 86) {  // read back some of what is durable (a released LSN: not_found)
      const Lsn d = c.durable_lsn();
      if (d == 0) continue;
      const Lsn from = rng().Uniform(0, d - 1);
      auto r = c.Read(from, rng().Uniform(1, 8192));
      if (!r.ok()) {
        if (fenced(r.status())) return;
        continue;
      }
      const std::size_t n = std::min<std::size_t>(r->size(), std::min<Lsn>(d, w.model.size()) - from);
      if (std::string_view(*r).substr(0, n) != std::string_view(w.model).substr(from, n)) {
        s_.Fail("writer " + std::to_string(w.gen) + " read back [" + std::to_string(from) + ", " +
                std::to_string(from + n) + ") and got other bytes than it wrote there");
        return;
      }
    } else if (dice < 89) {  // checkpoint, then release the log below it (InnoDB's checkpointer)
      const Lsn d = std::min<Lsn>(c.durable_lsn(), oracle_.committed_size());
      if (d <= checkpoint) continue;
      const Lsn at = rng().Uniform(checkpoint + 1, d);
      auto st = c.WriteCheckpoint(at, "sim");
      if (fenced(st)) return;
      if (!st.ok()) continue;
      checkpoint = at;
      st = c.Release(at);
      if (fenced(st)) return;
    } else {
      s_.SleepUntil(s_.now() + Ms(0, 100));
    }
  }
  if (w.outcome.empty()) w.outcome = w.kill ? "killed" : "stopped";
}

void World::FollowerMain() {
  client::ClusterConfig cfg;
  cfg.nodes = addresses_;
  cfg.write_quorum = 2;
  cfg.cluster_id = "sim";
  cfg.secret = "sim-secret";
  cfg.op_timeout = milliseconds(rng().Uniform(100, 1000));
  cfg.runtime = s_.RuntimeFor(follower_.process);
  cfg.network = net_.NewEndpoint(follower_.process);
  auto f = client::LogFollower::Open(cfg);
  if (!f.ok()) {
    s_.Fail("simulator: follower: " + f.status().ToString());
    return;
  }
  Lsn pinned = ~Lsn{0}, tail_seen = 0;
  while (!follower_.stop && !s_.failed()) {
    const Lsn at = follower_.bytes.size();
    if (pinned == ~Lsn{0} || at >= pinned + 4096) {
      if ((*f)->SetPin("sim-follower", at).ok()) {
        pinned = at;
        ++follower_.pins;
      }
    }
    auto b = (*f)->Follow(at, rng().Uniform(1, 64) << 10, Ms(1, 100), tail_seen);
    if (!b.ok()) {
      if (b.status().code() == Code::kNotFound) ++follower_.not_found;
      s_.SleepUntil(s_.now() + Ms(1, 50));
      continue;
    }
    if (!b->bytes.empty() && b->end() > b->frontier) {
      s_.Fail("follower: given bytes up to " + std::to_string(b->end()) + " above the frontier " +
              std::to_string(b->frontier) + " of " + b->node);
      return;
    }
    follower_.bytes += b->bytes;
    if (b->tail_data_end > tail_seen) {
      tail_seen = b->tail_data_end;
      follower_.tails.emplace_back(b->tail_block, b->tail_image.substr(0, b->tail_data_end - b->tail_block));
      if (follower_.tails.size() > 4096) follower_.tails.erase(follower_.tails.begin());
    }
    if (b->bytes.empty() && b->tail_data_end <= tail_seen) s_.SleepUntil(s_.now() + Ms(0, 20));
  }
  (void)(*f)->DropPin("sim-follower");
}

void World::CheckFollower(const std::string& log) {
  const std::string& got = follower_.bytes;
  Trace("follower: " + std::to_string(got.size()) + " bytes, " + std::to_string(follower_.tails.size()) +
        " tails, " + std::to_string(follower_.pins) + " pins set, " + std::to_string(follower_.not_found) +
        " released answers; final log " + std::to_string(log.size()));
  auto first_diff = [](std::string_view a, std::string_view b) {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    return i;
  };
  if (got.size() > log.size() || std::string_view(log).substr(0, got.size()) != got) {
    s_.Fail("follower: was given bytes the final recovery does not hold (follower " + std::to_string(got.size()) +
            " bytes, log " + std::to_string(log.size()) + ", first difference at LSN " +
            std::to_string(first_diff(got, log)) + ")");
    return;
  }
  for (const auto& [at, bytes] : follower_.tails) {
    if (at + bytes.size() > log.size() || std::string_view(log).substr(at, bytes.size()) != bytes) {
      s_.Fail("follower: a tail [" + std::to_string(at) + ", " + std::to_string(at + bytes.size()) +
              ") it was given is not the final log there");
      return;
    }
  }
}

void World::StartNode(NodeSlot& n) {
  server::NodeOptions o;
  o.node_id = "n" + std::to_string(n.index + 1);
  o.listen = n.address;
  o.data_dir = n.dir;
  o.peers = addresses_;
  o.cluster_id = "sim";
  o.secret = "sim-secret";
  o.segment_bytes = 16u << 10;
  o.fs = n.fs;
  o.runtime = s_.RuntimeFor(n.process);
  o.network = net_.NewEndpoint(n.process);
  o.testing_follow_to_durable = o_.follow_unacknowledged;
  o.log = [this](std::string_view level, std::string_view line) {
    // Writer ids mix in a process-wide counter (client.cc): left out, so
    // that a seed's trace hash does not depend on the seeds run before it.
    std::string l(line);
    for (std::size_t at = l.find("writer="); at != std::string::npos; at = l.find("writer=", at + 7)) {
      std::size_t e = at + 7;
      while (e < l.size() && l[e] >= '0' && l[e] <= '9') ++e;
      l.replace(at + 7, e - at - 7, "*");
    }
    Trace(std::string(level) + " " + l);
  };
  n.fs->Rearm();
  auto r = server::Node::Start(std::move(o));
  if (!r.ok()) {
    n.broken = true;
    n.broken_reason = r.status().ToString();
    Trace("n" + std::to_string(n.index + 1) + " refused to start: " + n.broken_reason);
    return;
  }
  n.node = std::move(r.value());
  n.up = true;
  n.broken = false;
  Trace("n" + std::to_string(n.index + 1) + " started");
  const auto st = n.node->State();
  oracle_.NodeEpochs(n.index, st.promised_epoch, st.seal_epoch, "State() after restart");
}

void World::CrashNode(NodeSlot& n, CrashMode mode) {
  if (!n.up) return;
  ++crashes_;
  Trace("crash n" + std::to_string(n.index + 1) + " (" + ModeName(mode) + ")");
  n.fi->CrashAfterMutations(0);  // dead from now on: nothing it still does reaches the disk ...
  net_.Kill(n.process);          // ... or anyone else
  n.node.reset();                // joins its threads (their work fails)
  n.fi->SimulateCrash(mode);
  n.up = false;
  n.crashed = false;
  n.disk_failing = false;
}

// The node's disk: empty, with the crash point that takes the node down.
void World::NewDisk(NodeSlot& n) {
  n.fi = std::make_shared<FaultInjectionFileSystem>(rng().Next());
  NodeSlot* np = &n;
  n.fs = std::make_shared<WatchedFileSystem>(n.fi, [this, np] {
    // The process dies at this disk call: off the network at once; the
    // chaos loop finishes the crash (ReapCrashed).
    Trace("n" + std::to_string(np->index + 1) + " reached its crash point");
    np->crashed = true;
    net_.Kill(np->process);
  }, o_.lying_fsync);
}

// Storage loss: the node dies and comes back on an empty disk. It must
// rebuild from its peers, and count toward no quorum until it has
// (docs/design/logservice-node-rebuild.md). One lost disk is within the
// fault model only while the other two are members, so the chaos wipes a
// node only then.
void World::WipeNode(NodeSlot& n) {
  Trace("wipe n" + std::to_string(n.index + 1) + ": its disk is replaced by an empty one");
  CrashNode(n, CrashMode::kProcessOnly);
  NewDisk(n);
  oracle_.NodeWiped(n.index);
  StartNode(n);
}

bool World::AnyRebuilding() {
  for (auto& n : nodes_)
    if (n.up && !n.crashed && n.node->State().rebuilding) return true;
  return false;
}

// Two nodes rebuilding, one of them a member that moved its damaged log
// aside (a crash can tear the last record into one that fails its CRC like
// rot; the node cannot tell and heals by rebuilding): with a wiped node, two
// copies of the log are gone, as if two disks were lost. No writer may
// recover then (docs/design/logservice-node-rebuild.md, section 5), so
// liveness is not expected; "" if that is not the case.
std::string World::TwoCopiesLost() {
  int rebuilding = 0;
  std::string quarantined;
  for (auto& n : nodes_) {
    if (!n.up || n.crashed) continue;
    const repl::NodeState st = n.node->State();
    if (!st.rebuilding) continue;
    ++rebuilding;
    if (st.was_member) quarantined = "n" + std::to_string(n.index + 1);
  }
  if (rebuilding < 2 || quarantined.empty()) return "";
  return std::to_string(rebuilding) + " nodes rebuilding, " + quarantined + " after moving its damaged log aside";
}

// Every node up is a member: a node still rebuilding (wiped, or one that
// died before its first promise was on disk) gets there once a writer has
// sealed it with every node reachable. Only then can any pair of nodes
// recover.
void World::AwaitMembers() {
  // A healer can be fenced (a writer that died had promised a higher epoch
  // on a node the healer's status round missed): the next one learns it.
  const TimePoint give_up = s_.now() + seconds(60);
  std::string outcome = "none opened";
  while (AnyRebuilding() && s_.now() < give_up && !s_.failed()) {
    Writer& v = SpawnWriter(Role::kHealer);
    s_.Join(*v.fiber);
    outcome = v.outcome;
  }
  if (const std::string why = TwoCopiesLost(); !why.empty() && AnyRebuilding()) {
    Trace("final: " + why + ": two copies lost, an operator decides; nothing left to verify");
    copies_lost_ = true;
    return;
  }
  for (auto& n : nodes_)
    if (n.up && !n.crashed && n.node->State().rebuilding)
      s_.Fail("liveness: n" + std::to_string(n.index + 1) + " still rebuilding after 60 s of writers with every node "
              "reachable (last: " + outcome + ")");
}

// Nodes that hit an armed crash point are already off the network; finish
// their crash.
void World::ReapCrashed() {
  for (auto& n : nodes_) {
    if (!n.crashed || !n.up) continue;
    ++crashes_;
    n.node.reset();
    n.fi->SimulateCrash(n.pending_mode);
    n.up = false;
    n.crashed = false;
    n.disk_failing = false;
  }
}

void World::CheckNodes() {
  for (auto& n : nodes_) {
    if (!n.up || n.crashed) continue;
    const auto st = n.node->State();
    oracle_.NodeEpochs(n.index, st.promised_epoch, st.seal_epoch, "State()");
    if (o_.print_trace) {
      std::string h;
      for (const auto& e : st.history) h += " " + std::to_string(e.epoch) + "@" + std::to_string(e.lsn);
      Trace("state n" + std::to_string(n.index + 1) + ": promised " + std::to_string(st.promised_epoch) + " sealed " +
            std::to_string(st.seal_epoch) + "@" + std::to_string(st.seal_lsn) + " durable " + std::to_string(st.durable) +
            " complete " + std::to_string(st.complete) + " tail " + std::to_string(st.tail.epoch) + ":" +
            std::to_string(st.tail.block_lsn) + "-" + std::to_string(st.tail.data_end) + " history" + h);
    }
  }
}

std::vector<int> World::LiveWriterIndexes() const {
  std::vector<int> v;
  for (const auto& w : writers_)
    if (!w->done && !w->kill && w->role == Role::kWriter) v.push_back(w->gen);
  return v;
}

int World::PickProcess(bool nodes_only) {
  std::vector<int> ps;
  for (const auto& n : nodes_) ps.push_back(n.process);
  if (!nodes_only)
    for (int g : LiveWriterIndexes()) ps.push_back(writers_[g]->process);
  return ps[rng().Pick(ps.size())];
}

void World::Chaos() {
  ReapCrashed();
  NodeSlot& n = nodes_[rng().Pick(nodes_.size())];
  const std::string nn = "n" + std::to_string(n.index + 1);
  const std::uint64_t dice = rng().Uniform(0, 99);
  if (dice < 10) {  // crash now
    static constexpr CrashMode kModes[] = {CrashMode::kDropUnsynced, CrashMode::kProcessOnly, CrashMode::kTornUnsynced};
    CrashNode(n, kModes[rng().Uniform(0, 99) < 45 ? 0 : rng().Uniform(0, 99) < 80 ? 1 : 2]);
  } else if (dice < 16) {  // crash at its k-th next disk mutation
    if (n.up && !n.crashed) {
      n.pending_mode = rng().Chance(0.5) ? CrashMode::kDropUnsynced : CrashMode::kProcessOnly;
      const int k = static_cast<int>(rng().Uniform(0, 30));
      n.fi->CrashAfterMutations(k);
      Trace("arm crash of " + nn + " at its disk mutation +" + std::to_string(k));
    }
  } else if (dice < 34) {  // restart a node that is down, or one whose disk failed
    for (auto& m : nodes_)
      if (!m.up && !m.crashed) {
        StartNode(m);
        return;
      }
    for (auto& m : nodes_)
      if (m.up && m.disk_failing) {
        CrashNode(m, CrashMode::kProcessOnly);
        StartNode(m);
        return;
      }
  } else if (dice < 38) {  // fdatasync fails (EIO): the store stops until restarted
    if (n.up) {
      n.fi->FailOp(FaultInjectionFileSystem::Op::kSync, EIO, static_cast<int>(rng().Uniform(0, 5)), 1);
      n.disk_failing = true;
      Trace("inject fdatasync EIO on " + nn);
    }
  } else if (dice < 45) {  // pause a process
    const int p = PickProcess(false);
    const Duration d = rng().Chance(0.2) ? Ms(1000, 8000) : Ms(1, 500);
    s_.Pause(p, d);
    net_.OnPause(p, d);
  } else if (dice < 55) {  // partition
    const int a = PickProcess(true), b = PickProcess(false);
    if (a != b) net_.Partition(a, b);
  } else if (dice < 66) {  // heal
    if (rng().Chance(0.3)) {
      net_.HealAll();
    } else {
      const int a = PickProcess(true), b = PickProcess(false);
      net_.Heal(a, b);
    }
  } else if (dice < 71) {  // break connections
    const int p = PickProcess(false);
    Trace("break connections of " + s_.ProcessName(p));
    net_.BreakConnections(p);
  } else if (dice < 74) {  // clog a link
    const int a = PickProcess(true), b = PickProcess(false);
    if (a != b) net_.Clog(a, b, Ms(1, 500), s_.now() + Ms(10, 3000));
  } else if (dice < 88) {  // a new writer, while older ones still write
    if (LiveWriterIndexes().size() < 3 && writers_.size() < 40) {
      Writer& w = SpawnWriter(Role::kWriter);
      // A takeover is often a compute node that sees only part of the log
      // service (why it took over): it starts cut off from one node, while
      // the old writer may still reach all of them.
      if (rng().Chance(0.3)) {
        const int cut = nodes_[rng().Pick(nodes_.size())].process;
        net_.Partition(w.process, cut);
        const int wp = w.process;
        s_.After(Ms(50, 3000), [this, wp, cut] { net_.Heal(wp, cut); });
      }
    }
  } else if (dice < 93) {  // a writer crashes
    auto live = LiveWriterIndexes();
    if (!live.empty()) {
      Writer& w = *writers_[live[rng().Pick(live.size())]];
      Trace("kill w" + std::to_string(w.gen));
      net_.Kill(w.process);
      w.kill = true;
    }
  } else if (dice < 95) {  // a node loses its storage
    bool members = true;
    for (auto& m : nodes_) members = members && m.up && !m.crashed && !m.disk_failing && !m.node->State().rebuilding;
    if (members) WipeNode(n);
  }
  // else: quiet
}

void World::Final() {
  Trace("final: heal, stop writers, restart nodes");
  net_.HealAll();
  // No armed crash point fires from here on. Disarming them only in the
  // restart loop below left a window: reaping one crashed node joins its
  // threads, during which another node could reach its crash point after
  // ReapCrashed had passed it; that node then stayed down, and the
  // verifiers saw one node too few (seeds 11908 and 13871, after the
  // client's batching changed their executions).
  for (auto& n : nodes_) n.fi->CrashAfterMutations(-1);
  TimePoint resume = s_.now();
  for (int p = 0; p < s_.process_count(); ++p) resume = std::max(resume, s_.PausedUntil(p));
  s_.SleepUntil(resume);
  for (auto& w : writers_) w->stop = true;
  for (auto& w : writers_) s_.Join(*w->fiber);
  ReapCrashed();
  for (auto& n : nodes_) {
    n.fi->CrashAfterMutations(-1);
    if (n.up && n.disk_failing) CrashNode(n, CrashMode::kProcessOnly);
    if (!n.up) StartNode(n);
  }
  CheckNodes();
  std::vector<int> up;
  for (auto& n : nodes_)
    if (n.up) up.push_back(n.index);
  if (up.size() == nodes_.size()) AwaitMembers();
  if (s_.failed() || copies_lost_) return;
  if (up.size() < 2) {
    Trace("final: only " + std::to_string(up.size()) + " node(s) start; no quorum to verify with");
    for (auto& n : nodes_)
      if (n.broken) Trace("n" + std::to_string(n.index + 1) + ": " + n.broken_reason);
    s_.Fail("liveness: only " + std::to_string(up.size()) + " of 3 nodes start after the chaos (" +
            (nodes_[0].broken ? nodes_[0].broken_reason : nodes_[1].broken ? nodes_[1].broken_reason : nodes_[2].broken_reason) +
            ")");
    return;
  }
  // Every acknowledged byte from every read quorum: a writer recovers with
  // only that pair of nodes reachable.
  for (std::size_t i = 0; i < up.size() && !s_.failed(); ++i) {
    for (std::size_t j = i + 1; j < up.size() && !s_.failed(); ++j) {
      int third = -1;
      for (int k : up)
        if (k != up[i] && k != up[j]) third = k;
      Writer& v = SpawnWriter(Role::kVerifier);
      if (third >= 0) net_.Partition(v.process, nodes_[third].process);
      s_.Join(*v.fiber);
      if (third >= 0) net_.Heal(v.process, nodes_[third].process);
      if (!v.opened && !s_.failed())
        s_.Fail("liveness: with n" + std::to_string(up[i] + 1) + " and n" + std::to_string(up[j] + 1) +
                " up and the network healed, no writer recovered within 60 s: " + v.outcome);
    }
  }
  if (s_.failed()) return;
  // Liveness with every node: a new write becomes durable.
  Writer& last = SpawnWriter(Role::kFinal);
  s_.Join(*last.fiber);
  if (!last.opened) {
    s_.Fail("liveness: with every node up, no writer recovered within 60 s: " + last.outcome);
    return;
  }
  follower_.stop = true;
  s_.Join(*follower_.fiber);
  if (!s_.failed() && last.model_ready) CheckFollower(last.model);
}

void World::Main() {
  for (auto& n : nodes_) StartNode(n);
  SpawnWriter(Role::kWriter);
  follower_.process = s_.AddProcess("f");
  follower_.fiber = s_.Spawn(follower_.process, "follow", [this] {
    FollowerMain();
    follower_.done = true;
  });
  const TimePoint chaos_end =
      s_.now() + milliseconds(static_cast<std::uint64_t>(1000 * (o_.chaos_seconds_min +
                                                                  (o_.chaos_seconds_max - o_.chaos_seconds_min) *
                                                                      static_cast<double>(rng().Uniform(0, 1000)) / 1000)));
  while (s_.now() < chaos_end && !s_.failed()) {
    s_.SleepUntil(s_.now() + (rng().Chance(0.7) ? Ms(1, 100) : Ms(100, 1000)));
    Chaos();
    CheckNodes();
  }
  if (!s_.failed()) Final();
  // Teardown: writers and the follower first, then nodes.
  for (auto& w : writers_) {
    w->stop = true;
    s_.Join(*w->fiber);
  }
  follower_.stop = true;
  if (follower_.fiber) s_.Join(*follower_.fiber);
  for (auto& n : nodes_) n.node.reset();
}

SimResult World::Run() {
  const int ctl = s_.AddProcess("sim");
  for (int i = 0; i < 3; ++i) {
    NodeSlot n;
    n.index = i;
    n.process = s_.AddProcess("n" + std::to_string(i + 1));
    n.address = "tcp://n" + std::to_string(i + 1) + ":7100";
    n.dir = "n" + std::to_string(i + 1);
    oracle_.AddNodeProcess(n.process, i);
    addresses_.push_back(n.address);
    nodes_.push_back(std::move(n));
  }
  for (auto& n : nodes_) NewDisk(n);
  block_ = rng().Chance(0.5) ? 512 : 64;
  // Disk latency: a node's group commit (its "sync" thread) runs its
  // fdatasync only after this long; slow disks make the window between an
  // append being accepted and being acknowledged wide (where be2602a lived).
  {
    Rng r(o_.seed * 0x94D049BB133111EBull + 3);
    static constexpr std::uint64_t kFsyncMaxUs[] = {0, 200, 2000, 20000};
    const std::uint64_t max_us = OneOf(r, kFsyncMaxUs);
    fsync_max_us_ = max_us;
    if (max_us > 0)
      s_.SetWakeDelay([this, max_us](const std::string& name) -> Duration {
        if (name.size() < 5 || name.compare(name.size() - 5, 5, "/sync") != 0) return Duration::zero();
        return rng().Micros(max_us / 10, max_us);
      });
  }
  net_.tap = [this](int from, int to, std::uint64_t link, std::string_view p) { oracle_.OnSend(from, to, link, p); };
  {
    const auto& so = s_.options();
    const auto& no = net_.options();
    Trace("seed " + std::to_string(o_.seed) + ": block " + std::to_string(block_) + ", yield " +
          std::to_string(so.yield_chance) + ", stall " + std::to_string(so.stall_chance) + " up to " +
          std::to_string(so.stall_max_us) + " us, event-first " + std::to_string(so.event_first_chance) + ", slow " +
          std::to_string(no.slow_chance) + ", busy " + std::to_string(no.busy_chance) + ", fsync up to " +
          std::to_string(fsync_max_us_) + " us" + (o_.lying_fsync ? ", LYING FSYNC" : "") +
          (o_.follow_unacknowledged ? ", FOLLOW UNACKNOWLEDGED" : ""));
  }
  s_.Spawn(ctl, "main", [this] {
    Main();
    main_done_ = true;
  });
  const auto r = s_.Run([this] { return main_done_; }, s_.now() + std::chrono::hours(2), 50'000'000);
  SimResult out;
  out.trace_hash = s_.trace_hash();
  out.steps = s_.steps();
  out.virtual_seconds = std::chrono::duration<double>(s_.now() - TimePoint(std::chrono::hours(1))).count();
  out.writers = writers_.size();
  out.node_crashes = crashes_;
  out.claims = oracle_.claims();
  out.committed_bytes = oracle_.committed_size();
  out.write_posts = write_posts_;
  out.coalesced_posts = coalesced_posts_;
  out.coalesced_writes = coalesced_writes_;
  switch (r) {
    case Scheduler::RunResult::kDone:
      if (s_.live_fibers() != 0) {
        std::string names;
        for (const auto& f : s_.LiveFibers()) names += " " + f;
        s_.Fail("teardown: threads still alive after every node and writer stopped:" + names);
      }
      break;
    case Scheduler::RunResult::kFailed: break;
    case Scheduler::RunResult::kStuck: {
      std::string names;
      for (const auto& f : s_.LiveFibers()) names += " " + f;
      s_.Fail("stuck: nothing can run and nothing is scheduled; blocked forever:" + names);
      break;
    }
    case Scheduler::RunResult::kBudget: s_.Fail("budget: the run exceeded its step or virtual-time budget"); break;
  }
  out.ok = !s_.failed();
  out.failure = s_.failure();
  out.trace = s_.TraceTail();
  return out;
}

}  // namespace

SimResult RunSeed(const SimOptions& options) {
  auto* w = new World(options);
  SimResult r = w->Run();
  if (r.ok) delete w;  // else leaked on purpose: its fibers are suspended mid-stack
  return r;
}

}  // namespace strata::logservice::sim
