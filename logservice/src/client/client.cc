// LogClient public API (client.h) over LogClient::Impl (client_impl.h).
#include "client_impl.h"

namespace strata::logservice::client {

std::string_view StatusCodeName(Code code) {
  switch (code) {
    case Code::kOk: return "OK";
    case Code::kInvalidArgument: return "InvalidArgument";
    case Code::kUnavailable: return "Unavailable";
    case Code::kTimeout: return "Timeout";
    case Code::kFenced: return "Fenced";
    case Code::kAuthFailed: return "AuthFailed";
    case Code::kNotFound: return "NotFound";
    case Code::kFailed: return "Failed";
  }
  return "Unknown";
}

// ---------------------------------------------------------------------------

ClientResult<std::unique_ptr<LogClient>> LogClient::Open(ClusterConfig config) {
  auto impl = std::make_unique<Impl>(config.runtime ? config.runtime : SystemRuntime());
  Impl& c = *impl;
  c.cfg = std::move(config);
  c.n = c.cfg.nodes.size();
  c.w = c.cfg.write_quorum;
  if (c.n == 0 || c.n > wire::kMaxPeers) return ClientStatus(Code::kInvalidArgument, "need 1..16 nodes");
  if (c.w == 0 || c.w > c.n || 2 * c.w <= c.n)
    return ClientStatus(Code::kInvalidArgument, "write quorum must satisfy N/2 < W <= N");
  if (c.cfg.secret.empty()) return ClientStatus(Code::kInvalidArgument, "secret is required");
  c.r = repl::ReadQuorum(c.n, c.w);
  for (const auto& a : c.cfg.nodes) c.addresses.push_back(WithScheme(a, c.cfg.transport));
  c.nodes.resize(c.n);
  c.connectors.resize(c.n);
  c.connecting.assign(c.n, 0);
  std::mt19937_64 rng(c.cfg.seed ? c.cfg.seed : c.rt->Random());
  // Distinct per client instance even with one seed (two writers holding
  // the same writer id could share an epoch).
  static std::atomic<std::uint64_t> instances{0};
  c.writer_id = (rng() + 0x9E3779B97F4A7C15ull * ++instances) | 1;
  rdma::LogSink sink;
  if (c.cfg.log) {
    sink = [&c](rdma::LogLevel l, std::string_view line) {
      if (l >= rdma::LogLevel::kWarning) c.Log("event=transport msg=\"" + std::string(line) + "\"");
    };
  }
  if (c.cfg.network) {
    c.network = c.cfg.network;
  } else {
    auto t = TransportNetwork(repl::ReplicationTransportOptions(c.cfg.cluster_id, c.cfg.secret, sink));
    if (!t.ok()) return ClientStatus(Code::kInvalidArgument, "transport: " + t.status().message());
    c.network = std::move(t.value());
  }
  ClientStatus s = c.OpenCluster();
  if (!s.ok()) return s;
  c.maint = Thread(*c.rt, "maintenance", [&c] { c.MaintenanceLoop(); });
  return std::unique_ptr<LogClient>(new LogClient(std::move(impl)));
}

LogClient::LogClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

LogClient::~LogClient() {
  Impl& c = *impl_;
  {
    std::lock_guard<std::mutex> l(c.mu);
    c.stopping = true;
    c.cv.notify_all();
  }
  if (c.maint.joinable()) c.maint.join();
  for (auto& t : c.connectors)
    if (t.joinable()) t.join();
  std::vector<std::shared_ptr<RpcChannel>> chans;
  {
    std::lock_guard<std::mutex> l(c.mu);
    for (auto& nl : c.nodes)
      if (nl.ch) chans.push_back(nl.ch);
  }
  for (auto& ch : chans) ch->Close();
  c.cfg.network.reset();
  c.network.reset();  // the last reference closes the connections: no callback runs after this
}

Epoch LogClient::epoch() const { std::lock_guard<std::mutex> l(impl_->mu); return impl_->epoch; }
Lsn LogClient::sealed_end() const { std::lock_guard<std::mutex> l(impl_->mu); return impl_->sealed_end; }
Lsn LogClient::stream_end() const { std::lock_guard<std::mutex> l(impl_->mu); return impl_->stream_end; }
Lsn LogClient::durable_lsn() const { return impl_->frontier.load(); }

void LogClient::set_written_acks(bool on) { impl_->want_written_acks.store(on, std::memory_order_relaxed); }

void LogClient::set_max_inflight_bytes(std::uint64_t bytes) {
  Impl& c = *impl_;
  std::lock_guard<std::mutex> l(c.mu);
  c.cfg.max_inflight_bytes = std::max<std::uint64_t>(bytes, 1ull << 20);
  c.cv.notify_all();
}

ClientStatus LogClient::Append(Lsn start_lsn, std::string_view bytes, milliseconds wait) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  if (bytes.empty()) return ClientStatus();
  std::unique_lock<std::mutex> l(c.mu);
  ClientStatus s = c.AppendLocked(l, start_lsn, bytes, wait);
  if (!s.ok()) return s;
  ++c.write_calls;
  c.PumpAllLocked();
  return s;
}

