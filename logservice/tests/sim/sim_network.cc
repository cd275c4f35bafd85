// SimNetwork: see sim_network.h.
#include "sim_network.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <utility>

#include "codec.h"
#include "send_path.h"
#include "strata/rdma/endpoint.h"

namespace strata::logservice::sim {
namespace {

// A trace line's "lsn/a/b": the two LSNs that go with the message's own,
// for the types whose trace shows them.
std::optional<std::pair<std::uint64_t, std::uint64_t>> TracedLsns(const repl::Frame& f) {
  using wire::MsgType;
  switch (f.type) {
    case MsgType::kSealReq: return std::pair{f.commit_lsn, f.certify_lsn};
    case MsgType::kAppendReq: return std::pair{f.commit_lsn, std::uint64_t{0}};
    case MsgType::kAppendResp: return std::pair{f.complete_lsn, std::uint64_t{0}};
    case MsgType::kTailReq: return std::pair{f.data_end, std::uint64_t{0}};
    case MsgType::kTailResp: return std::pair{f.data_end, f.durable_lsn};
    case MsgType::kReadReq: return std::pair{std::uint64_t{0}, f.seal_epoch};
    default: return std::nullopt;
  }
}

}  // namespace

class SimConnection;

struct SimNetwork::Link {
  std::uint64_t id = 0;
  struct Side {
    int process = -1;
    Endpoint* endpoint = nullptr;  // null once that endpoint is gone
    std::shared_ptr<SimConnection> conn;  // held until on_close was reported
    rdma::ConnectionHandlers h;
    bool open = true;       // may still send
    bool reported = false;  // on_close ran
    std::string peer_address;
  } side[2];
  struct Pending {
    std::string bytes;
    TimePoint due;
    bool fin = false;
  };
  std::deque<Pending> q[2];  // direction d: from side d to side 1 - d
  TimePoint last[2]{};
  std::uint32_t seq[2] = {0, 0};
  bool broken = false;
};

class SimConnection final : public rdma::Connection {
 public:
  SimConnection(SimNetwork& net, std::shared_ptr<SimNetwork::Link> link, int side)
      : net_(net), link_(std::move(link)), side_(side) {}

  // The replication transport's limits (send_path.h), so the simulated
  // senders must take the path a real connection would accept.
  rdma::Status Send(std::span<const std::byte> payload, rdma::SendCallback done, std::chrono::milliseconds,
                    rdma::SendFlags) override {
    if (payload.size() > max_message_size())
      return rdma::InvalidArgument("payload of " + std::to_string(payload.size()) + " bytes exceeds max_message_size (use SendBulk)");
    return Deliver(payload, std::move(done));
  }
  rdma::Status SendBulk(std::span<const std::byte> payload, rdma::SendCallback done, std::chrono::milliseconds,
                        rdma::SendFlags) override {
    if (payload.size() > max_bulk_size())
      return rdma::InvalidArgument("bulk payload of " + std::to_string(payload.size()) + " bytes exceeds max_bulk_size");
    return Deliver(payload, std::move(done));
  }
  rdma::Status Deliver(std::span<const std::byte> payload, rdma::SendCallback done) {
    auto& l = link_;
    if (!l || l->broken || !l->side[side_].open) return rdma::Closed("connection closed");
    Scheduler& s = net_.scheduler();
    if (s.rng().Chance(net_.options().busy_chance)) return rdma::Busy("send window full (simulated)");
    const std::string_view bytes(reinterpret_cast<const char*>(payload.data()), payload.size());
    const int from = l->side[side_].process, to = l->side[1 - side_].process;
    if (s.options().print_trace && bytes.size() >= wire::kHeaderSize) {
      std::string what(repl::MsgTypeName(static_cast<wire::MsgType>(static_cast<unsigned char>(bytes[wire::kTypeOffset]))));
      repl::Frame f;
      if (repl::Decode(bytes, &f).ok()) {
        what += " e" + std::to_string(f.epoch);
        if (f.code != wire::ReplyCode::kOk) what += " " + std::string(repl::ReplyCodeName(f.code));
        if (const auto more = TracedLsns(f))
          what += " " + std::to_string(f.lsn) + "/" + std::to_string(more->first) + "/" + std::to_string(more->second) +
                  " +" + std::to_string(f.data.size());
      }
      s.Trace("send " + s.ProcessName(from) + " -> " + s.ProcessName(to) + " link " + std::to_string(l->id) + " " + what);
    }
    if (net_.tap) net_.tap(from, to, l->id, bytes);
    int copies = 1;
    bool reorder = false;
    if (net_.options().unsafe && s.rng().Chance(net_.options().unsafe_chance)) {
      switch (s.rng().Pick(3)) {
        case 0: copies = 0; break;
        case 1: copies = 2; break;
        default: reorder = true; break;
      }
      s.Trace(std::string("unsafe ") + (copies == 0 ? "drop" : copies == 2 ? "duplicate" : "reorder") + " on link " +
              std::to_string(l->id));
    }
    for (int k = 0; k < copies; ++k) Enqueue(l, std::string(bytes), false, reorder);
    if (done) done(rdma::Status::Ok());
    return rdma::Status::Ok();
  }
  void Flush() override {}
  void Close() override {
    auto& l = link_;
    if (!l || l->broken || !l->side[side_].open) return;
    l->side[side_].open = false;
    Enqueue(l, std::string(), true, false);  // the peer sees kClosed after what was sent
    const int side = side_;
    SimNetwork* net = &net_;
    net_.scheduler().At(net_.scheduler().now(),
                        [net, l, side] { net->ReportClose(l, side, rdma::Status::Ok()); });
  }
  bool is_open() const override {
    auto& l = link_;
    return l && !l->broken && l->side[side_].open;
  }
  rdma::Scheme backend() const override { return rdma::Scheme::kTcp; }
  std::string peer_address() const override {
    auto& l = link_;
    return l ? l->side[side_].peer_address : std::string("gone");
  }
  std::uint32_t max_message_size() const override { return repl::kReceiveSlotBytes; }
  std::uint32_t max_bulk_size() const override { return repl::kBulkRingBytes - 32; }  // the ring less a frame header
  rdma::ConnectionStats stats() const override { return {}; }

