// LogClient::Impl: the state and machinery behind LogClient (client.h);
// shared by client.cc (the API) and recovery.cc (Open: promise, recovery,
// seal). The writer / reader side of the replication protocol.
//
// Threads:
//   - caller threads: Append/PutTail copy bytes into the retained buffer
//     (every byte above the quorum frontier is kept for resending) and push
//     them to every sealed node (non-blocking sends; a node whose transport
//     window is full is left behind and pumped later);
//   - the transport's I/O thread: node acknowledgements (AppendResp with the
//     node's durable LSN, TailResp with its durable tail) update the per-node
//     acks; the quorum frontier (repl::QuorumFrontier) is recomputed, waiters
//     are woken and on_durable is called (outside the client lock). A node
//     replies to an append twice: once written (in its log file, no
//     fdatasync yet: AppendResp's complete_lsn), once durable; the written
//     quorum frontier is what WaitWritten waits for;
//   - the maintenance thread: reconnects lost nodes every reconnect_interval,
//     promises + seals them in our epoch, resends retained bytes from where
//     they stand (older bytes they fill from peers), re-pumps lagging nodes.
//   Batching: a node with cfg.node_requests_in_flight write requests
//   unanswered is sent no write smaller than a request; the I/O thread,
//   when the node answers one (any reply whose request id is at or above
//   it: the node's worker takes one connection's requests in order), sends
//   what waited as ONE AppendReq (the newest tail carried on it) or one
//   TailReq. It decides when bytes leave, never what counts: the frontier
//   below is computed from the nodes' replies alone
//   (docs/design/logservice-bulk-path.md, section 6).
//   Threads, waits and the clock come from cfg.runtime (runtime.h), the
//   connections from cfg.network (network.h); the deterministic simulator
//   supplies both, production gets SystemRuntime() and an rdma::Transport.
//
// Ordering: one lock (mu) guards the stream, the retained bytes and the
// per-node state. Sends happen under it but never wait (wait = 0).
// Durability frontier: only what W nodes reported as fdatasync'ed counts,
// and only from members: a node that reports `rebuilding` (it lost its
// storage, docs/design/logservice-node-rebuild.md) counts toward no quorum,
// write or read, until a state it sends says it is a member again.
// Written frontier: what W members reported as written or durable (never
// below the durability frontier); the tail counts in it only once durable.
// Failure: a kStaleEpoch reply, or any reply whose header carries a newer
// epoch than ours (the node promised another writer), fences the client for
// good, and such a reply is never counted as an acknowledgement (NewerLocked);
// anything else is a node problem, recorded as that node's last_error for
// status().reason.
#pragma once
#include <algorithm>
#include <atomic>
#include <cassert>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>

#include "codec.h"
#include "quorum.h"
#include "rpc.h"
#include "strata/logservice/client.h"
#include "runtime/network.h"
#include "runtime/runtime.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice::client {

using repl::Frame;
using repl::RpcChannel;
using wire::MsgType;
using wire::ReplyCode;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline constexpr std::size_t kChunk = 128u << 10;

inline std::string WithScheme(const std::string& a, TransportKind k) {
  if (a.find("://") != std::string::npos) return a;
  switch (k) {
    case TransportKind::kRdma: return "rdma://" + a;
    case TransportKind::kTcp: return "tcp://" + a;
    default: return "auto://" + a;
  }
}

struct LogClient::Impl {
  explicit Impl(std::shared_ptr<Runtime> runtime) : rt(std::move(runtime)), cv(*rt) {}

  std::shared_ptr<Runtime> rt;
  ClusterConfig cfg;
  std::size_t n = 0, w = 0, r = 0;
  std::shared_ptr<Network> network;
  std::vector<std::string> addresses;

  struct NodeLink {
    std::shared_ptr<RpcChannel> ch;
    std::uint64_t gen = 0;
    bool sealed = false;
    Lsn durable = 0;
    Lsn written = 0;               // gap-free end in its log file, maybe not synced
    Lsn tail_block = 0, tail_end = 0;
    Lsn sent = 0;                  // next stream LSN to send
    std::uint64_t tail_sent = 0;   // tail version sent
    // Highest quorum frontier this node was told (AppendReq or HintReq):
    // followers read from the node up to it (docs/design/page-server.md 7.1).
    Lsn hint_sent = 0;
    // Batching: ids of the write requests (AppendReq, TailReq) posted on the
    // current channel and not answered yet, oldest first (cleared with a new
    // channel or seal); and write_calls as of the last request that reached
    // the stream end (what the next one covers, for the coalescing counts).
    std::deque<std::uint64_t> unanswered;
    std::uint64_t writes_sent = 0;
    std::string last_error = "not connected yet";
    // Its last append/tail reply was an error (e.g. store_error: disk full):
    // connected and sealed but not acknowledging, so not counted as healthy
    // (and named in the reason) until a write succeeds or it reconnects.
    bool failing = false;
    // As its last state said: lost its storage and not yet rebuilt, so it
    // counts toward no quorum (its acks, checkpoint and page answers neither).
    bool rebuilding = false;
    Clock::time_point next_attempt{};
    Clock::time_point next_poll{};
    Clock::time_point last_ack{};
    repl::NodeState state;
  };