ClientStatus LogClient::PutTail(Lsn block_lsn, std::string_view image, Lsn data_end) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  std::lock_guard<std::mutex> l(c.mu);
  if (c.fenced) return ClientStatus(Code::kFenced, c.fence_reason);
  ClientStatus s = c.CheckTailLocked(block_lsn, c.stream_end, image, data_end);
  if (!s.ok()) return s;
  c.SetTailLocked(block_lsn, image, data_end);
  ++c.write_calls;
  c.PumpAllLocked();
  return ClientStatus();
}

ClientStatus LogClient::AppendWithTail(Lsn start_lsn, std::string_view blocks, std::string_view image, Lsn data_end,
                                       milliseconds wait) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  const Lsn block_lsn = start_lsn + blocks.size();
  std::unique_lock<std::mutex> l(c.mu);
  if (c.fenced) return ClientStatus(Code::kFenced, c.fence_reason);
  // Blocks are checked against the stream end by AppendLocked; without
  // blocks the tail must start there.
  ClientStatus s = c.CheckTailLocked(block_lsn, blocks.empty() ? c.stream_end : block_lsn, image, data_end);
  if (s.ok() && !blocks.empty()) s = c.AppendLocked(l, start_lsn, blocks, wait, /*queue_group=*/false);
  if (!s.ok()) return s;
  // The stream now ends at block_lsn (AppendLocked re-checks after a wait).
  c.SetTailLocked(block_lsn, image, data_end);
  ++c.write_calls;
  c.PumpAllLocked();
  return ClientStatus();
}

ClientStatus LogClient::WaitDurable(Lsn lsn, milliseconds timeout) {
  Impl& c = *impl_;
  std::unique_lock<std::mutex> l(c.mu);
  const auto t0 = c.rt->Now();
  std::uint64_t checks = 0;  // after a first false one, each further check is a wake-up
  bool blocked = false;
  const bool done = c.cv.wait_until(l, t0 + timeout, [&] {
    const bool ready = c.frontier.load() >= lsn || c.fenced;
    if (checks++ == 0 && !ready) blocked = true;
    return ready;
  });
  if (blocked) {
    const auto t1 = c.rt->Now();
    Impl::Stats::Add(c.stats.waits, 1);
    Impl::Stats::Add(c.stats.wait_ns, Impl::Ns(t0, t1));
    Impl::Stats::Add(c.stats.wait_wakeups, checks - 1);
    if (done && c.last_advance > t0) Impl::Stats::Add(c.stats.wake_ns, Impl::Ns(c.last_advance, t1));
  }
  if (done && !c.fenced) return ClientStatus();
  return c.NoQuorumLocked("wait for durable LSN " + std::to_string(lsn) + " (durable " +
                          std::to_string(c.frontier.load()) + ")");
}

ClientStatus LogClient::WaitWritten(Lsn lsn, milliseconds timeout) {
  Impl& c = *impl_;
  std::unique_lock<std::mutex> l(c.mu);
  if (c.cv.wait_until(l, c.rt->Now() + timeout, [&] { return c.written_frontier.load() >= lsn || c.fenced; }) &&
      !c.fenced)
    return ClientStatus();
  return c.NoQuorumLocked("wait for written LSN " + std::to_string(lsn) + " (written " +
                          std::to_string(c.written_frontier.load()) + ")");
}

