// Node: the log service node; design comment in node.h.
#include "node.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

#include "codec.h"
#include "log_quarantine.h"
#include "node_meta.h"
#include "quorum.h"
#include "rpc.h"
#include "send_path.h"
#include "storage/checkpoint_store.h"
#include "storage/log_store.h"
#include "runtime/network.h"
#include "storage/page_store.h"
#include "runtime/runtime.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice::server {

using repl::Frame;
using wire::MsgType;
using wire::ReplyCode;

namespace {
Frame Reply(const Frame& req, MsgType type) {
  Frame r;
  r.type = type;
  r.request_id = req.request_id;
  return r;
}
MsgType ResponseTypeOf(MsgType t) { return static_cast<MsgType>(static_cast<std::uint8_t>(t) + 1); }
}  // namespace

struct Node::Impl {
  explicit Impl(std::shared_ptr<Runtime> r)
      : rt(std::move(r)), q_cv(*rt), ack_cv(*rt), catchup_cv(*rt), scrub_cv(*rt) {}

  std::shared_ptr<Runtime> rt;  // threads, waits, clock (runtime.h)
  NodeOptions opt;
  std::shared_ptr<FileSystem> fs = PosixFileSystem();
  std::unique_ptr<LogStore> log;
  std::unique_ptr<PageStore> pages;
  std::unique_ptr<CheckpointStore> ckpt;
  std::shared_ptr<Network> network;  // null once stopped
  std::unique_ptr<rdma::Listener> listener;
  std::string address;

  // Owned by the worker, read by others under meta_mu. Holds the tail
  // register too (meta.tail).
  mutable std::mutex meta_mu;
  NodeMeta meta;
  Lsn commit_hint = 0;
  // The writer's acknowledged frontier as HintReq brings it (tail included),
  // and the seal epoch it came in: a follower is given the sealed epoch's
  // tail register only when this covers it (HandleFollow).
  Lsn ack_hint = 0;
  Epoch ack_hint_epoch = 0;
  std::mutex seal_mu;  // Seal (worker) vs. gap-fill appends (catch-up)
  // Serializes read-modify-save of node_meta: the worker (promise, seal) and
  // the catch-up thread (a rebuilt node becoming a member). Taken before
  // seal_mu and meta_mu, never while holding either.
  std::mutex meta_save_mu;
  std::string last_member_wait;  // catch-up thread: last rebuild_wait reason logged

  struct Work {
    std::shared_ptr<rdma::Connection> conn;
    Frame frame;
    Runtime::TimePoint received{}, appended{};  // stage clocks (StageAppend, StageTail)
    bool tail_written = false;  // a TailReq whose register went into the journal
  };
  // The newest register written to the journal (maybe not yet durable);
  // meta.tail is the one published (durable). Under meta_mu.
  repl::TailImage tail_written;
  std::mutex q_mu;
  CondVar q_cv;
  std::deque<Work> queue;
  std::vector<Work> acks;  // appends waiting for the sync thread
  CondVar ack_cv;
  CondVar catchup_cv;
  CondVar scrub_cv;
  bool stopping = false;
  Thread worker, syncer, catchup, scrubber;
  // Set once when a read or the scrub finds a record failing its CRC: the
  // node stops acknowledging and reports itself rebuilding until restarted.
  std::atomic<bool> log_damaged{false};

  std::atomic<std::uint64_t> counters[static_cast<int>(wire::NodeCounter::kCount)] = {};
  void Count(wire::NodeCounter c, std::uint64_t n = 1) { counters[static_cast<int>(c)] += n; }

