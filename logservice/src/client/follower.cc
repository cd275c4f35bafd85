// LogFollower: the follower mode of the client library; contract in
// include/strata/logservice/follower.h. One RpcChannel per node, made on
// first use and again after it closes; requests are synchronous Calls.
#include "strata/logservice/follower.h"

#include <algorithm>

#include "client_impl.h"

namespace strata::logservice::client {

struct LogFollower::Impl {
  explicit Impl(std::shared_ptr<Runtime> r) : rt(std::move(r)) {}
  std::shared_ptr<Runtime> rt;
  ClusterConfig cfg;
  std::shared_ptr<Network> network;
  std::vector<std::string> addresses;
  std::vector<std::shared_ptr<RpcChannel>> chans;
  std::vector<std::string> errors;
  std::size_t preferred = 0;

  std::shared_ptr<RpcChannel> Channel(std::size_t i) {
    if (chans[i] && chans[i]->open()) return chans[i];
    chans[i].reset();
    auto ch = RpcChannel::Connect(*network, addresses[i], nullptr, nullptr);
    if (!ch.ok()) {
      errors[i] = ch.status().message();
      return nullptr;
    }
    chans[i] = *ch;
    return chans[i];
  }

  // One request to node i; nullopt (errors[i] says why) on a transport failure.
  std::optional<Frame> Call(std::size_t i, const Frame& req) {
    auto ch = Channel(i);
    if (!ch) return std::nullopt;
    auto r = ch->Call(req, cfg.op_timeout);
    if (!r.ok()) {
      errors[i] = r.status().message();
      ch->Close();
      return std::nullopt;
    }
    return std::move(*r);
  }

  std::string Reasons() const {
    std::string out;
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      if (errors[i].empty()) continue;
      if (!out.empty()) out += "; ";
      out += "node" + std::to_string(i + 1) + " (" + addresses[i] + ") " + errors[i];
    }
    return out;
  }

  // A pin operation on every node; ok when W stored it.
  ClientStatus PinAll(wire::PinOp op, const std::string& name, Lsn lsn) {
    if (name.empty() || name.size() > wire::kMaxPinName)
      return ClientStatus(Code::kInvalidArgument, "a pin name has 1.." + std::to_string(wire::kMaxPinName) + " bytes");
    Frame req;
    req.type = MsgType::kPinReq;
    req.pin_op = op;
    req.lsn = lsn;
    req.pins = {repl::Pin{name, lsn}};
    std::size_t done = 0;
    std::string refused;
    for (std::size_t i = 0; i < addresses.size(); ++i) {
      errors[i].clear();
      auto r = Call(i, req);
      if (!r) continue;
      if (r->code == ReplyCode::kOk || (op == wire::PinOp::kDrop && r->code == ReplyCode::kNotFound)) {
        ++done;
      } else {
        errors[i] = std::string(repl::ReplyCodeName(r->code)) + ": " + r->error;
        if (r->code == ReplyCode::kInvalid && refused.empty()) refused = r->error;
      }
    }
    if (done >= cfg.write_quorum) return ClientStatus();
    if (!refused.empty()) return ClientStatus(Code::kInvalidArgument, refused);
    return ClientStatus(Code::kUnavailable, "pin " + name + " stored on " + std::to_string(done) + " of " +
                                                std::to_string(addresses.size()) + " nodes: " + Reasons());
  }
};

ClientResult<std::unique_ptr<LogFollower>> LogFollower::Open(ClusterConfig config) {
  auto impl = std::make_unique<Impl>(config.runtime ? config.runtime : SystemRuntime());
  Impl& f = *impl;
  f.cfg = std::move(config);
  const std::size_t n = f.cfg.nodes.size();
  if (n == 0 || n > wire::kMaxPeers) return ClientStatus(Code::kInvalidArgument, "need 1..16 nodes");
  if (f.cfg.write_quorum == 0 || f.cfg.write_quorum > n)
    return ClientStatus(Code::kInvalidArgument, "write quorum must satisfy 0 < W <= N");
  if (f.cfg.secret.empty()) return ClientStatus(Code::kInvalidArgument, "secret is required");
  for (const auto& a : f.cfg.nodes) f.addresses.push_back(WithScheme(a, f.cfg.transport));
  f.chans.resize(n);
  f.errors.resize(n);
  if (f.cfg.network) {
    f.network = f.cfg.network;
  } else {
    auto t = TransportNetwork(repl::ReplicationTransportOptions(f.cfg.cluster_id, f.cfg.secret));
    if (!t.ok()) return ClientStatus(Code::kInvalidArgument, "transport: " + t.status().message());
    f.network = std::move(t.value());
  }
  return std::unique_ptr<LogFollower>(new LogFollower(std::move(impl)));
}