 private:
  void Enqueue(const std::shared_ptr<SimNetwork::Link>& l, std::string bytes, bool fin, bool reorder) {
    Scheduler& s = net_.scheduler();
    const int dir = side_;
    const TimePoint due =
        std::max(s.now() + net_.DelayFor(l->side[dir].process, l->side[1 - dir].process), l->last[dir]);
    l->last[dir] = due;
    auto& q = l->q[dir];
    q.push_back(SimNetwork::Link::Pending{std::move(bytes), due, fin});
    if (reorder && q.size() >= 2 && !q[q.size() - 2].fin) {
      std::swap(q[q.size() - 1].bytes, q[q.size() - 2].bytes);  // due times stay sorted
    }
    SimNetwork* net = &net_;
    s.At(due, [net, l, dir] { net->Pump(l, dir); });
  }

  SimNetwork& net_;
  // Strong: the link lives while either end's connection object does (the
  // link holds its ends until each has been told it closed).
  std::shared_ptr<SimNetwork::Link> link_;
  int side_;
};

class SimListener final : public rdma::Listener {
 public:
  SimListener(SimNetwork& net, std::string key, std::uint64_t id, rdma::Endpoint ep)
      : net_(net), key_(std::move(key)), id_(id), ep_(std::move(ep)) {}
  ~SimListener() override {
    auto it = net_.listeners().find(key_);
    if (it != net_.listeners().end() && it->second.id == id_) net_.listeners().erase(it);
  }
  rdma::Endpoint endpoint() const override { return ep_; }

 private:
  SimNetwork& net_;
  std::string key_;
  std::uint64_t id_;
  rdma::Endpoint ep_;
};

class SimNetwork::Endpoint final : public Network {
 public:
  Endpoint(SimNetwork& net, int process) : net_(net), process_(process) { net_.Register(this); }
  ~Endpoint() override {
    // As a Transport's destructor: every connection of ours is aborted now
    // (our handlers see kAborted before we return), peers see a reset.
    for (auto& [id, weak] : links_) {
      auto l = weak.lock();
      if (!l) continue;
      for (int mine = 0; mine < 2; ++mine) {
        if (l->side[mine].endpoint != this) continue;
        const int other = 1 - mine;
        if (!l->broken) {
          l->broken = true;
          l->q[0].clear();
          l->q[1].clear();
          SimNetwork* net = &net_;
          net_.scheduler().After(net_.DelayFor(process_, l->side[other].process), [net, l, other] {
            net->ReportClose(l, other, rdma::Closed("connection reset by peer"));
          });
        }
        net_.ReportClose(l, mine, rdma::Aborted("network destroyed"));
        l->side[mine].endpoint = nullptr;
      }
    }
    DropListeners();
    net_.Unregister(this);
  }