Lsn LogClient::written_lsn() const { return impl_->written_frontier.load(); }

WriteStats LogClient::write_stats() const {
  const Impl::Stats& s = impl_->stats;
  auto get = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  WriteStats w;
  w.appends = get(s.appends);
  w.tails = get(s.tails);
  w.window_wait_ns = get(s.window_wait_ns);
  w.posts = get(s.posts);
  w.post_ns = get(s.post_ns);
  w.coalesced_posts = get(s.coalesced_posts);
  w.coalesced_writes = get(s.coalesced_writes);
  w.first_acks = get(s.first_acks);
  w.first_ack_ns = get(s.first_ack_ns);
  w.second_acks = get(s.second_acks);
  w.second_ack_ns = get(s.second_ack_ns);
  w.durable_groups = get(s.durable_groups);
  w.durable_ns = get(s.durable_ns);
  for (int b = 0; b < LatencyHistogram::kBuckets; ++b) w.durable_hist.counts[b] = get(s.durable_hist[b]);
  w.waits = get(s.waits);
  w.wait_ns = get(s.wait_ns);
  w.wait_wakeups = get(s.wait_wakeups);
  w.wake_ns = get(s.wake_ns);
  return w;
}

ClientResult<std::string> LogClient::Read(Lsn from, std::size_t max_bytes) {
  Impl& c = *impl_;
  std::shared_ptr<RpcChannel> ch;
  std::size_t from_node = 0;
  Lsn stream_limit;
  repl::TailImage tail;
  Epoch seal;
  {
    std::lock_guard<std::mutex> l(c.mu);
    const Lsn f = c.frontier.load();
    stream_limit = std::min(f, c.stream_end);
    if (c.tail.valid() && f >= c.tail.data_end) tail = c.tail;
    seal = c.writer() ? c.epoch : c.reader_seal_epoch;
    ch = c.ReadNodeLocked(&from_node);
  }
  std::string out;
  if (from < stream_limit) {
    if (!ch) return c.Unavailable("read");
    Frame q;
    q.type = MsgType::kReadReq;
    q.lsn = from;
    q.max_bytes = static_cast<std::uint32_t>(std::min<std::size_t>({max_bytes, wire::kMaxReadBytes, stream_limit - from}));
    q.seal_epoch = seal;
    auto rep = ch->Call(q, c.cfg.op_timeout);
    if (ClientStatus s = c.CheckReadReply(rep, from_node); !s.ok()) return s;
    for (const auto& r : rep->ranges) {
      if (r.start != from + out.size()) break;
      out += r.bytes;
    }
    if (out.size() > stream_limit - from) out.resize(stream_limit - from);
    if (out.size() > max_bytes) out.resize(max_bytes);
    return out;
  }
  if (tail.valid() && from >= tail.block_lsn && from < tail.block_lsn + tail.image.size())
    out = tail.image.substr(from - tail.block_lsn, max_bytes);
  return out;
}

ClientResult<CheckpointRecord> LogClient::ReadCheckpoint() {
  Impl& c = *impl_;
  Frame q;
  q.type = MsgType::kCkptGetReq;
  auto reps = c.CallAll(c.Channels(false), q, nullptr);
  const auto voters = c.ReadVoters(reps);  // a rebuilding node may lack the newest
  const std::size_t answered = voters.size();
  std::optional<CheckpointRecord> best;
  for (std::size_t k : voters) {
    const Frame& f = reps[k].second;
    if (f.found && (!best || f.checkpoint_epoch > best->epoch || (f.checkpoint_epoch == best->epoch && f.lsn > best->lsn)))
      best = CheckpointRecord{f.lsn, f.checkpoint_epoch, f.data};
  }
  if (answered < c.r) return c.Unavailable("read checkpoint");
  if (!best) return ClientStatus(Code::kNotFound, "no checkpoint stored");
  return *best;
}