LogFollower::LogFollower(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LogFollower::~LogFollower() {
  for (auto& ch : impl_->chans)
    if (ch) ch->Close();
  impl_->chans.clear();
  impl_->cfg.network.reset();
  impl_->network.reset();
}

ClientResult<FollowBatch> LogFollower::Follow(Lsn from, std::size_t max_bytes, std::chrono::milliseconds wait,
                                              Lsn have_tail_end) {
  Impl& f = *impl_;
  const std::size_t n = f.addresses.size();
  const auto deadline = f.rt->Now() + wait;
  Frame req;
  req.type = MsgType::kFollowReq;
  req.lsn = from;
  req.max_bytes = static_cast<std::uint32_t>(std::min<std::size_t>(max_bytes, wire::kMaxReadBytes));
  for (;;) {
    std::optional<FollowBatch> empty;
    std::size_t answered = 0, released = 0;
    std::string released_why;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (f.preferred + k) % n;
      auto r = f.Call(i, req);
      if (!r) continue;
      ++answered;
      if (r->code == ReplyCode::kNotFound) {
        ++released;
        released_why = r->error;
        f.errors[i] = r->error;
        continue;
      }
      if (r->code != ReplyCode::kOk) {
        f.errors[i] = std::string(repl::ReplyCodeName(r->code)) + ": " + r->error;
        continue;
      }
      f.errors[i].clear();
      FollowBatch b;
      b.from = from;
      b.frontier = r->lsn;
      b.released = r->released;
      b.node = f.addresses[i];
      for (auto& range : r->ranges) {
        if (range.start != b.end()) break;  // the node sends them contiguous; be strict anyway
        b.bytes += range.bytes;
      }
      if (r->tail.valid() && r->tail.block_lsn == b.end()) {
        b.tail_block = r->tail.block_lsn;
        b.tail_data_end = r->tail.data_end;
        b.tail_image = std::move(r->tail.image);
      }
      if (!b.bytes.empty() || b.tail_data_end > have_tail_end) {
        f.preferred = i;
        return b;
      }
      // Behind what we already have (catching up, rebuilding): ask its peers.
      if (b.frontier < from) {
        if (!empty) empty = std::move(b);
        continue;
      }
      empty = std::move(b);
      break;  // idle at `from`: asked again after the pause, not its peers
    }
    // Every node that answered has released `from`: it is gone for good.
    if (!empty && answered > 0 && released == answered) return ClientStatus(Code::kNotFound, released_why);
    if (f.rt->Now() >= deadline) {
      if (empty) return std::move(*empty);
      return ClientStatus(Code::kUnavailable, "no node answered a follow read at " + std::to_string(from) + ": " + f.Reasons());
    }
    f.rt->SleepFor(std::chrono::milliseconds(2));
  }
}

ClientStatus LogFollower::SetPin(const std::string& name, Lsn lsn) { return impl_->PinAll(wire::PinOp::kSet, name, lsn); }
ClientStatus LogFollower::DropPin(const std::string& name) { return impl_->PinAll(wire::PinOp::kDrop, name, 0); }

ClientResult<std::vector<PinInfo>> LogFollower::ListPins(std::size_t index) {
  Impl& f = *impl_;
  if (index >= f.addresses.size()) return ClientStatus(Code::kInvalidArgument, "no node " + std::to_string(index + 1));
  Frame req;
  req.type = MsgType::kPinReq;
  req.pin_op = wire::PinOp::kList;
  req.pins = {repl::Pin{}};
  auto r = f.Call(index, req);
  if (!r) return ClientStatus(Code::kUnavailable, f.addresses[index] + ": " + f.errors[index]);
  if (r->code != ReplyCode::kOk) return ClientStatus(Code::kFailed, std::string(repl::ReplyCodeName(r->code)) + ": " + r->error);
  std::vector<PinInfo> out;
  for (const auto& p : r->pins) out.push_back(PinInfo{p.name, p.lsn});
  return out;
}

}  // namespace strata::logservice::client