  Runtime& runtime() override { return *net_.scheduler().RuntimeFor(process_); }

  rdma::Result<std::unique_ptr<rdma::Listener>> Listen(std::string_view address,
                                                       rdma::AcceptHandler on_accept) override {
    if (dead_) return rdma::Aborted("process is dead");
    auto ep = rdma::Endpoint::Parse(address);
    if (!ep.ok()) return ep.status();
    const std::string key = ep->host + ":" + std::to_string(ep->port);
    auto it = net_.listeners().find(key);
    if (it != net_.listeners().end()) return rdma::IoError("bind " + key + ": EADDRINUSE");
    const std::uint64_t id = net_.NextId();
    net_.listeners()[key] = ListenerEntry{this, std::move(on_accept), id};
    keys_.push_back(key);
    return std::unique_ptr<rdma::Listener>(new SimListener(net_, key, id, *ep));
  }

  rdma::Result<std::shared_ptr<rdma::Connection>> Connect(std::string_view address,
                                                          rdma::ConnectionHandlers handlers) override {
    Scheduler& s = net_.scheduler();
    if (dead_) return rdma::Closed("process is dead");
    auto ep = rdma::Endpoint::Parse(address);
    if (!ep.ok()) return ep.status();
    const std::string key = ep->host + ":" + std::to_string(ep->port);
    const TimePoint start = s.now();
    const TimePoint give_up = start + net_.options().connect_timeout;
    auto find = [&]() -> ListenerEntry* {
      auto it = net_.listeners().find(key);
      return it == net_.listeners().end() || it->second.endpoint->dead_ ? nullptr : &it->second;
    };
    ListenerEntry* e = find();
    const int to = e ? e->endpoint->process_ : -1;
    // A round trip (SYN, handshake), then the answer.
    s.SleepUntil(s.now() + net_.DelayFor(process_, to < 0 ? process_ : to) * 2);
    if (dead_) return rdma::Closed("process is dead");
    e = find();
    if (!e) return rdma::Unavailable("connect to " + std::string(address) + ": ECONNREFUSED");
    const int peer = e->endpoint->process_;
    if (net_.Partitioned(process_, peer)) {
      s.SleepUntil(give_up);
      return rdma::Timeout("connect to " + std::string(address) + " timed out");
    }
    if (s.Paused(peer)) {  // the handshake waits for the paused peer
      if (s.PausedUntil(peer) >= give_up) {
        s.SleepUntil(give_up);
        return rdma::Timeout("handshake with " + std::string(address) + " timed out");
      }
      s.SleepUntil(s.PausedUntil(peer));
      if (dead_) return rdma::Closed("process is dead");
      e = find();
      if (!e) return rdma::Unavailable("connect to " + std::string(address) + ": ECONNREFUSED");
    }
    auto l = std::make_shared<Link>();
    l->id = net_.NextId();
    Endpoint* server = e->endpoint;
    l->side[0].process = process_;
    l->side[0].endpoint = this;
    l->side[0].peer_address = std::string(address);
    l->side[1].process = server->process_;
    l->side[1].endpoint = server;
    l->side[1].peer_address = s.ProcessName(process_);
    auto mine = std::make_shared<SimConnection>(net_, l, 0);
    auto theirs = std::make_shared<SimConnection>(net_, l, 1);
    l->side[0].conn = mine;
    l->side[1].conn = theirs;
    l->side[0].h = std::move(handlers);
    links_[l->id] = l;
    server->links_[l->id] = l;
    net_.links_[l->id] = l;
    // The acceptor's handlers (its accept runs on its I/O context; it must not block).
    l->side[1].h = e->accept(theirs);
    s.Trace("connect " + s.ProcessName(process_) + " -> " + s.ProcessName(server->process_) + " link " +
            std::to_string(l->id));
    return std::shared_ptr<rdma::Connection>(mine);
  }