ClientStatus LogClient::WriteCheckpoint(Lsn lsn, std::string_view metadata) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  Frame q;
  q.type = MsgType::kCkptSetReq;
  q.epoch = epoch();
  q.lsn = lsn;
  q.data = std::string(metadata);
  return c.WriteToQuorum(q, "write checkpoint");
}

ClientStatus LogClient::Release(Lsn lsn) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  // Never past the blocks W members hold durably. Bytes above them may be
  // on some nodes only in their tail register; a node that released them
  // as blocks, sealed later below its release point by a writer that
  // recovered from such a register, keeps neither copy (found by the
  // simulator's soak, seed 589291986430: a checkpoint inside the tail block
  // lost the register's bytes above it). The next Release catches up.
  Lsn upto = lsn;
  {
    std::lock_guard<std::mutex> l(c.mu);
    std::vector<Lsn> ends;
    for (std::size_t i = 0; i < c.n; ++i)
      if (c.nodes[i].sealed && c.MemberLocked(i)) ends.push_back(c.nodes[i].durable);
    std::sort(ends.begin(), ends.end(), std::greater<Lsn>());
    upto = std::min(lsn, ends.size() >= c.w ? ends[c.w - 1] : Lsn{0});
  }
  if (upto == 0) return ClientStatus();  // nothing W nodes hold as blocks yet
  Frame q;
  q.type = MsgType::kReleaseReq;
  q.epoch = epoch();
  q.lsn = upto;
  return c.WriteToQuorum(q, "release");
}

ClientStatus LogClient::PutPage(std::uint32_t space, std::uint32_t page, Lsn lsn, std::string_view image) {
  Impl& c = *impl_;
  if (!c.writer()) return ClientStatus(Code::kInvalidArgument, "read-only client");
  Frame q;
  q.type = MsgType::kPagePutReq;
  q.epoch = epoch();
  q.space = space;
  q.page = page;
  q.lsn = lsn;
  q.data = std::string(image);
  std::size_t ok = 0;
  for (auto& [i, f] : c.CallAll(c.Channels(true), q, nullptr)) ok += f.code == ReplyCode::kOk && c.Member(i);
  {
    std::lock_guard<std::mutex> l(c.mu);
    if (c.fenced) return ClientStatus(Code::kFenced, c.fence_reason);
  }
  if (ok >= c.w) return ClientStatus();
  return c.Unavailable("put page");
}

ClientResult<PageImage> LogClient::GetPage(std::uint32_t space, std::uint32_t page, Lsn lsn) {
  Impl& c = *impl_;
  Frame q;
  q.type = MsgType::kPageGetReq;
  q.space = space;
  q.page = page;
  q.lsn = lsn;
  auto reps = c.CallAll(c.Channels(false), q, nullptr);
  const auto voters = c.ReadVoters(reps);  // pages are not rebuilt
  const std::size_t answered = voters.size();
  std::optional<PageImage> best;
  for (std::size_t k : voters) {
    const Frame& f = reps[k].second;
    if (f.found && (!best || f.lsn > best->lsn)) best = PageImage{f.lsn, f.data};
  }
  if (answered < c.r) return c.Unavailable("get page");
  if (!best) return ClientStatus(Code::kNotFound, "no version of the page at or below that LSN");
  return *best;
}

ClusterStatus LogClient::status() const {
  const Impl& c = *impl_;
  std::lock_guard<std::mutex> l(c.mu);
  ClusterStatus s;
  s.epoch = c.epoch;
  s.stream_end = c.stream_end;
  s.durable_lsn = c.frontier.load();
  s.healthy = c.HealthyLocked();
  s.write_quorum = c.w;
  s.fenced = c.fenced;
  s.reason = c.ReasonLocked();
  for (std::size_t i = 0; i < c.n; ++i) {
    const auto& nl = c.nodes[i];
    s.nodes.push_back(NodeInfo{c.addresses[i], nl.ch && nl.ch->open(), nl.sealed, nl.durable, nl.last_error, nl.rebuilding});
  }
  return s;
}

}  // namespace strata::logservice::client