  // ---- stage clocks (wire::NodeCounter after kSeals): one Now() per boundary ----
  static std::uint64_t Ns(Runtime::TimePoint from, Runtime::TimePoint to) {
    return to > from ? static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(to - from).count())
                     : 0;
  }
  void StageAppend(Work& w, Runtime::TimePoint started) {
    w.appended = rt->Now();
    Count(wire::NodeCounter::kAppendQueueNs, Ns(w.received, started));
    Count(wire::NodeCounter::kAppendWriteNs, Ns(started, w.appended));
  }
  void StageTail(Work& w, Runtime::TimePoint started) {
    w.appended = rt->Now();
    Count(wire::NodeCounter::kTailRequests);
    Count(wire::NodeCounter::kTailQueueNs, Ns(w.received, started));
    Count(wire::NodeCounter::kTailSaveNs, Ns(started, w.appended));
  }

  void Log(std::string_view level, const std::string& line) {
    if (opt.log) opt.log(level, "node=" + opt.node_id + " " + line);
  }

  // ---- transport side ----
  rdma::ConnectionHandlers Accept(const std::shared_ptr<rdma::Connection>& c) {
    std::weak_ptr<rdma::Connection> weak = c;
    rdma::ConnectionHandlers h;
    h.on_message = [this, weak](rdma::Connection& conn, const rdma::Message& m) {
      Frame f;
      Status s = repl::Decode(m.payload(), &f);
      if (s.ok() && wire::IsResponse(f.type)) s = Status::InvalidArgument("response sent to a node");
      if (!s.ok()) {
        Log("warn", "event=bad_message peer=" + conn.peer_address() + " reason=\"" + s.message() + "\"");
        conn.Close();
        return;
      }
      auto sp = weak.lock();
      if (!sp) return;
      std::lock_guard<std::mutex> l(q_mu);
      queue.push_back(Work{std::move(sp), std::move(f), rt->Now()});
      q_cv.notify_one();
    };
    h.on_close = [](rdma::Connection&, const rdma::Status&) {};
    return h;
  }

  void Send(const std::shared_ptr<rdma::Connection>& c, const Frame& f) {
    const std::string b = repl::Encode(f);
    // Bounded: a stalled peer must not hold up the worker. A lost
    // acknowledgement is recovered by the writer's status poll. Large
    // replies (ReadResp to readers and gap-filling peers) go by SendBulk.
    rdma::Status s = repl::SendMessage(*c, b, std::chrono::milliseconds(500));
    // Routine when the peer died or stalls (info): requesters retry, and the
    // writer re-reads a node's state when its acks lag.
    if (!s.ok() && s.code() != rdma::StatusCode::kClosed)
      Log("info", "event=reply_dropped peer=" + c->peer_address() + " reason=\"" + s.message() + "\"");
  }

  // ---- state ----
  repl::NodeState State() {
    repl::NodeState st;
    st.node_id = opt.node_id;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      st.promised_epoch = meta.promised_epoch;
      st.writer_id = meta.writer_id;
      st.seal_epoch = meta.seal_epoch;
      st.seal_lsn = meta.seal_lsn;
      st.history = meta.history;
      st.tail = meta.tail;
      st.tail_anchored = meta.tail_anchored;
      st.rebuilding = meta.rebuilding || log_damaged.load();
      st.was_member = meta.was_member;
    }
    const LogFrontier fr = log->frontier();
    st.last_epoch = fr.max_epoch;
    st.released = fr.released_lsn;
    st.durable = fr.durable_lsn;
    st.complete = fr.complete_lsn;
    st.highest = fr.highest_lsn;
    const LogStoreStats ls = log->stats();
    counters[static_cast<int>(wire::NodeCounter::kFdatasyncs)] = ls.fdatasyncs;
    counters[static_cast<int>(wire::NodeCounter::kSegments)] = ls.segments;
    counters[static_cast<int>(wire::NodeCounter::kDiskBytes)] = DiskBytes();
    for (auto& c : counters) st.counters.push_back(c.load());
    return st;
  }

  std::uint64_t DiskBytes() {
    std::uint64_t total = 0;
    for (const std::string sub : {"redo", "pages"}) {
      const std::string dir = JoinPath(opt.data_dir, sub);
      auto names = fs->ListDir(dir);
      if (!names.ok()) continue;
      for (const auto& n : *names) {
        auto f = fs->OpenReadable(JoinPath(dir, n));
        if (!f.ok()) continue;
        auto sz = (*f)->Size();
        if (sz.ok()) total += *sz;
      }
    }
    return total;
  }

  // Epoch check for a writer request. Sets the reply code on refusal.
  bool CheckWriter(const Frame& req, Frame* rep, bool need_seal) {
    std::lock_guard<std::mutex> l(meta_mu);
    return CheckWriterLocked(req, rep, need_seal);
  }
  bool CheckWriterLocked(const Frame& req, Frame* rep, bool need_seal) {
    rep->epoch = meta.promised_epoch;
    if (log_damaged.load()) {
      rep->code = ReplyCode::kStoreError;
      rep->error = "node " + opt.node_id + ": its log is damaged; it restarts and rebuilds it from its peers";
      return false;
    }
    if (req.epoch < meta.promised_epoch) {
      rep->code = ReplyCode::kStaleEpoch;
      rep->error = "epoch " + std::to_string(req.epoch) + " is stale: node " + opt.node_id + " promised epoch " +
                   std::to_string(meta.promised_epoch);
      Count(wire::NodeCounter::kStaleRefused);
      return false;
    }
    if (req.epoch > meta.promised_epoch || (need_seal && meta.seal_epoch != req.epoch)) {
      rep->code = ReplyCode::kNotSealed;
      rep->error = "epoch " + std::to_string(req.epoch) + " not promised/sealed on " + opt.node_id;
      return false;
    }
    return true;
  }

  static ReplyCode CodeOf(const Status& s) {
    switch (s.code()) {
      case StatusCode::kStaleEpoch: return ReplyCode::kStaleEpoch;
      case StatusCode::kConflict: return ReplyCode::kConflict;
      case StatusCode::kInvalidArgument: return ReplyCode::kInvalid;
      case StatusCode::kNotFound: return ReplyCode::kNotFound;
      default: return ReplyCode::kStoreError;
    }
  }
  void Fail(Frame* rep, const Status& s) {
    rep->code = CodeOf(s);
    rep->error = s.message();
    if (rep->code == ReplyCode::kStoreError) Log("error", "event=store_error reason=\"" + s.message() + "\"");
  }

  // ---- worker ----
  void WorkerLoop() {
    for (;;) {
      Work w;
      {
        std::unique_lock<std::mutex> l(q_mu);
        q_cv.wait(l, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        w = std::move(queue.front());
        queue.pop_front();
      }
      Handle(w);
    }
  }

  void Handle(Work& w) {
    const Frame& req = w.frame;
    Frame rep = Reply(req, ResponseTypeOf(req.type));
    const Runtime::TimePoint started = rt->Now();
    switch (req.type) {
      case MsgType::kPromiseReq: HandlePromise(req, &rep); break;
      case MsgType::kSealReq: HandleSeal(req, &rep); break;
      case MsgType::kAppendReq:
        if (HandleAppend(req, &rep) && (!CarriesTail(req) || WriteTail(w, req.tail, &rep))) {
          StageAppend(w, started);
          if (req.append_flags & wire::kAppendWantsWrittenAck) SendWrittenAck(w);
          std::lock_guard<std::mutex> l(q_mu);
          acks.push_back(std::move(w));
          ack_cv.notify_one();
          return;
        }
        break;
      case MsgType::kTailReq:
        if (HandleTail(w, &rep)) {
          StageTail(w, started);
          std::lock_guard<std::mutex> l(q_mu);
          acks.push_back(std::move(w));
          ack_cv.notify_one();
          return;
        }
        StageTail(w, started);
        break;
      case MsgType::kReadReq: HandleRead(req, &rep); break;
      case MsgType::kCkptSetReq: HandleCkptSet(req, &rep); break;
      case MsgType::kCkptGetReq: HandleCkptGet(&rep); break;
      case MsgType::kPagePutReq: HandlePagePut(req, &rep); break;
      case MsgType::kPageGetReq: HandlePageGet(req, &rep); break;
      case MsgType::kStatusReq: rep.state = State(); break;
      case MsgType::kReleaseReq: HandleRelease(req, &rep); break;
      case MsgType::kFollowReq: HandleFollow(req, &rep); break;
      case MsgType::kHintReq: HandleHint(req, &rep); break;
      case MsgType::kPinReq: HandlePin(req, &rep); break;
      default: rep.code = ReplyCode::kInvalid; rep.error = "not a request"; break;
    }
    {
      // Every reply carries the promise as it stands when the reply is
      // built: a writer that sees a newer epoch knows it is fenced.
      std::lock_guard<std::mutex> l(meta_mu);
      rep.epoch = meta.promised_epoch;
    }
    Send(w.conn, rep);
    if (req.type == MsgType::kTailReq) Count(wire::NodeCounter::kTailTotalNs, Ns(w.received, rt->Now()));
  }

  void HandlePromise(const Frame& req, Frame* rep) {
    Count(wire::NodeCounter::kPromises);
    std::lock_guard<std::mutex> ms(meta_save_mu);
    NodeMeta next;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      next = meta;
    }
    if (req.epoch < next.promised_epoch || (req.epoch == next.promised_epoch && req.writer_id != next.writer_id)) {
      rep->code = ReplyCode::kStaleEpoch;
      rep->error = "node " + opt.node_id + " already promised epoch " + std::to_string(next.promised_epoch);
      Count(wire::NodeCounter::kStaleRefused);
      Log("info", "event=promise_refused epoch=" + std::to_string(req.epoch) +
                      " promised=" + std::to_string(next.promised_epoch));
    } else if (req.epoch > next.promised_epoch) {
      next.promised_epoch = req.epoch;
      next.writer_id = req.writer_id;
      // Bytes written but not yet synced were acknowledged as written
      // (SendWrittenAck): the old writer may have returned a commit on them
      // (innodb_flush_log_at_trx_commit=2). Sync them before the state below
      // reports the durable end the new writer's recovery seals at, or it
      // could cut them. The worker is the only one appending, so nothing is
      // written between this sync and the promise taking effect.
      Status s = log->Sync();
      if (s.ok()) s = SaveNodeMeta(*fs, opt.data_dir, next);  // durable before the ack
      if (!s.ok()) {
        Fail(rep, s);
      } else {
        std::lock_guard<std::mutex> l(meta_mu);
        meta = next;
        Log("info", "event=promise epoch=" + std::to_string(req.epoch) + " writer=" + std::to_string(req.writer_id));
      }
    }
    rep->state = State();
    rep->epoch = rep->state.promised_epoch;
  }

  void HandleSeal(const Frame& req, Frame* rep) {
    Count(wire::NodeCounter::kSeals);
    if (!CheckWriter(req, rep, /*need_seal=*/false)) {
      rep->state = State();
      return;
    }
    std::lock_guard<std::mutex> ms(meta_save_mu);
    NodeMeta next;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      next = meta;
    }
    // Held until the new seal epoch is in `meta`: the catch-up thread checks
    // meta.seal_epoch and appends under seal_mu, so it can never append
    // with the old epoch into a log TruncateAfter has already fenced.
    std::unique_lock<std::mutex> sl(seal_mu, std::defer_lock);
    const bool new_seal = next.seal_epoch != req.epoch;
    LogFrontier fr;
    if (new_seal) {
      sl.lock();
      Status s = log->Sync();
      if (!s.ok()) {
        Fail(rep, s);
        rep->state = State();
        return;
      }
      fr = log->frontier();
      next.seal_cut = std::max(fr.released_lsn, repl::SealPoint(next.history, fr.complete_lsn, req.history));
      const repl::TailImage kept = next.tail;
      next.tail = SealedRegister(kept, req.tail, fr.durable_lsn);
      if (next.tail == kept) {
        // A register we keep stays anchored unless the two histories diverge
        // below its block: the blocks there may then become another stream's.
        // It may no longer be in the new history (a writer that recovered
        // without it): anchored, it still counts, and it may be our only
        // copy of acknowledged bytes (found by the simulator, seed 4489).
        const Lsn diverge = repl::SealPoint(next.history, repl::kUnknownEnd, req.history);
        next.tail_anchored = next.tail_anchored && diverge >= kept.block_lsn;
      } else {
        next.tail_anchored = true;
      }
    }
    // A rebuilding node must reach the highest certify LSN any seal of its
    // seal epoch carried before it becomes a member (design note, section 4).
    // After a lost log (kCertifyAfterNextSeal) only a seal that arrives
    // now says what its writer may have acknowledged.
    next.certify_lsn = next.seal_epoch == req.epoch && next.certify_lsn != kCertifyAfterNextSeal
                           ? std::max(next.certify_lsn, req.certify_lsn)
                           : req.certify_lsn;
    next.seal_epoch = req.epoch;
    next.seal_lsn = req.lsn;
    next.history = req.history;
    next.peers = req.peers;
    next.self_index = req.self_index;
    // The commit point (docs/design/logservice-seal-with-tail.md): the seal,
    // its cut and the recovered tail in one durable write, before the cut.
    // The register then holds the tail's bytes before the cut removes the
    // blocks that may carry them; a crash before the cut is finished is
    // repaired at start (CutAfterSeal).
    Status s = SaveNodeMeta(*fs, opt.data_dir, next);
    if (s.ok() && new_seal) s = CutAfterSeal(next);
    if (!s.ok()) {
      // Memory keeps the old seal: the writer's retry repeats the seal.
      Fail(rep, s);
      rep->state = State();
      return;
    }
    if (new_seal)
      Log("info", "event=seal epoch=" + std::to_string(req.epoch) + " seal_lsn=" + std::to_string(req.lsn) +
                      " cut=" + std::to_string(next.seal_cut) + " had_complete=" + std::to_string(fr.complete_lsn) +
                      " had_highest=" + std::to_string(fr.highest_lsn) +
                      " tail_end=" + std::to_string(next.tail.valid() ? next.tail.data_end : 0));
    {
      std::lock_guard<std::mutex> l(meta_mu);
      commit_hint = std::max(commit_hint, req.commit_lsn);
      meta = next;
      if (new_seal) tail_written = next.tail;
    }
    catchup_cv.notify_all();
    rep->state = State();
  }

  // The seal's cut of the page store and the log, as recorded in m (after
  // m was saved). The log's truncation record carries m.seal_epoch, which
  // is how a restart tells whether it happened.
  // Never below the log's start: a restart after a release past the cut
  // has nothing there to cut (and TruncateAfter refuses it).
  Status CutAfterSeal(const NodeMeta& m) {
    Status s = pages->TruncateAfter(m.seal_lsn);
    if (s.ok()) s = log->TruncateAfter(std::max(m.seal_cut, log->frontier().released_lsn), m.seal_epoch);
    return s;
  }

  // The register a node keeps when a seal brings the recovered tail `sealed`
  // (invalid: none) while it holds `cur` and is durable up to `durable`: as
  // for a TailReq (HandleTail), a newer epoch replaces it, unless the node is
  // behind the stream, its register in an earlier block and holding bytes it
  // lacks as blocks: that register may be its only copy of acknowledged
  // bytes; the writer re-puts its tail once the node has caught up.
  static repl::TailImage SealedRegister(const repl::TailImage& cur, const repl::TailImage& sealed, Lsn durable) {
    if (!sealed.valid() || sealed.epoch <= cur.epoch) return cur;
    if (cur.valid() && sealed.block_lsn > cur.block_lsn && durable < cur.data_end) return cur;
    return sealed;
  }

  static bool CarriesTail(const Frame& f) {
    return f.type == MsgType::kAppendReq && (f.append_flags & wire::kAppendCarriesTail) != 0;
  }
  static bool HasTail(const Work& w) { return w.frame.type == MsgType::kTailReq || CarriesTail(w.frame); }

  bool HandleAppend(const Frame& req, Frame* rep) {
    if (!CheckWriter(req, rep, true)) return false;
    auto t = log->Append(req.lsn, req.epoch, req.data);
    if (!t.ok()) {
      Fail(rep, t.status());
      return false;
    }
    Count(wire::NodeCounter::kAppends);
    Count(wire::NodeCounter::kAppendBytes, req.data.size());
    bool gap = false;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      commit_hint = std::max(commit_hint, req.commit_lsn);
      gap = req.lsn > log->frontier().complete_lsn;
    }
    if (gap) catchup_cv.notify_all();
    return true;
  }

  // The first of an append's two replies, sent as soon as the bytes are in
  // the node's log file (the OS holds them; no fdatasync yet): its complete_lsn is
  // the gap-free written end, which the writer counts for
  // innodb_flush_log_at_trx_commit=2 ("survives a mysqld crash", as stock's 2
  // survives it through the OS page cache, not a host crash). Its lsn stays
  // the durable end of the last sync; the second reply (SyncLoop) reports
  // the new one. Fenced exactly as that one is, under meta_mu, so a newer
  // writer's promise either sees these bytes or this reply is not sent.
  void SendWrittenAck(const Work& w) {
    Frame rep = Reply(w.frame, MsgType::kAppendResp);
    {
      std::lock_guard<std::mutex> l(meta_mu);
      if (!CheckWriterLocked(w.frame, &rep, /*need_seal=*/true)) return;  // the sync reply refuses it
      const LogFrontier fr = log->frontier();
      rep.lsn = fr.durable_lsn;
      rep.complete_lsn = fr.complete_lsn;
    }
    Send(w.conn, rep);
  }

  // Whether register t replaces cur: a newer writer, or the same writer
  // further on (a later block, or more of the same block).
  static bool IsNewerTail(const repl::TailImage& t, const repl::TailImage& cur) {
    return t.epoch > cur.epoch ||
           (t.epoch == cur.epoch &&
            (t.block_lsn > cur.block_lsn || (t.block_lsn == cur.block_lsn && t.data_end >= cur.data_end)));
  }

  // The register goes into the log's journal, after the blocks this
  // connection sent before it, and is published and acknowledged by the
  // sync thread after the group's fdatasync
  // (docs/design/logservice-tail-in-journal.md). True: queued for it.
  bool HandleTail(Work& w, Frame* rep) {
    const Frame& req = w.frame;
    if (!CheckWriter(req, rep, true)) return false;
    return WriteTail(w, repl::TailImage{req.epoch, req.lsn, req.data_end, req.data}, rep);
  }

  // The register t into the journal (HandleTail, or an AppendReq that
  // carries it after its blocks). True: written or kept back as below;
  // w.tail_written says which.
  bool WriteTail(Work& w, const repl::TailImage& t, Frame* rep) {
    repl::TailImage cur;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      cur = tail_written;
    }
    bool newer = IsNewerTail(t, cur);
    // A tail in a later block retires the one we hold. Its bytes reached us
    // as blocks just before this request (same connection, in order), so
    // they precede this record in the journal, and a crash keeps a prefix
    // of it: the register is never kept without them. But if we are still
    // below the old tail's data end, we are behind the stream (a new writer
    // re-putting its recovered tail right after sealing us, before we filled
    // up). Our register may be the only copy we have of acknowledged bytes
    // the new stream contains but fewer than W nodes may yet hold as
    // blocks: keep it, and reply with it. The writer sends its tail again
    // once we caught up (its status poll sees our old one).
    if (newer && cur.valid() && t.block_lsn > cur.block_lsn && t.epoch > cur.epoch &&
        log->frontier().complete_lsn < cur.data_end)
      newer = false;
    if (newer) {
      auto ticket = log->PutTail(StoredTail{t.epoch, t.block_lsn, t.data_end, t.image});
      if (!ticket.ok()) {
        Fail(rep, ticket.status());
        return false;
      }
      Count(wire::NodeCounter::kTailWrites);
      std::lock_guard<std::mutex> l(meta_mu);
      tail_written = t;
    }
    w.tail_written = newer;
    return true;
  }

  // Sync thread, meta_mu held, after the fdatasync that covers the request's
  // record and with its fence checked: publish the register (what status
  // replies report and recoveries count) and answer with the one we hold.
  void FinishTailLocked(const Work& w, const LogFrontier& fr, Frame* rep) {
    PublishTailLocked(w, repl::TailImage{w.frame.epoch, w.frame.lsn, w.frame.data_end, w.frame.data});
    rep->lsn = meta.tail.block_lsn;
    rep->data_end = meta.tail.data_end;
    rep->durable_lsn = fr.durable_lsn;
  }
  // The same for an AppendReq that carried the register: the AppendResp
  // reports the durable and complete ends and the register held.
  void FinishAppendWithTailLocked(const Work& w, const LogFrontier& fr, Frame* rep) {
    PublishTailLocked(w, w.frame.tail);
    rep->lsn = fr.durable_lsn;
    rep->complete_lsn = fr.complete_lsn;
    rep->tail = repl::TailImage{meta.tail.epoch, meta.tail.block_lsn, meta.tail.data_end, {}};
  }
  void PublishTailLocked(const Work& w, repl::TailImage t) {
    if (w.tail_written && IsNewerTail(t, meta.tail)) {
      // Sealed in t's epoch: every block we hold or fill below it is that
      // writer's stream.
      meta.tail = std::move(t);
      meta.tail_anchored = true;
    }
  }

  void HandleRead(const Frame& req, Frame* rep) {
    Count(wire::NodeCounter::kReads);
    {
      std::lock_guard<std::mutex> l(meta_mu);
      if (req.seal_epoch != 0 && meta.seal_epoch != req.seal_epoch) {
        rep->code = ReplyCode::kWrongSeal;
        rep->error = "node " + opt.node_id + " is sealed at epoch " + std::to_string(meta.seal_epoch);
        return;
      }
    }
    auto r = log->Read(req.lsn, std::min<std::size_t>(req.max_bytes, wire::kMaxReadBytes));
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kCorruption) LogDamaged(r.status(), "read");
      return Fail(rep, r.status());
    }
    for (auto& range : *r) {
      std::string_view b = range.bytes;
      Lsn at = range.start_lsn;
      while (!b.empty() && rep->ranges.size() < wire::kMaxRanges) {
        const std::size_t n = std::min(b.size(), wire::kMaxRedoChunk);
        rep->ranges.push_back(repl::WireRange{at, range.epoch, std::string(b.substr(0, n))});
        b.remove_prefix(n);
        at += n;
      }
    }
    rep->lsn = log->frontier().durable_lsn;
  }

  void HandleCkptSet(const Frame& req, Frame* rep) {
    if (!CheckWriter(req, rep, true)) return;
    auto cur = ckpt->Read();
    if (cur.ok() && cur->checkpoint_lsn > req.lsn) {
      rep->code = ReplyCode::kInvalid;
      rep->error = "checkpoint LSN " + std::to_string(req.lsn) + " below stored " + std::to_string(cur->checkpoint_lsn);
      return;
    }
    Status s = ckpt->Write(Checkpoint{req.lsn, req.epoch, req.data});
    if (!s.ok()) Fail(rep, s);
  }

  // The lowest retention pin (no pin: no limit). Under meta_mu.
  Lsn LowestPinLocked() const {
    Lsn low = ~Lsn{0};
    for (const auto& p : meta.pins) low = std::min(low, p.lsn);
    return low;
  }

  // The writer frees what it will never read again. Capped at the stored
  // checkpoint (recovery starts there), at the lowest retention pin (a
  // follower has not stored what lies above it) and at what this node
  // holds; replies with where the log now starts.
  void HandleRelease(const Frame& req, Frame* rep) {
    if (!CheckWriter(req, rep, true)) return;
    auto cur = ckpt->Read();
    Status s;
    Lsn pin;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      pin = LowestPinLocked();
    }
    if (cur.ok()) {
      const Lsn upto = std::min({req.lsn, cur->checkpoint_lsn, log->frontier().complete_lsn, pin});
      s = log->ReleaseBelow(upto);
    } else if (!cur.status().is_not_found()) {
      s = cur.status();
    }
    if (!s.ok()) Fail(rep, s);
    rep->lsn = log->frontier().released_lsn;
  }

  // A follower (docs/design/page-server.md 7.1) reads redo the writer has
  // acknowledged: blocks below min(our durable end, the writer's hint), never
  // a byte at or above it, so nothing it is given can be cut by a later seal
  // (every writer's recovery keeps what a quorum acknowledged). The hint is
  // the newest quorum frontier any writer sent us (AppendReq, SealReq,
  // HintReq); bytes below it and below our durable end are that stream on
  // every node. Then, when the reply reaches that frontier, the sealed
  // epoch's tail register if the writer's HintReq in that epoch covers its
  // data end: the partial last block, re-read by the follower as it grows.
  // Answered at once (the worker never blocks); the follower polls.
  void HandleFollow(const Frame& req, Frame* rep) {
    Count(wire::NodeCounter::kReads);
    if (log_damaged.load()) {
      rep->code = ReplyCode::kStoreError;
      rep->error = "node " + opt.node_id + ": its log is damaged; it restarts and rebuilds it from its peers";
      return;
    }
    Lsn hint;
    repl::TailImage tail;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      hint = std::max(commit_hint, ack_hint);
      if (meta.tail.valid() && meta.tail.epoch == meta.seal_epoch && ack_hint_epoch == meta.seal_epoch &&
          meta.tail.data_end <= ack_hint)
        tail = meta.tail;
    }
    const LogFrontier fr = log->frontier();
    const Lsn frontier = opt.testing_follow_to_durable ? fr.durable_lsn : std::min(fr.durable_lsn, hint);
    rep->lsn = frontier;
    rep->released = fr.released_lsn;
    if (req.lsn < fr.released_lsn) {
      rep->code = ReplyCode::kNotFound;
      rep->error = "LSN " + std::to_string(req.lsn) + " was released on node " + opt.node_id + " (released " +
                   std::to_string(fr.released_lsn) + ")";
      return;
    }
    Lsn at = req.lsn;
    if (at < frontier) {
      const std::size_t want = std::min<std::uint64_t>({req.max_bytes, wire::kMaxReadBytes, frontier - at});
      auto r = log->Read(at, want);
      if (!r.ok()) {
        if (r.status().code() == StatusCode::kCorruption) LogDamaged(r.status(), "follow");
        return Fail(rep, r.status());
      }
      for (auto& range : *r) {
        if (range.start_lsn != at || at >= frontier) break;  // contiguous from `from` only
        std::string_view b = range.bytes;
        if (b.size() > frontier - at) b = b.substr(0, frontier - at);
        while (!b.empty() && rep->ranges.size() < wire::kMaxRanges) {
          const std::size_t n = std::min(b.size(), wire::kMaxRedoChunk);
          rep->ranges.push_back(repl::WireRange{at, range.epoch, std::string(b.substr(0, n))});
          b.remove_prefix(n);
          at += n;
        }
        if (!b.empty()) break;
      }
    }
    if (at == frontier && tail.valid() && tail.block_lsn == frontier) rep->tail = tail;
  }

  // The writer's acknowledged frontier when no append carries it (an idle
  // writer's last commit, a tail register's bytes): what followers may read.
  void HandleHint(const Frame& req, Frame* rep) {
    if (!CheckWriter(req, rep, true)) return;
    std::lock_guard<std::mutex> l(meta_mu);
    if (ack_hint_epoch != req.epoch) {
      ack_hint_epoch = req.epoch;
      ack_hint = 0;
    }
    ack_hint = std::max(ack_hint, req.lsn);
  }

  // Retention pins (docs/design/page-server.md 7.4): list, set (create or
  // move) or drop one by name; durable in node_meta before the reply. A pin
  // below the released LSN is refused: that redo is gone already.
  void HandlePin(const Frame& req, Frame* rep) {
    const auto op = req.pin_op;
    if (op != wire::PinOp::kList) {
      std::lock_guard<std::mutex> ms(meta_save_mu);
      NodeMeta next;
      {
        std::lock_guard<std::mutex> l(meta_mu);
        next = meta;
      }
      const repl::Pin& want = req.pins.at(0);
      auto it = std::find_if(next.pins.begin(), next.pins.end(), [&](const repl::Pin& p) { return p.name == want.name; });
      const Lsn released = log->frontier().released_lsn;
      if (op == wire::PinOp::kDrop) {
        if (it == next.pins.end()) {
          rep->code = ReplyCode::kNotFound;
          rep->error = "no pin named " + want.name + " on node " + opt.node_id;
          return;
        }
        next.pins.erase(it);
      } else if (want.lsn < released) {
        rep->code = ReplyCode::kInvalid;
        rep->error = "pin " + want.name + " at " + std::to_string(want.lsn) + " is below the released LSN " +
                     std::to_string(released) + " of node " + opt.node_id;
        return;
      } else if (it != next.pins.end()) {
        it->lsn = want.lsn;
      } else if (next.pins.size() >= wire::kMaxPins) {
        rep->code = ReplyCode::kInvalid;
        rep->error = "node " + opt.node_id + " holds " + std::to_string(wire::kMaxPins) + " pins already";
        return;
      } else {
        next.pins.push_back(want);
      }
      Status s = SaveNodeMeta(*fs, opt.data_dir, next);
      if (!s.ok()) return Fail(rep, s);
      {
        std::lock_guard<std::mutex> l(meta_mu);
        meta.pins = next.pins;
      }
      Log("info", std::string("event=") + (op == wire::PinOp::kDrop ? "pin_dropped" : "pin_moved") +
                      " name=" + want.name + " lsn=" + std::to_string(want.lsn));
    }
    std::lock_guard<std::mutex> l(meta_mu);
    rep->pins = meta.pins;
  }

  void HandleCkptGet(Frame* rep) {
    auto cur = ckpt->Read();
    if (cur.ok()) {
      rep->found = true;
      rep->lsn = cur->checkpoint_lsn;
      rep->checkpoint_epoch = cur->epoch;
      rep->data = cur->metadata;
    } else if (!cur.status().is_not_found()) {
      Fail(rep, cur.status());
    }
  }

  void HandlePagePut(const Frame& req, Frame* rep) {
    if (!CheckWriter(req, rep, true)) return;
    auto t = pages->PutPage(PageId{req.space, req.page}, req.lsn, req.data);
    Status s = t.ok() ? pages->SyncUpTo(*t) : t.status();
    if (!s.ok()) Fail(rep, s);
  }

  void HandlePageGet(const Frame& req, Frame* rep) {
    auto v = pages->GetPage(PageId{req.space, req.page}, req.lsn);
    if (v.ok()) {
      rep->found = true;
      rep->lsn = v->lsn;
      rep->data = std::move(v->image);
    } else if (!v.status().is_not_found()) {
      Fail(rep, v.status());
    }
  }

  // ---- group commit ----
  void SyncLoop() {
    for (;;) {
      std::vector<Work> batch;
      {
        std::unique_lock<std::mutex> l(q_mu);
        ack_cv.wait(l, [&] { return stopping || !acks.empty(); });
        if (acks.empty()) return;
        batch.swap(acks);
      }
      const Runtime::TimePoint sync_start = rt->Now();
      Status s = log->Sync();
      const Runtime::TimePoint sync_end = rt->Now();
      Count(wire::NodeCounter::kSyncBatches);
      Count(wire::NodeCounter::kSyncNs, Ns(sync_start, sync_end));
      for (const auto& w : batch) {
        if (w.frame.type == MsgType::kTailReq) continue;  // counted in tail_total
        Count(wire::NodeCounter::kSyncAcks);
        Count(wire::NodeCounter::kSyncQueueNs, Ns(w.appended, sync_start));
      }
      // The fence is checked again here, after the fdatasync, not only when
      // the append was queued: a newer writer may have promised meanwhile,
      // and its promise reply reported a durable LSN without these bytes,
      // so its recovery may seal below them and cut them. Check and frontier
      // read happen under meta_mu, where a promise takes effect (before its
      // reply reads the frontier): an ack either precedes the promise, and
      // then the promise reply counts these bytes as durable too, or it is
      // refused with the newer epoch.
      std::vector<Frame> replies;
      std::size_t fenced = 0;
      Epoch promised;
      {
        // Publishing a register changes meta.tail: not while a promise, seal
        // or membership change is between reading meta and saving it (they
        // hold meta_save_mu), or the node_meta it saves would lack a register
        // acknowledged before it took effect.
        std::unique_lock<std::mutex> save(meta_save_mu, std::defer_lock);
        if (std::any_of(batch.begin(), batch.end(), HasTail)) save.lock();
        std::lock_guard<std::mutex> l(meta_mu);
        promised = meta.promised_epoch;
        const LogFrontier fr = log->frontier();
        for (auto& w : batch) {
          Frame rep = Reply(w.frame, ResponseTypeOf(w.frame.type));
          if (!CheckWriterLocked(w.frame, &rep, /*need_seal=*/true)) {
            ++fenced;
          } else if (s.ok() && w.frame.type == MsgType::kTailReq) {
            FinishTailLocked(w, fr, &rep);
          } else if (s.ok() && CarriesTail(w.frame)) {
            FinishAppendWithTailLocked(w, fr, &rep);
          } else if (s.ok()) {
            rep.lsn = fr.durable_lsn;
            rep.complete_lsn = fr.complete_lsn;
          }
          replies.push_back(std::move(rep));
        }
      }
      if (fenced > 0)
        Log("info", "event=acks_fenced count=" + std::to_string(fenced) + " promised=" + std::to_string(promised));
      for (std::size_t k = 0; k < batch.size(); ++k) {
        if (!s.ok() && replies[k].code == ReplyCode::kOk) Fail(&replies[k], s);
        Send(batch[k].conn, replies[k]);
        const Runtime::TimePoint sent = rt->Now();
        if (batch[k].frame.type == MsgType::kTailReq) {
          Count(wire::NodeCounter::kTailTotalNs, Ns(batch[k].received, sent));
        } else {
          Count(wire::NodeCounter::kAppendAckNs, Ns(sync_end, sent));
          Count(wire::NodeCounter::kAppendTotalNs, Ns(batch[k].received, sent));
        }
      }
    }
  }

  // ---- damage found while running ----
  // Acknowledged bytes on this node failed their CRC. It holds its log no
  // longer: stop acknowledging (CheckWriterLocked), report rebuilding
  // (State), and ask the owner to restart the node, whose start moves the
  // log aside and rebuilds it (log_quarantine.h). Without an owner (or with
  // DamagedLog::kStop) the node stays up refusing writes, as it did before.
  void LogDamaged(const Status& s, std::string_view found_by) {
    if (log_damaged.exchange(true)) return;
    const bool heal = opt.damaged_log == NodeOptions::DamagedLog::kRebuild && opt.on_log_damaged;
    Log("error", "event=log_damaged found_by=" + std::string(found_by) + " reason=\"" + s.message() +
                     "\" action=\"" + (heal ? "restarting to rebuild the log from peers" : "refusing writes") + "\"");
    if (heal) opt.on_log_damaged(s.message());
  }

  // ---- scrub ----
  // Every scrub_interval, reads [released, durable) as it stood when the pass
  // began, through the same checked path as a peer's read, at most
  // scrub_bytes_per_second. A record nobody reads (redo between InnoDB's
  // checkpoint and the log end is read only at a recovery) would otherwise
  // rot unnoticed until the one moment it is needed, perhaps after a peer
  // lost its copy too. The page cache can hide rot on disk until the pages
  // are evicted; a pass still catches what reaches the reads.
  void ScrubLoop() {
    constexpr std::size_t kChunk = 1u << 20;
    auto pause = [&](Runtime::Clock::duration d) {
      std::unique_lock<std::mutex> l(q_mu);
      scrub_cv.wait_until(l, rt->Now() + d, [&] { return stopping; });
      return !stopping;
    };
    while (pause(opt.scrub_interval)) {
      const Lsn end = log->frontier().durable_lsn;
      Lsn from = log->frontier().released_lsn;
      bool whole = true;
      while (from < end && !log_damaged.load()) {
        from = std::max(from, log->frontier().released_lsn);  // released meanwhile: nothing to check there
        if (from >= end) break;
        auto r = log->Read(from, std::min<std::uint64_t>(kChunk, end - from));
        if (!r.ok()) {
          if (r.status().is_not_found()) continue;
          if (r.status().code() == StatusCode::kCorruption) {
            LogDamaged(r.status(), "scrub");
            return;
          }
          Log("warn", "event=scrub_failed at=" + std::to_string(from) + " reason=\"" + r.status().message() + "\"");
          whole = false;
          break;
        }
        std::uint64_t n = 0;
        for (const auto& range : *r) n += range.bytes.size();
        if (n == 0) break;
        from += n;
        Count(wire::NodeCounter::kScrubBytes, n);
        const auto rate = std::max<std::uint64_t>(opt.scrub_bytes_per_second, 1);
        if (!pause(std::chrono::microseconds(n * 1000000 / rate))) return;
      }
      if (whole && !log_damaged.load()) Count(wire::NodeCounter::kScrubPasses);
    }
  }

  // ---- gap filling and rebuilding ----
  void CatchUpLoop() {
    std::shared_ptr<repl::RpcChannel> peer;
    std::size_t next_peer = 0;
    std::size_t peer_index = 0;
    auto next_member_check = rt->Now();
    for (;;) {
      NodeMeta m;
      Lsn hint;
      {
        std::unique_lock<std::mutex> l(q_mu);
        catchup_cv.wait_until(l, rt->Now() + std::chrono::milliseconds(50), [&] { return stopping; });
        if (stopping) return;
      }
      {
        std::lock_guard<std::mutex> l(meta_mu);
        m = meta;
        hint = commit_hint;
      }
      if (m.rebuilding && m.seal_epoch != 0 && rt->Now() >= next_member_check) {
        next_member_check = rt->Now() + std::chrono::milliseconds(200);
        TryBecomeMember(m);
      }
      if (m.seal_epoch == 0 || m.peers.size() < 2) continue;
      LogFrontier fr = log->frontier();
      const Lsn target = std::max({m.seal_lsn, fr.highest_lsn, hint});
      if (fr.complete_lsn >= target) continue;
      // Pick a peer (not ourselves), keep the channel while it works.
      if (!peer || !peer->open()) {
        peer.reset();
        for (std::size_t tries = 0; tries < m.peers.size() && !peer; ++tries) {
          const std::size_t i = next_peer++ % m.peers.size();
          if (i == m.self_index) continue;
          auto ch = repl::RpcChannel::Connect(*network, m.peers[i], nullptr, nullptr);
          if (ch.ok()) {
            peer = *ch;
            peer_index = i;
          }
        }
        if (!peer) continue;
      }
      Frame req;
      req.type = MsgType::kReadReq;
      req.lsn = fr.complete_lsn;
      req.max_bytes = wire::kMaxReadBytes;
      req.seal_epoch = m.seal_epoch;
      auto rep = peer->Call(req, std::chrono::milliseconds(2000));
      if (rep.ok() && rep->code == ReplyCode::kNotFound) {
        // The peer released the log below our gap-free end: we are empty, or
        // were away while the cluster released past our end.
        if (!StartFromPeer(*peer, m.peers[peer_index], m, fr)) peer.reset();
        continue;
      }
      if (!rep.ok() || rep->code != ReplyCode::kOk || rep->ranges.empty()) {
        peer.reset();  // try another peer next round
        continue;
      }
      std::uint64_t filled = 0;
      Status s;
      {
        std::lock_guard<std::mutex> sl(seal_mu);
        {
          std::lock_guard<std::mutex> l(meta_mu);
          if (meta.seal_epoch != m.seal_epoch) continue;
        }
        // Bytes of the sealed stream are adopted under our seal epoch (they
        // may have been written by older writers; see the design note).
        for (const auto& r : rep->ranges) {
          auto t = log->Append(r.start, m.seal_epoch, r.bytes);
          if (!t.ok()) {
            s = t.status();
            break;
          }
          filled += r.bytes.size();
        }
        if (s.ok()) s = log->Sync();
      }
      Count(wire::NodeCounter::kGapFillBytes, filled);
      if (!s.ok()) {
        Log("warn", "event=gap_fill_failed from=" + std::to_string(req.lsn) + " reason=\"" + s.message() + "\"");
        peer.reset();
        rt->SleepFor(std::chrono::milliseconds(100));
        continue;
      }
      Log("info", "event=gap_fill from=" + std::to_string(req.lsn) + " bytes=" + std::to_string(filled) +
                      " durable=" + std::to_string(log->frontier().durable_lsn));
      catchup_cv.notify_all();
    }
  }

  // Takes the peer's checkpoint and starts our log where the peer's starts
  // (its released LSN), so that gap filling copies from there. The
  // checkpoint first: a node's log must never start above its own stored
  // checkpoint, or a recovery that starts at that checkpoint could not read
  // it here. False (and the caller tries another peer) if the peer is not
  // sealed like us or its state does not allow it.
  bool StartFromPeer(repl::RpcChannel& peer, const std::string& name, const NodeMeta& m, const LogFrontier& fr) {
    const auto timeout = std::chrono::milliseconds(2000);
    Frame sq;
    sq.type = MsgType::kStatusReq;
    auto st = peer.Call(sq, timeout);
    if (!st.ok() || st->code != ReplyCode::kOk || st->state.seal_epoch != m.seal_epoch ||
        st->state.released <= fr.complete_lsn)
      return false;
    const Lsn start = st->state.released;
    Frame cq;
    cq.type = MsgType::kCkptGetReq;
    auto cp = peer.Call(cq, timeout);
    if (!cp.ok() || cp->code != ReplyCode::kOk) return false;
    if (!cp->found || cp->lsn < start) {
      Log("warn", "event=rebuild_refused from=" + name + " start=" + std::to_string(start) +
                      " reason=\"the peer's checkpoint does not cover its released LSN\"");
      return false;
    }
    // The peer's retention pins come with its checkpoint: a follower pinned
    // on the cluster must not lose its redo on the node rebuilt from it.
    Frame pq;
    pq.type = MsgType::kPinReq;
    pq.pin_op = wire::PinOp::kList;
    pq.pins = {repl::Pin{}};
    auto pins = peer.Call(pq, timeout);
    if (!pins.ok() || pins->code != ReplyCode::kOk) return false;
    if (!AdoptPins(pins->pins)) return false;
    auto mine = ckpt->Read();
    Status s = mine.ok() || mine.status().is_not_found() ? Status::Ok() : mine.status();
    if (s.ok() && (!mine.ok() || mine->checkpoint_lsn < cp->lsn)) s = ckpt->Write(Checkpoint{cp->lsn, cp->checkpoint_epoch, cp->data});
    if (s.ok()) {
      std::lock_guard<std::mutex> sl(seal_mu);
      {
        std::lock_guard<std::mutex> l(meta_mu);
        if (meta.seal_epoch != m.seal_epoch) return false;
      }
      s = log->StartAt(start);
    }
    if (!s.ok()) {
      Log("warn", "event=rebuild_failed from=" + name + " start=" + std::to_string(start) + " reason=\"" + s.message() + "\"");
      return false;
    }
    Log("info", "event=rebuild_start from=" + name + " start=" + std::to_string(start) +
                    " checkpoint=" + std::to_string(cp->lsn) + " had_complete=" + std::to_string(fr.complete_lsn));
    return true;
  }

  // Adds the pins we lack (by name) from a peer; durable before we start
  // our log at the peer's released LSN.
  bool AdoptPins(const std::vector<repl::Pin>& theirs) {
    std::lock_guard<std::mutex> ms(meta_save_mu);
    NodeMeta next;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      next = meta;
    }
    bool changed = false;
    for (const auto& p : theirs) {
      if (next.pins.size() >= wire::kMaxPins) break;
      if (std::none_of(next.pins.begin(), next.pins.end(), [&](const repl::Pin& q) { return q.name == p.name; })) {
        next.pins.push_back(p);
        changed = true;
      }
    }
    if (!changed) return true;
    Status s = SaveNodeMeta(*fs, opt.data_dir, next);
    if (!s.ok()) {
      Log("warn", "event=rebuild_failed reason=\"pins: " + s.message() + "\"");
      return false;
    }
    std::lock_guard<std::mutex> l(meta_mu);
    meta.pins = next.pins;
    return true;
  }

  // A rebuilding node becomes a member (docs/design/logservice-node-rebuild.md,
  // section 4) once its log reaches its sealing writer's certify LSN and
  // every peer confirms that no newer writer has promised anywhere.
  void TryBecomeMember(const NodeMeta& m) {
    repl::TailImage t;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      t = meta.tail;
    }
    const LogFrontier fr = log->frontier();
    std::string why;
    if (m.certify_lsn == kCertifyAfterNextSeal) {
      why = "lost its log after its last seal: waits for a writer's next seal";
    } else if (!repl::ReachesCertifyLsn(fr.durable_lsn, t, m.seal_epoch, m.certify_lsn)) {
      why = "durable " + std::to_string(fr.durable_lsn) + " below the certify LSN " + std::to_string(m.certify_lsn);
    } else {
      std::vector<repl::NodeState> answers;
      std::size_t peers = 0;
      for (std::size_t i = 0; i < m.peers.size(); ++i) {
        if (i == m.self_index) continue;
        ++peers;
        auto ch = repl::RpcChannel::Connect(*network, m.peers[i], nullptr, nullptr);
        if (!ch.ok()) continue;
        Frame q;
        q.type = MsgType::kStatusReq;
        auto rep = (*ch)->Call(q, std::chrono::milliseconds(1000));
        if (rep.ok() && rep->code == ReplyCode::kOk) answers.push_back(rep->state);
        (*ch)->Close();
      }
      why = repl::WhyNotMember(m.seal_epoch, m.promised_epoch, m.writer_id, peers, answers);
    }
    if (!why.empty()) {
      if (why.substr(0, 7) != last_member_wait.substr(0, 7))  // once per kind of reason, not per check
        Log("info", "event=rebuild_wait epoch=" + std::to_string(m.seal_epoch) + " reason=\"" + why + "\"");
      last_member_wait = why;
      return;
    }
    std::lock_guard<std::mutex> ms(meta_save_mu);
    NodeMeta next;
    {
      std::lock_guard<std::mutex> l(meta_mu);
      next = meta;
    }
    if (!next.rebuilding || next.seal_epoch != m.seal_epoch) return;  // a new seal came in: its rule now
    next.rebuilding = false;
    next.was_member = true;
    Status s = SaveNodeMeta(*fs, opt.data_dir, next);
    if (!s.ok()) {
      Log("warn", "event=rebuild_failed reason=\"" + s.message() + "\"");
      return;
    }
    {
      std::lock_guard<std::mutex> l(meta_mu);
      meta = next;
    }
    Log("info", "event=rebuilt epoch=" + std::to_string(m.seal_epoch) + " certify_lsn=" + std::to_string(m.certify_lsn) +
                    " released=" + std::to_string(fr.released_lsn) + " durable=" + std::to_string(fr.durable_lsn));
  }
};