  void Kill() {
    dead_ = true;
    DropListeners();
    for (auto& [id, weak] : links_)
      if (auto l = weak.lock()) net_.Break(l, rdma::StatusCode::kClosed, "connection reset (process crashed)");
  }
  void BreakAll(const char* why) {
    for (auto& [id, weak] : links_)
      if (auto l = weak.lock()) net_.Break(l, rdma::StatusCode::kClosed, why);
  }
  int process() const { return process_; }
  const std::map<std::uint64_t, std::weak_ptr<Link>>& links() const { return links_; }

 private:
  friend class SimNetwork;
  void DropListeners() {
    for (const auto& k : keys_) {
      auto it = net_.listeners().find(k);
      if (it != net_.listeners().end() && it->second.endpoint == this) net_.listeners().erase(it);
    }
    keys_.clear();
  }

  SimNetwork& net_;
  int process_;
  bool dead_ = false;
  std::map<std::uint64_t, std::weak_ptr<Link>> links_;
  std::vector<std::string> keys_;
};

SimNetwork::SimNetwork(Scheduler& s, NetworkOptions o) : s_(s), o_(o) {}
SimNetwork::~SimNetwork() = default;

std::shared_ptr<Network> SimNetwork::NewEndpoint(int p) { return std::make_shared<Endpoint>(*this, p); }

void SimNetwork::Register(Endpoint* e) { endpoints_.push_back(e); }
void SimNetwork::Unregister(Endpoint* e) { endpoints_.erase(std::find(endpoints_.begin(), endpoints_.end(), e)); }

Duration SimNetwork::DelayFor(int from, int to) {
  Rng& r = s_.rng();
  Duration d = r.Micros(o_.base_delay_min_us, o_.base_delay_max_us);
  if (r.Chance(o_.slow_chance)) d += r.Micros(0, o_.slow_max_us);
  if (r.Chance(o_.very_slow_chance)) d += r.Micros(0, o_.very_slow_max_us);
  auto it = clogs_.find(Key(from, to));
  if (it != clogs_.end()) {
    if (it->second.second <= s_.now()) clogs_.erase(it);
    else d += Duration(static_cast<Duration::rep>(r.Uniform(0, static_cast<std::uint64_t>(it->second.first.count()))));
  }
  return d;
}

void SimNetwork::Pump(const std::shared_ptr<Link>& l, int dir) {
  const int recv = 1 - dir;
  auto& q = l->q[dir];
  while (!q.empty()) {
    if (l->broken) {
      q.clear();
      return;
    }
    if (q.front().due > s_.now()) return;  // its own event comes later
    const int from = l->side[dir].process, to = l->side[recv].process;
    if (Partitioned(from, to)) return;  // Heal pumps again
    if (s_.Paused(to)) {
      SimNetwork* net = this;
      s_.At(s_.PausedUntil(to), [net, l, dir] { net->Pump(l, dir); });
      return;
    }
    Link::Pending m = std::move(q.front());
    q.pop_front();
    Link::Side& rs = l->side[recv];
    if (m.fin) {
      ReportClose(l, recv, rdma::Closed("closed by peer"));
      q.clear();
      return;
    }
    if (rs.reported || !rs.open || !rs.conn) continue;  // closed locally: dropped
    const rdma::Message msg(nullptr, 0, std::as_bytes(std::span(m.bytes.data(), m.bytes.size())), false, ++l->seq[dir],
                            false);
    auto conn = rs.conn;  // alive during the handler
    if (rs.h.on_message) rs.h.on_message(*conn, msg);
  }
}

void SimNetwork::ReportClose(const std::shared_ptr<Link>& l, int side, rdma::Status why) {
  Link::Side& sd = l->side[side];
  if (sd.reported) return;
  const bool sync = why.code() == rdma::StatusCode::kAborted;  // our own endpoint going away
  if (!sync && s_.Paused(sd.process)) {
    SimNetwork* net = this;
    s_.At(s_.PausedUntil(sd.process), [net, l, side, why] { net->ReportClose(l, side, why); });
    return;
  }
  sd.reported = true;
  sd.open = false;
  if (s_.options().print_trace)
    s_.Trace("on_close " + s_.ProcessName(sd.process) + " link " + std::to_string(l->id) + ": " + why.ToString());
  auto conn = std::move(sd.conn);
  auto h = std::move(sd.h);
  sd.h = {};
  if (conn && h.on_close) h.on_close(*conn, why);
  if (l->side[0].reported && l->side[1].reported) links_.erase(l->id);
}

void SimNetwork::Break(const std::shared_ptr<Link>& l, rdma::StatusCode why, const char* reason) {
  if (l->broken) return;
  l->broken = true;
  l->q[0].clear();
  l->q[1].clear();
  s_.Trace(std::string("break link ") + std::to_string(l->id) + " (" + s_.ProcessName(l->side[0].process) + " - " +
           s_.ProcessName(l->side[1].process) + "): " + reason);
  for (int side = 0; side < 2; ++side) {
    if (l->side[side].reported) continue;
    SimNetwork* net = this;
    const rdma::Status st(why, reason);
    s_.After(s_.rng().Micros(0, 300), [net, l, side, st] { net->ReportClose(l, side, st); });
  }
}

void SimNetwork::Kill(int p) {
  for (Endpoint* e : std::vector<Endpoint*>(endpoints_))
    if (e->process() == p) e->Kill();
}

void SimNetwork::BreakConnections(int p) {
  for (Endpoint* e : std::vector<Endpoint*>(endpoints_))
    if (e->process() == p) e->BreakAll("connection reset (simulated)");
}

bool SimNetwork::Partitioned(int a, int b) const { return a != b && partitions_.count(Key(a, b)) > 0; }

void SimNetwork::Partition(int a, int b) {
  if (a == b) return;
  const auto k = Key(a, b);
  const std::uint64_t gen = NextId();
  partitions_[k] = gen;
  s_.Trace("partition " + s_.ProcessName(a) + " | " + s_.ProcessName(b));
  // Keepalive: a connection that hears nothing for keepalive_timeout breaks.
  s_.After(o_.keepalive_timeout, [this, k, gen] {
    auto it = partitions_.find(k);
    if (it == partitions_.end() || it->second != gen) return;
    for (auto& [id, weak] : std::map<std::uint64_t, std::weak_ptr<Link>>(links_)) {
      auto l = weak.lock();
      if (!l || l->broken) continue;
      if (Key(l->side[0].process, l->side[1].process) == k)
        Break(l, rdma::StatusCode::kTimeout, "keepalive timeout (partition)");
    }
  });
}

void SimNetwork::Heal(int a, int b) {
  const auto k = Key(a, b);
  if (!partitions_.erase(k)) return;
  s_.Trace("heal " + s_.ProcessName(a) + " | " + s_.ProcessName(b));
  for (auto& [id, weak] : std::map<std::uint64_t, std::weak_ptr<Link>>(links_)) {
    auto l = weak.lock();
    if (!l || l->broken || Key(l->side[0].process, l->side[1].process) != k) continue;
    for (int dir = 0; dir < 2; ++dir) s_.After(DelayFor(a, b), [this, l, dir] { Pump(l, dir); });
  }
}

void SimNetwork::HealAll() {
  std::vector<std::pair<int, int>> keys;
  for (const auto& [k, gen] : partitions_) keys.push_back(k);
  for (const auto& k : keys) Heal(k.first, k.second);
  clogs_.clear();
}

void SimNetwork::Clog(int a, int b, Duration extra, TimePoint until) {
  clogs_[Key(a, b)] = {extra, until};
  s_.Trace("clog " + s_.ProcessName(a) + " - " + s_.ProcessName(b));
}

void SimNetwork::OnPause(int p, Duration d) {
  if (d <= o_.keepalive_timeout) return;
  const TimePoint until = s_.PausedUntil(p);
  s_.After(o_.keepalive_timeout, [this, p, until] {
    if (s_.PausedUntil(p) != until) return;
    for (auto& [id, weak] : std::map<std::uint64_t, std::weak_ptr<Link>>(links_)) {
      auto l = weak.lock();
      if (!l || l->broken) continue;
      if (l->side[0].process == p || l->side[1].process == p)
        Break(l, rdma::StatusCode::kTimeout, "keepalive timeout (process paused)");
    }
  });
}

}  // namespace strata::logservice::sim