  mutable std::mutex mu;
  CondVar cv;
  std::vector<NodeLink> nodes;
  Epoch epoch = 0;
  std::uint64_t writer_id = 0;
  std::vector<repl::SealEntry> history;
  Lsn seal_lsn = 0, sealed_end = 0;
  Lsn stream_end = 0;
  std::map<Lsn, std::string> retained;  // chunks [start, start+size) above the frontier
  repl::TailImage tail;
  std::uint64_t tail_version = 0;
  std::uint64_t write_calls = 0;  // Append, PutTail, AppendWithTail calls that queued something
  std::atomic<Lsn> frontier{0};
  std::atomic<Lsn> written_frontier{0};
  // Ask nodes for the early "written" reply (LogClient::set_written_acks).
  std::atomic<bool> want_written_acks{true};
  bool fenced = false;
  std::string fence_reason;
  Epoch reader_seal_epoch = 0;  // read-only: the source's seal epoch

  // ---- write-path counters (WriteStats, client.h) ----
  // Relaxed atomics, so write_stats() reads them without mu. `groups` holds
  // the Append/PutTail calls not yet durable on a quorum, in LSN order,
  // with who acknowledged them; bounded (the oldest is dropped unmeasured).
  struct Stats {
    std::atomic<std::uint64_t> appends{0}, tails{0}, window_wait_ns{0}, posts{0}, post_ns{0};
    std::atomic<std::uint64_t> coalesced_posts{0}, coalesced_writes{0};
    std::atomic<std::uint64_t> first_acks{0}, first_ack_ns{0}, second_acks{0}, second_ack_ns{0};
    std::atomic<std::uint64_t> durable_groups{0}, durable_ns{0};
    std::atomic<std::uint64_t> durable_hist[LatencyHistogram::kBuckets] = {};
    std::atomic<std::uint64_t> waits{0}, wait_ns{0}, wait_wakeups{0}, wake_ns{0};
    static void Add(std::atomic<std::uint64_t>& a, std::uint64_t v) { a.fetch_add(v, std::memory_order_relaxed); }
  } stats;
  struct Group {
    Lsn end = 0;
    Clock::time_point queued{};
    std::uint32_t acked = 0;  // bit i: node i reported `end` durable
    std::uint8_t acks = 0;
  };
  static constexpr std::size_t kMaxGroups = 4096;
  std::deque<Group> groups;         // guarded by mu
  Clock::time_point last_advance{};  // guarded by mu: the frontier's last move
  static std::uint64_t Ns(Clock::time_point from, Clock::time_point to) {
    return to > from ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count())
                     : 0;
  }
  void QueueGroupLocked(Lsn end) {
    if (groups.size() >= kMaxGroups) groups.pop_front();
    groups.push_back(Group{end, rt->Now(), 0, 0});
  }
  // What node i vouches for as durable: its block prefix, or the tail it
  // holds when that starts inside the prefix (the rule of QuorumFrontier).
  Lsn NodeEndLocked(const NodeLink& nl) const {
    const Lsn d = std::min(nl.durable, stream_end);
    return nl.tail_block <= d && nl.tail_end > d ? nl.tail_end : d;
  }
  void TrackAckLocked(std::size_t i) {
    if (groups.empty() || i >= 32) return;
    const Lsn end = NodeEndLocked(nodes[i]);
    Clock::time_point now{};
    for (auto& g : groups) {
      if (g.end > end) break;
      if (g.acked & (1u << i)) continue;
      g.acked |= 1u << i;
      if (now == Clock::time_point{}) now = rt->Now();
      if (++g.acks == 1) {
        Stats::Add(stats.first_acks, 1);
        Stats::Add(stats.first_ack_ns, Ns(g.queued, now));
      } else if (g.acks == 2) {
        Stats::Add(stats.second_acks, 1);
        Stats::Add(stats.second_ack_ns, Ns(g.queued, now));
      }
    }
  }
  void TrackDurableLocked(Lsn f) {
    const Clock::time_point now = rt->Now();
    last_advance = now;
    while (!groups.empty() && groups.front().end <= f) {
      const std::uint64_t ns = Ns(groups.front().queued, now);
      Stats::Add(stats.durable_groups, 1);
      Stats::Add(stats.durable_ns, ns);
      Stats::Add(stats.durable_hist[LatencyHistogram::BucketOf(ns)], 1);
      groups.pop_front();
    }
  }

  std::mutex cb_mu;
  Lsn reported = 0;

  bool stopping = false;
  Thread maint;
  // One connector thread per node at a time (a silent node's connect +
  // handshake may take connect_timeout; it must not stall the others).
  std::vector<Thread> connectors;
  std::vector<char> connecting;  // guarded by mu

  bool writer() const { return cfg.mode == OpenMode::kWriter; }
  void Log(const std::string& line) {
    if (cfg.log) cfg.log(line);
  }
  std::string NodeName(std::size_t i) const { return "node" + std::to_string(i + 1) + " (" + addresses[i] + ")"; }

  // ---- status ----
  std::size_t HealthyLocked() const {
    std::size_t h = 0;
    for (const auto& nl : nodes) h += (nl.ch && nl.ch->open() && nl.sealed && !nl.failing && !nl.rebuilding) ? 1 : 0;
    return h;
  }
  std::string ReasonLocked() const {
    if (fenced) return fence_reason;
    std::vector<std::string> bad;
    bool any_failing = false;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& nl = nodes[i];
      const bool open = nl.ch && nl.ch->open();
      if (open && (nl.sealed || !writer()) && !nl.failing && nl.rebuilding) {
        bad.push_back(NodeName(i) + " rebuilding from peers (lost its storage; durable " + std::to_string(nl.durable) + ")");
        continue;
      }
      if (open && (nl.sealed || !writer()) && !nl.failing) continue;
      if (open && nl.failing && (nl.sealed || !writer())) {
        any_failing = true;
        bad.push_back(NodeName(i) + " not acknowledging: " + nl.last_error);
        continue;
      }
      bad.push_back(NodeName(i) + " " + (open ? "not sealed: " : "") + nl.last_error);
    }
    if (bad.empty()) return "";
    std::string s = std::to_string(bad.size()) + " of " + std::to_string(n) + " nodes " +
                    (any_failing ? "unavailable" : "unreachable") + ": ";
    for (std::size_t i = 0; i < bad.size(); ++i) s += (i ? "; " : "") + bad[i];
    return s;
  }
  ClientStatus NoQuorumLocked(const std::string& what) const {
    if (fenced) return ClientStatus(Code::kFenced, fence_reason);
    if (writer() && HealthyLocked() < w)
      return ClientStatus(Code::kUnavailable, what + ": write quorum " + std::to_string(w) + " not available, " +
                                                  ReasonLocked());
    return ClientStatus(Code::kTimeout, what + " timed out" + (ReasonLocked().empty() ? "" : " (" + ReasonLocked() + ")"));
  }

  // ---- frontier ----
  void RecomputeLocked(Lsn* advanced_to) {
    std::vector<repl::NodeAck> acks, written_acks;
    for (const auto& nl : nodes) {
      const bool member = nl.sealed && !nl.rebuilding;
      acks.push_back(repl::NodeAck{member, std::min(nl.durable, stream_end), nl.tail_block, nl.tail_end});
      written_acks.push_back(
          repl::NodeAck{member, std::min(std::max(nl.durable, nl.written), stream_end), nl.tail_block, nl.tail_end});
    }
    const Lsn tail_block = tail.valid() ? tail.block_lsn : 0, tail_end = tail.valid() ? tail.data_end : 0;
    Lsn f = repl::QuorumFrontier(acks, w, tail_block, tail_end);
    const Lsn wf = std::max(f, repl::QuorumFrontier(written_acks, w, tail_block, tail_end));
    if (wf > written_frontier.load()) {
      written_frontier = wf;
      cv.notify_all();
    }
    if (f > frontier.load()) {
      frontier = f;
      *advanced_to = f;
      TrackDurableLocked(f);
      // Drop retained chunks entirely below the stream part of the frontier.
      const Lsn bf = std::min(f, stream_end);
      while (!retained.empty() && retained.begin()->first + retained.begin()->second.size() <= bf)
        retained.erase(retained.begin());
      cv.notify_all();
    }
  }
  void Report(Lsn f) {
    if (f == 0 || !cfg.on_durable) return;
    std::lock_guard<std::mutex> l(cb_mu);
    if (f <= reported) return;
    reported = f;
    cfg.on_durable(f);
  }

  // ---- async acks (I/O thread) ----
  void OnAsync(std::size_t i, std::uint64_t gen, const Frame& f) {
    Lsn adv = 0;
    {
      std::lock_guard<std::mutex> l(mu);
      if (nodes[i].gen != gen) return;
      const bool answered = AnsweredLocked(nodes[i], f.request_id);
      OnReplyLocked(i, f, &adv);
      // The node answered a write request: what waited for that leaves now,
      // coalesced (PumpLocked checks fence and seal itself).
      if (answered) PumpLocked(i);
    }
    Report(adv);
  }
  // Pops node nl's write requests answered by a reply with this id: the
  // node's worker handles one connection's requests in order, so any reply
  // to a request posted later (a written ack, a durable reply, an error, a
  // status poll's answer) says the earlier ones were taken too. True if any.
  static bool AnsweredLocked(NodeLink& nl, std::uint64_t id) {
    bool any = false;
    while (!nl.unanswered.empty() && nl.unanswered.front() <= id) {
      nl.unanswered.pop_front();
      any = true;
    }
    return any;
  }
  // One asynchronous reply from node i (on its current channel), lock held;
  // *adv is set if the frontier advanced (Report it after unlocking).
  void OnReplyLocked(std::size_t i, const Frame& f, Lsn* advanced_to) {
    Lsn& adv = *advanced_to;
    {
      NodeLink& nl = nodes[i];
      // A late PromiseResp answers a round Open gave up on, under an older
      // candidate epoch: its refusal fences that epoch, not ours (found by
      // the simulator's soak, seed 535958196031: a writer fenced itself
      // with a refusal of epoch 42 after it had opened at 44). Any other
      // refusal of our requests carries a newer epoch and fences us.
      const bool stale_promise_round = f.type == MsgType::kPromiseResp && !NewerLocked(f);
      if (stale_promise_round) return;
      if (f.code == ReplyCode::kStaleEpoch || NewerLocked(f)) {
        FenceLocked(i, f);
        return;
      }
      const bool write_reply = f.type == MsgType::kAppendResp || f.type == MsgType::kTailResp;
      if (f.code != ReplyCode::kOk) {
        nl.last_error = std::string(repl::ReplyCodeName(f.code)) + ": " + f.error;
        if (write_reply) nl.failing = true;
        if (f.code == ReplyCode::kNotSealed || f.code == ReplyCode::kConflict)
          nl.sealed = false;  // maintenance re-promises and re-seals it
        Log("event=node_error node=" + std::to_string(i + 1) + " reason=\"" + nl.last_error + "\"");
        cv.notify_all();
        return;
      }
      if (f.type == MsgType::kHintResp) return;  // no news of durability
      nl.last_ack = rt->Now();
      if (write_reply) nl.failing = false;
      if (f.type == MsgType::kStatusResp) {
        nl.rebuilding = f.state.rebuilding;
        if (f.state.seal_epoch == epoch) {
          nl.durable = std::max(nl.durable, std::min(f.state.durable, stream_end));
          nl.written = std::max(nl.written, std::min(f.state.complete, stream_end));
          // Its tail register counts as a TailResp would (the node stores it
          // durably before it shows it): a TailResp the node dropped is
          // recovered by the poll below, as a lost AppendResp is.
          const repl::TailImage& t = f.state.tail;
          if (t.epoch == epoch && (t.block_lsn > nl.tail_block || (t.block_lsn == nl.tail_block && t.data_end > nl.tail_end))) {
            nl.tail_block = t.block_lsn;
            nl.tail_end = t.data_end;
          }
          // A node still behind our sealed stream keeps an older register
          // whose bytes it lacks as blocks (HandleTail): send it the current
          // tail again, it takes it once it has caught up.
          if (tail.valid() && nl.tail_sent == tail_version &&
              (t.epoch != epoch || t.block_lsn != tail.block_lsn || t.data_end < tail.data_end))
            nl.tail_sent = 0;
        }
      } else if (f.type == MsgType::kAppendResp) {
        nl.durable = std::max(nl.durable, f.lsn);
        nl.written = std::max(nl.written, std::min(f.complete_lsn, stream_end));
        if (f.tail.valid()) TakeTailAckLocked(nl, f.tail.block_lsn, f.tail.data_end);
      } else if (f.type == MsgType::kTailResp) {
        TakeTailAckLocked(nl, f.lsn, f.data_end);
        nl.durable = std::max(nl.durable, f.durable_lsn);
      }
      TrackAckLocked(i);
      RecomputeLocked(&adv);
    }
  }
  // The register a node reports holding durably (TailResp, or an AppendResp
  // to an append that carried it).
  static void TakeTailAckLocked(NodeLink& nl, Lsn block_lsn, Lsn data_end) {
    if (block_lsn > nl.tail_block || (block_lsn == nl.tail_block && data_end > nl.tail_end)) {
      nl.tail_block = block_lsn;
      nl.tail_end = data_end;
    }
  }
  // A writer's reply from a node that has promised a newer epoch than ours
  // (the header's epoch): whatever it says, another writer holds that node,
  // so it may already have cut what the reply reports. Not before Open has
  // chosen our epoch (0), and never for readers (they are not fenced).
  bool NewerLocked(const Frame& f) const { return writer() && epoch != 0 && f.epoch > epoch; }
  void FenceLocked(std::size_t i, const Frame& f) {
    if (!fenced) {
      fenced = true;
      fence_reason = "fenced by epoch " + std::to_string(std::max(f.epoch, epoch)) + " on " + NodeName(i) +
                     ": this writer's epoch " + std::to_string(epoch) + " is stale" +
                     (f.error.empty() ? "" : " (" + f.error + ")");
      Log("event=fenced reason=\"" + fence_reason + "\"");
    }
    cv.notify_all();
  }
  // The node reads go to (Read and the read-ahead): open, sealed (for a
  // reader: at the source's seal), the highest durable end. Null if none.
  std::shared_ptr<RpcChannel> ReadNodeLocked(std::size_t* node) const {
    std::shared_ptr<RpcChannel> ch;
    Lsn best = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto& nl = nodes[i];
      if (nl.ch && nl.ch->open() && nl.sealed && (!ch || nl.durable > best)) {
        ch = nl.ch;
        *node = i;
        best = nl.durable;
      }
    }
    return ch;
  }
  // A read reply's verdict (Read and the read-ahead share it): a transport
  // failure, a newer epoch on the node (fences a writer), released redo, or
  // another refusal; OK when its ranges may be used.
  template <typename Reply>
  ClientStatus CheckReadReply(const Reply& rep, std::size_t node) {
    if (!rep.ok()) return ClientStatus(Code::kUnavailable, "read: " + rep.status().message());
    {
      std::lock_guard<std::mutex> l(mu);
      if (NewerLocked(*rep)) {
        FenceLocked(node, *rep);
        return ClientStatus(Code::kFenced, fence_reason);
      }
    }
    if (rep->code == ReplyCode::kNotFound) return ClientStatus(Code::kNotFound, rep->error);
    if (rep->code != ReplyCode::kOk) return ClientStatus(Code::kFailed, "read: " + rep->error);
    return ClientStatus();
  }
  void OnClose(std::size_t i, std::uint64_t gen, const std::string& why) {
    std::lock_guard<std::mutex> l(mu);
    NodeLink& nl = nodes[i];
    if (nl.gen != gen) return;
    nl.sealed = false;
    nl.failing = false;
    nl.last_error = why;
    nl.unanswered.clear();
    Log("event=node_down node=" + std::to_string(i + 1) + " reason=\"" + why + "\"");
    cv.notify_all();
  }

  // ---- connecting (no lock held) ----
  bool ConnectNode(std::size_t i) {
    std::uint64_t gen;
    {
      std::lock_guard<std::mutex> l(mu);
      gen = ++nodes[i].gen;
    }
    auto ch = RpcChannel::Connect(
        *network, addresses[i], [this, i, gen](const Frame& f) { OnAsync(i, gen, f); },
        [this, i, gen](const std::string& why) { OnClose(i, gen, why); });
    std::lock_guard<std::mutex> l(mu);
    NodeLink& nl = nodes[i];
    nl.next_attempt = rt->Now() + cfg.reconnect_interval;
    if (!ch.ok()) {
      nl.last_error = ch.status().message();
      return false;
    }
    if (nl.gen != gen) return false;
    nl.ch = *ch;
    nl.sealed = false;
    nl.unanswered.clear();
    return true;
  }

  // Promise + seal one connected node in our epoch (writer, after Open).
  void SealNode(std::size_t i) {
    std::shared_ptr<RpcChannel> ch;
    Frame p, s;
    {
      std::lock_guard<std::mutex> l(mu);
      ch = nodes[i].ch;
      p.type = MsgType::kPromiseReq;
      p.epoch = epoch;
      p.writer_id = writer_id;
      s.type = MsgType::kSealReq;
      s.epoch = epoch;
      s.lsn = seal_lsn;
      s.commit_lsn = std::min(frontier.load(), stream_end);
      s.self_index = static_cast<std::uint32_t>(i);
      s.history = history;
      s.peers = addresses;
      // All we may have acknowledged or recovered, tail included: a node
      // rebuilding from peers must hold this much before it is a member.
      s.certify_lsn = std::max({frontier.load(), seal_lsn, tail.valid() ? tail.data_end : Lsn{0}});
      // The recovered tail, installed by the node with the seal in one
      // durable write: the seal may cut blocks that carry its bytes
      // (docs/design/logservice-seal-with-tail.md). Only while it is still
      // the tail at the seal LSN; a later one goes by TailReq.
      if (tail.valid() && tail.block_lsn == seal_lsn) s.tail = repl::TailImage{epoch, seal_lsn, tail.data_end, tail.image};
    }
    if (!ch) return;
    auto pr = ch->Call(p, cfg.op_timeout);
    auto sr = pr.ok() && pr->code == ReplyCode::kOk ? ch->Call(s, cfg.op_timeout) : pr;
    std::unique_lock<std::mutex> l(mu);
    NodeLink& nl = nodes[i];
    if (nl.ch != ch) return;
    if (!sr.ok()) {
      nl.last_error = sr.status().message();
      return;
    }
    if (sr->code == ReplyCode::kStaleEpoch || NewerLocked(*sr)) return FenceLocked(i, *sr);
    if (sr->code != ReplyCode::kOk) {
      nl.last_error = std::string(repl::ReplyCodeName(sr->code)) + ": " + sr->error;
      return;
    }
    nl.sealed = true;
    nl.failing = false;
    nl.hint_sent = 0;  // maybe a restarted node: tell it our frontier again
    nl.state = sr->state;
    nl.rebuilding = sr->state.rebuilding;
    nl.durable = std::max(nl.durable, std::min(sr->state.durable, stream_end));
    nl.written = std::max(nl.written, std::min(sr->state.complete, stream_end));
    nl.sent = std::max(nl.durable, retained.empty() ? stream_end : retained.begin()->first);
    nl.tail_sent = 0;
    nl.unanswered.clear();  // replies to what went before the seal count no more
    nl.writes_sent = write_calls;
    // The seal installed our tail (or the node kept an older register, being
    // behind: then the TailReq below and the status poll resend it).
    const repl::TailImage& t = sr->state.tail;
    if (tail.valid() && t.epoch == epoch && t.block_lsn == tail.block_lsn && t.data_end >= tail.data_end) {
      nl.tail_block = std::max(nl.tail_block, t.block_lsn);
      nl.tail_end = std::max(nl.tail_end, t.data_end);
      if (t.data_end == tail.data_end) nl.tail_sent = tail_version;
    }
    nl.last_error.clear();
    Log("event=node_sealed node=" + std::to_string(i + 1) + " epoch=" + std::to_string(epoch) +
        " durable=" + std::to_string(sr->state.durable));
    // The seal reply may be the only news of durability whose AppendResp
    // was lost with the old connection; with nothing left to send, no other
    // reply would move the frontier (fake_nic_fault_test.cc, seed 3127).
    Lsn adv = 0;
    RecomputeLocked(&adv);
    PumpLocked(i);
    l.unlock();
    Report(adv);
  }

  // ---- the writer's calls (client.cc), lock held ----
  // Copies bytes (non-empty) into the retained stream at its end, waiting up
  // to `wait` for room in the in-flight window; queues one measured group
  // unless the caller measures the write as a whole (AppendWithTail).
  ClientStatus AppendLocked(std::unique_lock<std::mutex>& l, Lsn start_lsn, std::string_view bytes,
                            std::chrono::milliseconds wait, bool queue_group = true) {
    if (fenced) return ClientStatus(Code::kFenced, fence_reason);
    if (start_lsn != stream_end)
      return ClientStatus(Code::kInvalidArgument, "append at " + std::to_string(start_lsn) +
                                                      " but the stream ends at " + std::to_string(stream_end));
    auto room = [&] {
      const Lsn f = std::min(frontier.load(), stream_end);
      return fenced || stream_end - f == 0 || stream_end + bytes.size() - f <= cfg.max_inflight_bytes;
    };
    if (!room()) {
      const auto t0 = rt->Now();
      const bool got = cv.wait_until(l, t0 + wait, room);
      Stats::Add(stats.window_wait_ns, Ns(t0, rt->Now()));
      if (!got) return NoQuorumLocked("append (in-flight window full)");
    }
    if (fenced) return ClientStatus(Code::kFenced, fence_reason);
    if (start_lsn != stream_end)  // another caller appended while we waited
      return ClientStatus(Code::kInvalidArgument, "append at " + std::to_string(start_lsn) +
                                                      " but the stream ends at " + std::to_string(stream_end));
    for (std::size_t off = 0; off < bytes.size(); off += kChunk) {
      const auto piece = bytes.substr(off, kChunk);
      retained.emplace(stream_end, std::string(piece));
      stream_end += piece.size();
    }
    Stats::Add(stats.appends, 1);
    if (queue_group) QueueGroupLocked(stream_end);
    if (tail.valid() && tail.block_lsn < stream_end) tail = repl::TailImage{};  // retired
    return ClientStatus();
  }
  // A tail for block_lsn is taken only at the stream end (`end`: the end
  // the stream will have), holding its data, never shrinking.
  ClientStatus CheckTailLocked(Lsn block_lsn, Lsn end, std::string_view image, Lsn data_end) const {
    if (block_lsn != end || data_end <= block_lsn || data_end - block_lsn > image.size() ||
        image.size() > wire::kMaxTailImage)
      return ClientStatus(Code::kInvalidArgument, "tail must start at the stream end and hold its data");
    if (tail.valid() && tail.block_lsn == block_lsn && data_end < tail.data_end)
      return ClientStatus(Code::kInvalidArgument, "tail data end went backwards");
    return ClientStatus();
  }
  void SetTailLocked(Lsn block_lsn, std::string_view image, Lsn data_end) {
    tail = repl::TailImage{epoch, block_lsn, data_end, std::string(image)};
    ++tail_version;
    Stats::Add(stats.tails, 1);
    QueueGroupLocked(data_end);
  }
  void PumpAllLocked() {
    for (std::size_t i = 0; i < n; ++i) PumpLocked(i);
  }

  // ---- sending (lock held, never waits) ----
  // Whether node nl has as many write requests unanswered as it may
  // (cfg.node_requests_in_flight; 0: no limit).
  bool HoldingLocked(const NodeLink& nl) const {
    return cfg.node_requests_in_flight > 0 && nl.unanswered.size() >= cfg.node_requests_in_flight;
  }
  // The retained bytes [from, from + len), len > 0, inside [first retained,
  // stream_end): one chunk's substring, or the chunks' bytes joined.
  std::string GatherLocked(Lsn from, std::size_t len) const {
    auto it = retained.upper_bound(from);
    --it;  // chunk containing from
    std::size_t off = from - it->first;
    if (off + len <= it->second.size()) return it->second.substr(off, len);
    std::string out;
    out.reserve(len);
    for (; out.size() < len; ++it, off = 0) {
      assert(it != retained.end() && it->first + off == from + out.size());  // chunks are contiguous
      out.append(it->second, off, std::min(it->second.size() - off, len - out.size()));
    }
    return out;
  }
  // A write request went to node nl with this id; `to_end`: it reached the
  // stream end (tail included if one was due), so it carried every write
  // call since the last such request.
  void PostedWriteLocked(NodeLink& nl, std::uint64_t id, bool to_end) {
    nl.unanswered.push_back(id);
    if (!to_end) return;
    const std::uint64_t calls = write_calls - nl.writes_sent;
    nl.writes_sent = write_calls;
    if (calls > 1) {
      Stats::Add(stats.coalesced_posts, 1);
      Stats::Add(stats.coalesced_writes, calls);
    }
  }
  Status PostTimedLocked(NodeLink& nl, Frame f, std::uint64_t* id) {
    const Clock::time_point t0 = rt->Now();
    Status s = nl.ch->Post(std::move(f), milliseconds(0), id);
    Stats::Add(stats.posts, 1);
    Stats::Add(stats.post_ns, Ns(t0, rt->Now()));
    return s;
  }
  // Sends node i what it is due: [nl.sent, stream_end) in requests of up to
  // kChunk, the last one carrying the tail register when that is due, or a
  // TailReq alone. A node holding (HoldingLocked when the pump starts) gets
  // full requests only; the rest waits for its answer (OnAsync), so that
  // everything written meanwhile leaves as one request, and of the tails
  // only the newest (a register only ever grows: the newest wins).
  void PumpLocked(std::size_t i) {
    NodeLink& nl = nodes[i];
    if (!nl.sealed || !nl.ch || !nl.ch->open() || fenced) return;
    const Lsn first = retained.empty() ? stream_end : retained.begin()->first;
    if (nl.sent < first) nl.sent = first;  // older bytes: the node fills them from peers
    const bool hold = HoldingLocked(nl);
    while (nl.sent < stream_end) {
      const Lsn due = stream_end - nl.sent;
      if (hold && due < kChunk) return;
      const std::size_t len = static_cast<std::size_t>(std::min<Lsn>(due, kChunk));
      const bool to_end = len == due;
      Frame f;
      f.type = MsgType::kAppendReq;
      f.epoch = epoch;
      f.lsn = nl.sent;
      f.commit_lsn = std::min(frontier.load(), stream_end);
      const Lsn hint = f.commit_lsn;
      f.data = GatherLocked(nl.sent, len);
      if (want_written_acks.load(std::memory_order_relaxed)) f.append_flags = wire::kAppendWantsWrittenAck;
      // The last request carries the tail register when it is due: one
      // message (and one fdatasync on the node) for a write that completed
      // blocks and left a partial one.
      const bool with_tail = to_end && tail.valid() && tail.block_lsn == stream_end && nl.tail_sent != tail_version;
      if (with_tail) {
        f.append_flags |= wire::kAppendCarriesTail;
        f.tail = tail;
      }
      // Up to a kChunk of redo: over the 32 KiB receive slot the AppendReq
      // goes by SendBulk, into the node's bulk ring (send_path.h).
      std::uint64_t id = 0;
      if (!PostTimedLocked(nl, std::move(f), &id).ok()) return;  // busy or closed: maintenance retries
      nl.sent += len;
      if (with_tail) nl.tail_sent = tail_version;
      nl.hint_sent = std::max(nl.hint_sent, hint);
      PostedWriteLocked(nl, id, to_end);
    }
    if (tail.valid() && nl.tail_sent != tail_version && !hold) {
      Frame f;
      f.type = MsgType::kTailReq;
      f.epoch = epoch;
      f.lsn = tail.block_lsn;
      f.data_end = tail.data_end;
      f.data = tail.image;
      std::uint64_t id = 0;
      if (PostTimedLocked(nl, std::move(f), &id).ok()) {
        nl.tail_sent = tail_version;
        PostedWriteLocked(nl, id, true);
      }
    }
  }

  void MaintenanceLoop() {
    for (;;) {
      std::vector<std::size_t> reconnect, reseal;
      {
        std::unique_lock<std::mutex> l(mu);
        cv.wait_until(l, rt->Now() + milliseconds(10), [&] { return stopping; });
        if (stopping) return;
        const auto now = rt->Now();
        for (std::size_t i = 0; i < n; ++i) {
          NodeLink& nl = nodes[i];
          if (connecting[i]) continue;
          if (!nl.ch || !nl.ch->open()) {
            if (now >= nl.next_attempt) {
              reconnect.push_back(i);
              connecting[i] = 1;
            }
          } else if (writer() && !nl.sealed && !fenced && now >= nl.next_attempt) {
            reseal.push_back(i);
            connecting[i] = 1;
            nl.next_attempt = now + cfg.reconnect_interval;
          } else {
            PumpLocked(i);
            // Nothing left to send but the node has not heard our newest
            // frontier (the last commit of an idle writer, a tail's bytes):
            // tell it, so that followers reading from it see that much.
            const Lsn f = frontier.load();
            if (writer() && nl.sealed && nl.ch && !fenced && nl.sent >= stream_end && f > nl.hint_sent) {
              Frame h;
              h.type = MsgType::kHintReq;
              h.epoch = epoch;
              h.lsn = f;
              if (nl.ch->Post(std::move(h)).ok()) nl.hint_sent = f;
            }
            // A node behind the frontier catches up from peers on its own;
            // poll its state so that acks (and status()) see it.
            // Also covers an acknowledgement lost to a busy reply path, for
            // appends and for the tail.
            const bool lagging = nl.durable < frontier.load();
            const bool tail_unacked = tail.valid() && nl.tail_sent == tail_version &&
                                      (nl.tail_block != tail.block_lsn || nl.tail_end < tail.data_end);
            // And a write request whose answers were all lost: what waits
            // behind it (batching) leaves when the poll's answer comes.
            const bool silent = (nl.durable < std::min(nl.sent, stream_end) || tail_unacked || !nl.unanswered.empty()) &&
                                now - nl.last_ack > milliseconds(200);
            // And a rebuilding node, until its state says it is a member.
            if (nl.sealed && (lagging || silent || nl.rebuilding) && now >= nl.next_poll) {
              nl.next_poll = now + milliseconds(50);
              Frame st;
              st.type = MsgType::kStatusReq;
              nl.ch->Post(std::move(st)).IgnoreError();
            }
          }
        }
      }
      for (std::size_t i : reconnect) Launch(i, true);
      for (std::size_t i : reseal) Launch(i, false);
    }
  }

  void Launch(std::size_t i, bool connect) {
    if (connectors[i].joinable()) connectors[i].join();  // finished: connecting[i] was 0
    connectors[i] = Thread(*rt, "connect" + std::to_string(i + 1), [this, i, connect] {
      bool up = !connect || ConnectNode(i);
      if (up) {
        if (writer()) {
          SealNode(i);
        } else {
          std::lock_guard<std::mutex> l(mu);
          nodes[i].sealed = true;
        }
      }
      std::lock_guard<std::mutex> l(mu);
      connecting[i] = 0;
    });
  }

  // ---- sync helpers for Open and the request/response operations ----
  std::vector<std::pair<std::size_t, std::shared_ptr<RpcChannel>>> Channels(bool need_sealed) {
    std::vector<std::pair<std::size_t, std::shared_ptr<RpcChannel>>> out;
    std::lock_guard<std::mutex> l(mu);
    for (std::size_t i = 0; i < n; ++i)
      if (nodes[i].ch && nodes[i].ch->open() && (!need_sealed || nodes[i].sealed)) out.emplace_back(i, nodes[i].ch);
    return out;
  }

  // Sends `req` to the given nodes in parallel; returns OK replies by node index.
  std::vector<std::pair<std::size_t, Frame>> CallAll(
      const std::vector<std::pair<std::size_t, std::shared_ptr<RpcChannel>>>& chans, const Frame& req,
      std::vector<std::string>* errors) {
    std::vector<std::optional<Frame>> res(chans.size());
    std::vector<std::string> err(chans.size());
    std::vector<Thread> ts;
    for (std::size_t k = 0; k < chans.size(); ++k) {
      ts.emplace_back(*rt, "call" + std::to_string(chans[k].first + 1), [&, k] {
        auto r = chans[k].second->Call(req, cfg.op_timeout);
        if (r.ok()) res[k] = std::move(*r);
        else err[k] = r.status().message();
      });
    }
    for (auto& t : ts) t.join();
    std::vector<std::pair<std::size_t, Frame>> out;
    for (std::size_t k = 0; k < chans.size(); ++k) {
      const std::size_t i = chans[k].first;
      if (res[k]) {
        std::lock_guard<std::mutex> l(mu);
        if (writer() && req.type != MsgType::kPromiseReq &&
            (res[k]->code == ReplyCode::kStaleEpoch || NewerLocked(*res[k]))) {
          FenceLocked(i, *res[k]);
          continue;  // not an answer to count
        }
        out.emplace_back(i, std::move(*res[k]));
      } else if (errors) {
        errors->push_back(NodeName(i) + " " + err[k]);
      }
      if (!res[k]) {
        std::lock_guard<std::mutex> l(mu);
        nodes[i].last_error = err[k];
      }
    }
    return out;
  }

  ClientStatus Unavailable(const std::string& what) {
    std::lock_guard<std::mutex> l(mu);
    return ClientStatus(fenced ? Code::kFenced : Code::kUnavailable,
                        fenced ? fence_reason : what + ": " + ReasonLocked());
  }

  // Whether node i counts toward a quorum (it is not rebuilding).
  bool MemberLocked(std::size_t i) const { return !nodes[i].rebuilding; }
  bool Member(std::size_t i) const {
    std::lock_guard<std::mutex> l(mu);
    return MemberLocked(i);
  }

  // Which OK replies count toward a read quorum (checkpoint, page): the
  // members', or all of them when every node answered and none is a member
  // (a new cluster; the rule of repl::RecoveryVoters). Indexes into `reps`.
  std::vector<std::size_t> ReadVoters(const std::vector<std::pair<std::size_t, Frame>>& reps) const {
    std::vector<std::size_t> ok, members;
    std::lock_guard<std::mutex> l(mu);
    for (std::size_t k = 0; k < reps.size(); ++k) {
      if (reps[k].second.code != ReplyCode::kOk) continue;
      ok.push_back(k);
      if (MemberLocked(reps[k].first)) members.push_back(k);
    }
    return members.empty() && ok.size() == n ? ok : members;
  }

  // Sends q to every writable node and succeeds when a write quorum of
  // members says OK. A fence wins over everything; else a refusing node's
  // own words.
  ClientStatus WriteToQuorum(const Frame& q, const std::string& what) {
    std::size_t ok = 0;
    std::string err;
    for (auto& [i, f] : CallAll(Channels(true), q, nullptr)) {
      if (f.code == ReplyCode::kOk) ok += Member(i) ? 1 : 0;
      else err = f.error;
    }
    {
      std::lock_guard<std::mutex> l(mu);
      if (fenced) return ClientStatus(Code::kFenced, fence_reason);
    }
    if (ok >= w) return ClientStatus();
    if (!err.empty()) return ClientStatus(Code::kFailed, what + ": " + err);
    return Unavailable(what);
  }

  ClientStatus OpenCluster();
  // Until `need` members sealed in our epoch report durable >= target.
  ClientStatus WaitCaughtUp(Lsn target, Clock::time_point deadline, std::size_t need);
  ClientStatus NoVoters(const std::vector<std::pair<std::size_t, Frame>>& answers);
};


}  // namespace strata::logservice::client