Result<std::unique_ptr<Node>> Node::Start(NodeOptions options) {
  auto impl = std::make_unique<Impl>(options.runtime ? options.runtime : SystemRuntime());
  impl->opt = std::move(options);
  Impl& n = *impl;
  if (n.opt.data_dir.empty()) return Status::InvalidArgument("data directory is required");
  if (n.opt.secret.empty()) return Status::InvalidArgument("secret is required");
  if (n.opt.fs) n.fs = n.opt.fs;
  STRATA_RETURN_IF_ERROR(n.fs->CreateDirs(n.opt.data_dir));
  if (n.opt.disk_limit_bytes > 0) n.fs = SpaceLimitedFileSystem(n.fs, n.opt.data_dir, n.opt.disk_limit_bytes);
  LogSink sink = [&n](LogLevel l, std::string_view line) {
    n.Log(l == LogLevel::kInfo ? "info" : l == LogLevel::kWarning ? "warn" : "error",
          "event=storage msg=\"" + std::string(line) + "\"");
  };
  // Before the store creates it: a node that kept node_meta but not its log
  // (redo/ lost, or moved aside after damage) holds nothing either.
  auto log_dir_present = n.fs->Exists(JoinPath(n.opt.data_dir, "redo"));
  if (!log_dir_present.ok()) return log_dir_present.status();
  bool had_log = *log_dir_present;
  LogStoreOptions lo;
  lo.segment_bytes = n.opt.segment_bytes;
  lo.log = sink;
  auto log = LogStore::Open(n.fs, JoinPath(n.opt.data_dir, "redo"), lo);
  std::string lost_why = "node_meta without a redo directory";
  if (!log.ok() && log.status().code() == StatusCode::kCorruption &&
      n.opt.damaged_log == NodeOptions::DamagedLog::kRebuild) {
    // Acknowledged bytes on this node are damaged: it holds its log no
    // longer, so it moves it aside and rebuilds it (log_quarantine.h).
    auto moved = QuarantineLog(*n.fs, n.opt.data_dir, log.status().message());
    if (!moved.ok()) return moved.status();
    n.Log("error", "event=log_quarantined moved_to=" + *moved + " reason=\"" + log.status().message() +
                       "\" action=\"rebuilding the log from peers\"");
    lost_why = "its damaged log was moved to " + *moved;
    had_log = false;
    log = LogStore::Open(n.fs, JoinPath(n.opt.data_dir, "redo"), lo);
  }
  if (!log.ok()) return log.status();
  n.log = std::move(log.value());
  n.ckpt = std::make_unique<CheckpointStore>(n.fs, n.opt.data_dir);
  // node_meta, tail and checkpoint are replaced by rename; after a process
  // crash between a rename and its directory fsync the new file is visible
  // (page cache) but not durable. Make what we are about to load durable
  // before acting on it: a promise served from it and then forgotten by a
  // power loss would let an older writer through (found by the simulator).
  STRATA_RETURN_IF_ERROR(n.fs->SyncDir(n.opt.data_dir));
  auto meta = LoadNodeMeta(*n.fs, n.opt.data_dir);
  if (meta.ok()) {
    n.meta = *meta;
    if (!had_log && (!n.meta.rebuilding || n.meta.certify_lsn != kCertifyAfterNextSeal)) {
      // Durably, before anything is served: the store now exists, and a
      // restart must not take this node for a member again. Nor may the
      // seal it holds certify it: its certify LSN covers what the writer
      // had acknowledged when it sealed us, and we also lost what we
      // acknowledged after that. Only a new seal says how far to copy.
      n.meta.rebuilding = true;
      n.meta.certify_lsn = kCertifyAfterNextSeal;
      STRATA_RETURN_IF_ERROR(SaveNodeMeta(*n.fs, n.opt.data_dir, n.meta));
      n.Log("warn", "event=log_lost reason=\"" + lost_why + ": rebuilding from peers\"");
    }
  } else if (!meta.status().is_not_found()) {
    return meta.status();
  } else {
    n.meta.peers = n.opt.peers;
    // No node_meta: a new node, or one that lost its storage; it cannot tell
    // which. Either way it vouches for nothing until it has rebuilt from its
    // peers (docs/design/logservice-node-rebuild.md).
    n.meta.rebuilding = true;
  }
  // After node_meta: the seal's page cut is the store's last truncation,
  // which it can then write again if a crash tore it (PageStoreOptions).
  PageStoreOptions po;
  po.log = sink;
  if (n.meta.seal_epoch > 0) po.last_truncation = n.meta.seal_lsn;
  auto pages = PageStore::Open(n.fs, JoinPath(n.opt.data_dir, "pages"), po);
  if (!pages.ok()) return pages.status();
  n.pages = std::move(pages.value());
  // Versions 1 and 2 cut the log before saving the seal and kept no cut.
  const bool legacy_meta = n.meta.tail_in_file;
  if (n.meta.tail_in_file) {
    // A node_meta of version 1 or 2: the register is in its own file. Move
    // it into node_meta (one durable write), then drop the old file.
    auto tail = LoadTail(*n.fs, n.opt.data_dir);
    if (tail.ok()) n.meta.tail = *tail;
    else if (!tail.status().is_not_found()) return tail.status();
    n.meta.tail_in_file = false;
    // What version 2 counted: the register if the history vouches for it.
    n.meta.tail_anchored = n.meta.tail.valid() &&
                           repl::TailBelongs(n.meta.history, n.meta.tail.epoch, n.meta.tail.block_lsn);
    if (meta.ok()) {
      STRATA_RETURN_IF_ERROR(SaveNodeMeta(*n.fs, n.opt.data_dir, n.meta));
      Status s = n.fs->Remove(JoinPath(n.opt.data_dir, "tail"));
      if (!s.ok() && !s.is_not_found()) return s;
    }
  }
  // The seal saves node_meta and then cuts the log (HandleSeal); the cut's
  // record carries the seal epoch. A log whose newest epoch is below it
  // missed the cut: a crash in between. Cut now, before serving anything.
  // (A log lost with its directory is empty and holds nothing to cut.)
  if (had_log && !legacy_meta && n.meta.seal_epoch > n.log->frontier().max_epoch) {
    n.Log("info", "event=seal_cut_redone epoch=" + std::to_string(n.meta.seal_epoch) +
                      " cut=" + std::to_string(n.meta.seal_cut));
    STRATA_RETURN_IF_ERROR(n.CutAfterSeal(n.meta));
  }

  // The register: the last seal's (node_meta), or a newer one in the
  // journal written after that seal and acknowledged before any newer
  // promise (one refused because a promise came first is ignored: a promise
  // saves every register published before it into node_meta).
  // docs/design/logservice-tail-in-journal.md.
  if (auto jt = n.log->last_tail(); jt && jt->epoch == n.meta.seal_epoch && jt->epoch == n.meta.promised_epoch) {
    repl::TailImage t{jt->epoch, jt->block_lsn, jt->data_end, jt->image};
    if (Impl::IsNewerTail(t, n.meta.tail)) {
      n.meta.tail = std::move(t);
      n.meta.tail_anchored = true;
    }
  }
  n.tail_written = n.meta.tail;

  if (n.opt.network) {
    n.network = n.opt.network;
  } else {
    auto t = TransportNetwork(repl::ReplicationTransportOptions(
        n.opt.cluster_id, n.opt.secret, [&n](rdma::LogLevel l, std::string_view line) {
          if (l < rdma::LogLevel::kWarning) return;
          // A peer going away is routine (info); refused handshakes and bad
          // frames are worth a warning.
          const bool routine = line.find(" Closed: ") != std::string_view::npos ||
                               line.find("IoError: ") != std::string_view::npos;
          n.Log(l == rdma::LogLevel::kError ? "error" : routine ? "info" : "warn",
                "event=transport msg=\"" + std::string(line) + "\"");
        }));
    if (!t.ok()) return Status::InvalidArgument("transport: " + t.status().message());
    n.network = std::move(t.value());
  }
  auto l = n.network->Listen(n.opt.listen, [&n](const std::shared_ptr<rdma::Connection>& c) { return n.Accept(c); });
  if (!l.ok()) return Status::IoError("listen " + n.opt.listen + ": " + l.status().message());
  n.listener = std::move(l.value());
  n.address = n.listener->endpoint().ToString();
  const LogFrontier fr = n.log->frontier();
  n.Log("info", "event=started listen=" + n.address + " data_dir=" + n.opt.data_dir +
                    " promised=" + std::to_string(n.meta.promised_epoch) + " seal_epoch=" +
                    std::to_string(n.meta.seal_epoch) + " durable=" + std::to_string(fr.durable_lsn) +
                    " highest=" + std::to_string(fr.highest_lsn) + (n.meta.rebuilding ? " rebuilding=1" : ""));
  // Threads start last: from here on meta is read only under meta_mu.
  n.worker = Thread(*n.rt, "worker", [&n] { n.WorkerLoop(); });
  n.syncer = Thread(*n.rt, "sync", [&n] { n.SyncLoop(); });
  n.catchup = Thread(*n.rt, "catchup", [&n] { n.CatchUpLoop(); });
  if (n.opt.scrub_interval.count() > 0) n.scrubber = Thread(*n.rt, "scrub", [&n] { n.ScrubLoop(); });
  return std::unique_ptr<Node>(new Node(std::move(impl)));
}

Node::Node(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Node::~Node() { Stop(); }

std::string Node::address() const { return impl_->address; }
repl::NodeState Node::State() const { return impl_->State(); }

void Node::Stop() {
  Impl& n = *impl_;
  if (!n.network) return;
  n.listener.reset();
  {
    std::lock_guard<std::mutex> l(n.q_mu);
    n.stopping = true;
    n.q_cv.notify_all();
    n.ack_cv.notify_all();
    n.catchup_cv.notify_all();
    n.scrub_cv.notify_all();
  }
  if (n.worker.joinable()) n.worker.join();
  if (n.syncer.joinable()) n.syncer.join();
  if (n.catchup.joinable()) n.catchup.join();
  if (n.scrubber.joinable()) n.scrubber.join();
  n.opt.network.reset();
  n.network.reset();  // the last reference closes its connections: no handler runs after this
  n.log->Sync().IgnoreError();
  n.Log("info", "event=stopped durable=" + std::to_string(n.log->frontier().durable_lsn));
}

}  // namespace strata::logservice::server
