// LogReadAhead (read_ahead.h): ReadReqs kept in flight on one node's channel.
//
// State: `ready` holds bytes [pos, pos + size) already answered; `flight`
// the requests sent after them, in LSN order and back to back, so the
// first one starts where `ready` ends and `next` is where the last ends.
// Invariant: everything in `ready` and every request in `flight` lies below
// the quorum frontier seen when it was sent (frontier and stream end only
// grow within one LogClient, so it stays below it).
//
// A node answers a request short when it holds less than asked (it is
// behind, or the range ends at its durable end): the requests after it then
// start past a gap, so they are abandoned and the stream goes on from the
// end of the short answer. An empty answer is returned as LogClient::Read
// would return it (the caller takes it for the end).
#include "strata/logservice/read_ahead.h"

#include <algorithm>
#include <deque>

#include "client_impl.h"

namespace strata::logservice::client {

struct LogReadAhead::State {
  State(LogClient& lc, LogClient::Impl& impl, ReadAheadOptions o) : client(lc), c(impl), opt(o) {
    opt.depth = std::max<std::size_t>(opt.depth, 1);
    opt.chunk_bytes = std::clamp<std::size_t>(opt.chunk_bytes, 512, wire::kMaxReadBytes);
  }

  struct Request {
    Lsn start = 0;
    std::size_t len = 0;
    std::unique_ptr<RpcChannel::PendingCall> call;
  };

  LogClient& client;
  LogClient::Impl& c;
  ReadAheadOptions opt;
  bool active = false;  // a stream is set up at pos (else the next Read starts one)
  std::shared_ptr<RpcChannel> ch;
  std::size_t node = 0;
  Epoch seal = 0;
  Lsn pos = 0;
  std::string ready;
  std::size_t ready_off = 0;  // ready[ready_off...] is [pos, ...)
  std::deque<Request> flight;
  Lsn next = 0;
  ReadAheadStats stats;

  std::size_t ReadyBytes() const { return ready.size() - ready_off; }

  void Drop() {
    flight.clear();  // abandons them (RpcChannel::PendingCall)
    ready.clear();
    ready_off = 0;
    ch.reset();
    active = false;
  }

  // The node LogClient::Read would pick: open, sealed (for a reader: at the
  // source's seal), and the highest durable end.
  ClientStatus Begin(Lsn from) {
    {
      std::lock_guard<std::mutex> l(c.mu);
      seal = c.writer() ? c.epoch : c.reader_seal_epoch;
      ch = c.ReadNodeLocked(&node);
    }
    if (!ch) return c.Unavailable("read");
    pos = next = from;
    active = true;
    return ClientStatus();
  }

  // Sends ReadReqs until `depth` are out or the next one would start at
  // `limit`. A failed send leaves the ones already out; the error is
  // returned only when nothing is left to wait for.
  ClientStatus Fill(Lsn limit) {
    while (flight.size() < opt.depth && next < limit) {
      Frame q;
      q.type = MsgType::kReadReq;
      q.lsn = next;
      q.max_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(opt.chunk_bytes, limit - next));
      q.seal_epoch = seal;
      auto call = ch->Start(q, c.cfg.op_timeout);
      if (!call.ok()) {
        if (flight.empty()) return ClientStatus(Code::kUnavailable, "read: " + call.status().message());
        break;
      }
      flight.push_back(Request{next, q.max_bytes, std::move(*call)});
      next += q.max_bytes;
      ++stats.requests;
      stats.max_in_flight = std::max<std::uint64_t>(stats.max_in_flight, flight.size());
    }
    return ClientStatus();
  }

  // Waits for the oldest request and moves its bytes into `ready` (empty
  // before). The checks are LogClient::Read's.
  ClientStatus TakeFirst() {
    Request r = std::move(flight.front());
    flight.pop_front();
    auto rep = r.call->Wait(c.cfg.op_timeout);
    if (ClientStatus s = c.CheckReadReply(rep, node); !s.ok()) return s;
    ready.clear();
    ready_off = 0;
    for (auto& range : rep->ranges) {
      if (range.start != r.start + ready.size()) break;
      if (ready.empty()) ready = std::move(range.bytes);
      else ready += range.bytes;
    }
    if (ready.size() > r.len) ready.resize(r.len);
    if (ready.size() < r.len) {
      // The rest was asked from after a gap: go on from here.
      if (!flight.empty()) ++stats.restarts;
      flight.clear();
      next = r.start + ready.size();
    }
    return ClientStatus();
  }
};

LogReadAhead::LogReadAhead(LogClient& client, ReadAheadOptions options)
    : s_(std::make_unique<State>(client, *client.impl_, options)) {}

LogReadAhead::~LogReadAhead() = default;

ClientResult<std::string> LogReadAhead::Read(Lsn from, std::size_t max_bytes) {
  State& s = *s_;
  Lsn limit;
  {
    std::lock_guard<std::mutex> l(s.c.mu);
    limit = std::min(s.c.frontier.load(), s.c.stream_end);
  }
  if (from >= limit) {
    // The end of the stream: the tail image (overwritable) or nothing.
    if (s.active) s.Drop();
    return s.client.Read(from, max_bytes);
  }
  if (max_bytes == 0) return std::string();
  if (s.active && (from != s.pos || (s.ch && !s.ch->open()))) {
    ++s.stats.restarts;
    s.Drop();
  }
  if (!s.active) {
    ClientStatus b = s.Begin(from);
    if (!b.ok()) return b;
  }
  // Fill fails only with nothing in flight; with bytes ready that can wait
  // for the next call (the caller has something to do meanwhile).
  ClientStatus st = s.Fill(limit);
  if (s.ReadyBytes() == 0) {
    if (st.ok()) st = s.TakeFirst();
    if (!st.ok()) {
      s.Drop();
      return st;
    }
    // Keep the node busy while the caller works through these bytes.
    s.Fill(limit).IgnoreError();
  }
  const std::size_t n = std::min(max_bytes, s.ReadyBytes());
  std::string out = s.ready.substr(s.ready_off, n);
  s.ready_off += n;
  s.pos += n;
  s.stats.bytes += n;
  return out;
}

ReadAheadStats LogReadAhead::stats() const { return s_->stats; }
std::size_t LogReadAhead::in_flight() const { return s_->flight.size(); }

}  // namespace strata::logservice::client
