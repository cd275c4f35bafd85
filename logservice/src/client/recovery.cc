// LogClient::Impl::OpenCluster: how a writer takes over (promise a new
// epoch on a read quorum, choose the winning log, seal every node at its
// end with the recovered tail, bring W nodes up to it, re-put the tail
// where a node kept an older register) and how a reader
// finds the durable end. Reasoning: docs/logservice-replication.md
// "Recovery"; the pure rules are in src/replication/quorum.h. Only members
// vote: a node rebuilding after losing its storage answers "I hold nothing",
// which must not shorten the recovered log (repl::RecoveryVoters,
// docs/design/logservice-node-rebuild.md).
#include "client_impl.h"

namespace strata::logservice::client {

ClientStatus LogClient::Impl::WaitCaughtUp(Lsn target, Clock::time_point deadline, std::size_t need) {
  for (;;) {
    Frame st;
    st.type = MsgType::kStatusReq;
    auto reps = CallAll(Channels(true), st, nullptr);
    std::size_t ok = 0;
    {
      std::lock_guard<std::mutex> l(mu);
      if (fenced) return ClientStatus(Code::kFenced, fence_reason);
      for (auto& [i, f] : reps) {
        if (f.code != ReplyCode::kOk) continue;
        nodes[i].rebuilding = f.state.rebuilding;
        if (f.state.seal_epoch != epoch) continue;
        nodes[i].durable = std::max(nodes[i].durable, std::min(f.state.durable, target));
        nodes[i].state = f.state;
        if (f.state.durable >= target && !f.state.rebuilding) ++ok;
      }
    }
    if (ok >= need) return ClientStatus();
    if (rt->Now() >= deadline)
      return Unavailable("bringing " + std::to_string(need) + " members to LSN " + std::to_string(target));
    rt->SleepFor(milliseconds(20));
  }
}

// Enough nodes answered, but too few of them are members: recovering from
// the others could miss acknowledged bytes. Names the rebuilding nodes.
ClientStatus LogClient::Impl::NoVoters(const std::vector<std::pair<std::size_t, Frame>>& answers) {
  std::string rebuilding, lost;
  std::size_t members = 0;
  for (const auto& [i, f] : answers) {
    if (!f.state.rebuilding) ++members;
    else rebuilding += (rebuilding.empty() ? "" : ", ") + NodeName(i);
    if (f.state.rebuilding && f.state.was_member) lost += (lost.empty() ? "" : ", ") + NodeName(i);
  }
  std::string message = "recovery needs " + std::to_string(r) + " nodes that kept their storage, " +
                        std::to_string(members) + " answered; rebuilding from peers: " + rebuilding;
  // Every node rebuilding would be a new cluster, unless one of them held
  // acknowledged redo before: then it may survive only in what was moved aside.
  if (members == 0 && !lost.empty())
    message += "; " + lost + " lost a log that held acknowledged redo (moved aside as damaged, or missing): " +
               "bring back a node that kept its storage, or restore a node's redo/ from its checked " +
               "redo.damaged-N copy; an empty cluster is never assumed";
  return ClientStatus(Code::kUnavailable, std::move(message));
}

ClientStatus LogClient::Impl::OpenCluster() {
  const auto deadline = rt->Now() + cfg.open_timeout;
  {
    std::vector<Thread> ts;
    for (std::size_t i = 0; i < n; ++i) ts.emplace_back(*rt, "connect" + std::to_string(i + 1), [this, i] { (void)ConnectNode(i); });
    for (auto& t : ts) t.join();
  }
  std::vector<std::string> errors;
  auto chans = Channels(false);
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu);
      for (std::size_t i = 0; i < n; ++i)
        if (!nodes[i].ch && nodes[i].last_error.find("authentication") != std::string::npos)
          return ClientStatus(Code::kAuthFailed, NodeName(i) + " " + nodes[i].last_error);
    }
    if (chans.size() >= r) break;
    if (rt->Now() >= deadline) return Unavailable("open needs " + std::to_string(r) + " nodes");
    rt->SleepFor(cfg.reconnect_interval);
    for (std::size_t i = 0; i < n; ++i) {
      bool up;
      {
        std::lock_guard<std::mutex> l(mu);
        up = nodes[i].ch && nodes[i].ch->open();
      }
      if (!up) (void)ConnectNode(i);
    }
    chans = Channels(false);
  }
  // 1. Learn the highest promised epoch, then promise above it on R nodes.
  Frame st;
  st.type = MsgType::kStatusReq;
  std::vector<std::pair<std::size_t, Frame>> states = CallAll(chans, st, &errors);
  Epoch candidate = 1;
  for (auto& [i, f] : states) candidate = std::max(candidate, f.state.promised_epoch + 1);
  if (!writer()) {
    if (states.size() < r) return Unavailable("read quorum");
    std::vector<repl::NodeState> all;
    for (auto& [i, f] : states) all.push_back(f.state);
    const auto voters = repl::RecoveryVoters(all, n, r);
    if (!voters) return NoVoters(states);
    std::vector<repl::NodeState> ss;
    for (std::size_t k : *voters) ss.push_back(all[k]);
    const std::size_t src = *repl::ChooseSource(ss);
    std::lock_guard<std::mutex> l(mu);
    for (auto& [i, f] : states) {
      nodes[i].state = f.state;
      nodes[i].durable = f.state.durable;
      nodes[i].rebuilding = f.state.rebuilding;
      nodes[i].sealed = f.state.seal_epoch == ss[src].seal_epoch;  // readable from
    }
    reader_seal_epoch = ss[src].seal_epoch;
    seal_lsn = stream_end = ss[src].durable;
    tail = repl::ChooseTail(ss, ss[src].history, stream_end, repl::CountedRegisterEpoch(ss[src]));
    sealed_end = tail.valid() ? tail.data_end : stream_end;
    frontier = sealed_end;
    epoch = ss[src].promised_epoch;
    return ClientStatus();
  }
  std::vector<std::pair<std::size_t, Frame>> promised;
  std::optional<std::vector<std::size_t>> voters;
  for (int refused_rounds = 0; refused_rounds < 16;) {
    Frame p;
    p.type = MsgType::kPromiseReq;
    p.epoch = candidate;
    p.writer_id = writer_id;
    promised.clear();
    Epoch highest = candidate;
    bool refused = false;
    for (auto& [i, f] : CallAll(Channels(false), p, &errors)) {
      if (f.code == ReplyCode::kOk) {
        promised.emplace_back(i, std::move(f));
      } else {
        highest = std::max(highest, f.state.promised_epoch);
        refused = true;
      }
    }
    std::vector<repl::NodeState> all;
    for (auto& [i, f] : promised) all.push_back(f.state);
    if (promised.size() >= r && (voters = repl::RecoveryVoters(all, n, r))) break;
    if (rt->Now() >= deadline) {
      if (promised.size() >= r) return NoVoters(promised);
      return Unavailable("promise of epoch " + std::to_string(candidate));
    }
    if (refused || promised.size() < r) {
      ++refused_rounds;
      candidate = highest + 1;
    } else {
      // Promised by enough nodes, but too few members among them (some are
      // rebuilding): wait for more nodes, under the same epoch.
      rt->SleepFor(cfg.reconnect_interval);
      for (std::size_t i = 0; i < n; ++i) {
        bool up;
        {
          std::lock_guard<std::mutex> l(mu);
          up = nodes[i].ch && nodes[i].ch->open();
        }
        if (!up) (void)ConnectNode(i);
      }
    }
  }
  if (!voters) return Unavailable("promise");
  {
    std::lock_guard<std::mutex> l(mu);
    for (auto& [i, f] : promised) nodes[i].rebuilding = f.state.rebuilding;
  }
  // 2. Recovery: the winning log and its tail define the sealed end, among
  // the members only.
  std::vector<repl::NodeState> ss;
  for (std::size_t k : *voters) ss.push_back(promised[k].second.state);
  const repl::NodeState& src = ss[*repl::ChooseSource(ss)];
  {
    std::lock_guard<std::mutex> l(mu);
    epoch = candidate;
    history = src.history;
    seal_lsn = stream_end = src.durable;
    const bool cut_short = cfg.seal_at.has_value() && *cfg.seal_at <= seal_lsn;
    if (cut_short) seal_lsn = stream_end = *cfg.seal_at;
    if (history.size() >= wire::kMaxHistory)
      return ClientStatus(Code::kFailed, "seal history is full (" + std::to_string(wire::kMaxHistory) + " writer takeovers)");
    tail = cut_short ? repl::TailImage{} : repl::ChooseTail(ss, src.history, seal_lsn, repl::CountedRegisterEpoch(src));
    tail.epoch = epoch;
    // Where the log we recovered ends: a node that holds all of it ranks as
    // ours in later recoveries (repl::RecoveredEpochAt).
    history.push_back(repl::SealEntry{epoch, seal_lsn, tail.valid() ? tail.data_end : seal_lsn});
    tail_version = tail.valid() ? 1 : 0;
  }
  Log("event=recovery epoch=" + std::to_string(candidate) + " source=" + src.node_id +
      " sealed_end=" + std::to_string(seal_lsn) + " tail_end=" + std::to_string(tail.valid() ? tail.data_end : 0));
  // 3. Seal every promised node (each cuts what lies beyond the sealed stream).
  for (auto& [i, f] : promised) SealNode(i);
  {
    std::lock_guard<std::mutex> l(mu);
    if (fenced) return ClientStatus(Code::kFenced, fence_reason);
  }
  // 4. W members must hold the sealed stream (they fill it from the source).
  // A new cluster (every node rebuilding, none ever a member) needs all N:
  // a rebuilding node becomes a member only when every peer answers, so a
  // node lost before that would leave the others rebuilding until it is back.
  const bool bootstrap = voters->size() == n && std::all_of(ss.begin(), ss.end(), [](const repl::NodeState& x) {
    return x.rebuilding;
  });
  ClientStatus s = WaitCaughtUp(seal_lsn, deadline, bootstrap ? n : w);
  if (!s.ok()) return s;
  {
    std::lock_guard<std::mutex> l(mu);
    Lsn adv = 0;
    frontier = 0;
    RecomputeLocked(&adv);
    // Re-put the recovered tail under our epoch on every sealed node that
    // does not show it: those that kept an older register when sealed,
    // being behind (they have caught up now, or will take it on a later
    // resend). The others installed it with the seal.
    for (std::size_t i = 0; i < n; ++i) {
      if (nodes[i].tail_block != tail.block_lsn || nodes[i].tail_end < tail.data_end) nodes[i].tail_sent = 0;
      PumpLocked(i);
    }
  }
  // 5. The recovered tail must be durable on W nodes under our epoch too.
  const Lsn want = tail.valid() ? tail.data_end : seal_lsn;
  {
    std::unique_lock<std::mutex> l(mu);
    cv.wait_until(l, deadline, [&] { return frontier.load() >= want || fenced; });
    if (fenced) return ClientStatus(Code::kFenced, fence_reason);
    if (frontier.load() < want) {
      l.unlock();
      return Unavailable("re-replicating the recovered tail");
    }
    sealed_end = want;
  }
  return ClientStatus();
}

}  // namespace strata::logservice::client
