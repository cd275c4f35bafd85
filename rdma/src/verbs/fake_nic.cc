// FakeNic implementation: see fake_nic.h for what it models and why.
//
// One Fabric per FakeNic: every QP's queues live in it behind one mutex, and
// one NIC thread (Run) takes the steps that a NIC does on its own: transmit
// the head of a send queue (read the source, place it at the peer, generate
// the peer's receive completion) and acknowledge the oldest transmitted
// request (generate the send completion). Post*, Poll and Disconnect run on
// the callers' threads under the same mutex.
#include "verbs/fake_nic.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>
#include <thread>

#include "strata/rdma/crc32c.h"

namespace strata::rdma {
namespace {

// Poison: a byte pattern tied to the address, so any sub-range of a
// poisoned region can be checked on its own.
constexpr uint8_t kPoison[8] = {0xDE, 0xAD, 0xBE, 0xEF, 0xBA, 0xDC, 0x0F, 0xFE};

void Poison(std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i) p[i] = std::byte{kPoison[(reinterpret_cast<uintptr_t>(p) + i) & 7]};
}

bool IsPoisoned(const std::byte* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{kPoison[(reinterpret_cast<uintptr_t>(p) + i) & 7]}) return false;
  return true;
}

uint64_t Mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

struct Region {
  std::byte* base;
  size_t size;
  uint32_t key;
  bool remote_write;
};

struct SendWr {
  uint64_t wr_id = 0;
  bool write = false;  // RDMA_WRITE_WITH_IMM, else SEND
  std::byte* src = nullptr;
  uint32_t len = 0;
  uint64_t remote_addr = 0;
  uint32_t rkey = 0;
  uint32_t imm = 0;
  uint32_t crc = 0;                          // of the source at post time
  WcStatus outcome = WcStatus::kSuccess;     // decided at transmit, reported at acknowledgement
  bool lost = false;                         // sent to a QP in error: no ACK ever; flushed later
  bool poisoned = false;
  std::chrono::steady_clock::time_point ready;  // not transmitted / acknowledged before this

  std::string Describe() const {
    return "wr_id " + Hex(wr_id) + " (" + (write ? "RDMA WRITE with immediate" : "SEND") + " of " +
           std::to_string(len) + " bytes)";
  }
};

struct RecvWr {
  uint64_t wr_id;
  std::byte* buf;
  uint32_t len;
};

struct Cqe {
  Completion c;
  bool from_send_queue;
};

struct QpState {
  int pair = 0, side = 0;
  QpState* peer = nullptr;
  uint32_t send_depth = 0, recv_depth = 0;
  uint32_t send_outstanding = 0, recv_outstanding = 0;  // posted, completion not yet polled
  std::vector<Region> regions;
  std::deque<SendWr> sq;        // posted, not yet transmitted
  std::deque<SendWr> inflight;  // transmitted, not yet acknowledged
  std::deque<RecvWr> rq;
  std::deque<Cqe> cq;
  bool error = false;
  bool disconnected = false;
  bool dreq_pending = false;  // the peer disconnected; we move to error at a later step
  bool rnr_blocked = false;   // head of sq waits for a receive at the peer
  bool retrying = false;      // a transmitted request never arrived: nothing behind it does
  bool hold_transmit = false, hold_ack = false;
  bool armed = true;          // ibv_req_notify_cq: the next completion raises an event
  int event_fd = -1;
  uint64_t events[FakeFault::kKinds] = {};

  std::string Name() const { return "pair " + std::to_string(pair) + " side " + std::to_string(side); }
};

}  // namespace

struct FakeNic::Fabric {
  explicit Fabric(FakeNicOptions o) : options(std::move(o)), rng(Mix(options.seed)) {
    thread = std::thread([this] { Run(); });
  }
  ~Fabric() {
    {
      std::lock_guard lock(mu);
      stop = true;
    }
    cv.notify_all();
    thread.join();
  }

  // ---- under mu ----

  // Whether the next event of `kind` on `q` faults; the fault, or null.
  const FakeFault* Fires(QpState& q, FakeFault::Kind kind) {
    const auto k = static_cast<size_t>(kind);
    const uint64_t n = ++q.events[k];
    if (!faults_enabled || (options.max_faults != 0 && stats.faults_fired >= options.max_faults)) return nullptr;
    for (const FakeFault& f : options.faults) {
      if (f.kind != kind || (f.side >= 0 && f.side != q.side) || (f.pair >= 0 && f.pair != q.pair)) continue;
      bool fire = false;
      if (f.nth != 0) {
        fire = n == f.nth;
      } else if (f.probability > 0) {
        const uint64_t h = Mix(options.seed ^ Mix((uint64_t(q.pair) << 32) ^ (uint64_t(q.side) << 8) ^ k) ^ Mix(n));
        fire = static_cast<double>(h >> 11) * 0x1.0p-53 < f.probability;
      }
      if (fire) {
        ++stats.faults_fired;
        ++stats.faults_by_kind[k];
        return &f;
      }
    }
    return nullptr;
  }

  // When a transmission or acknowledgement may happen: now, or with
  // delay_probability up to max_delay later.
  std::chrono::steady_clock::time_point ReadyTime() {
    auto t = std::chrono::steady_clock::now();
    if (options.delay_probability > 0 && std::uniform_real_distribution<double>(0, 1)(rng) < options.delay_probability)
      t += std::chrono::microseconds(rng() % (options.max_delay.count() + 1));
    return t;
  }

  // A request the peer never got: the requester retries it until its retry
  // count runs out, and the responder drops what follows it (PSN order).
  void Doom(QpState& q, SendWr& wr, WcStatus status) {
    wr.outcome = status;
    wr.ready = ReadyTime();
    q.retrying = true;
    q.inflight.push_back(wr);
  }

  void Violation(const QpState& q, std::string what) {
    std::string line = "fake NIC (seed " + std::to_string(options.seed) + ", " + q.Name() + "): " + what;
    std::fprintf(stderr, "%s\n", line.c_str());
    if (violations.size() < 100) violations.push_back(std::move(line));
  }

  bool Covers(const QpState& q, const std::byte* p, size_t n, uint32_t key, bool need_remote) const {
    for (const Region& r : q.regions) {
      if (r.key == key && p >= r.base && p + n <= r.base + r.size && (!need_remote || r.remote_write)) return true;
    }
    return false;
  }

  void Push(QpState& q, Completion c, bool from_send_queue) {
    if (!c.ok()) {
      // The opcode of an error completion is undefined: make sure nobody
      // reads it (consumers classify by wr_id).
      c.op = static_cast<Completion::Op>(rng() % 4);
      if (c.status == WcStatus::kWrFlushErr) ++stats.flushed;
    }
    q.cq.push_back({c, from_send_queue});
    if (q.armed && q.event_fd >= 0) {
      q.armed = false;
      const uint64_t one = 1;
      [[maybe_unused]] ssize_t r = ::write(q.event_fd, &one, sizeof one);
    }
  }

  static Completion Make(Completion::Op op, WcStatus status, uint64_t wr_id, uint32_t byte_len = 0, uint32_t imm = 0) {
    Completion c;
    c.op = op;
    c.status = status;
    c.wr_id = wr_id;
    c.byte_len = byte_len;
    c.imm = imm;
    return c;
  }

  void FlushSend(QpState& q, const SendWr& wr) {
    Push(q, Make(wr.write ? Completion::Op::kWrite : Completion::Op::kSend, WcStatus::kWrFlushErr, wr.wr_id), true);
  }
  void FlushRecv(QpState& q, const RecvWr& r) { Push(q, Make(Completion::Op::kRecv, WcStatus::kWrFlushErr, r.wr_id), false); }

  // The QP enters the error state: everything outstanding completes with
  // IBV_WC_WR_FLUSH_ERR, each queue in order (which queue first is drawn).
  void ToError(QpState& q) {
    if (q.error) return;
    q.error = true;
    q.dreq_pending = false;
    q.rnr_blocked = false;
    q.retrying = false;
    auto flush_send = [&] {
      for (const SendWr& wr : q.inflight) FlushSend(q, wr);
      for (const SendWr& wr : q.sq) FlushSend(q, wr);
      q.inflight.clear();
      q.sq.clear();
    };
    auto flush_recv = [&] {
      for (const RecvWr& r : q.rq) FlushRecv(q, r);
      q.rq.clear();
    };
    if (rng() % 2) {
      flush_send();
      flush_recv();
    } else {
      flush_recv();
      flush_send();
    }
    // A peer waiting for our receives now transmits into an error QP.
    if (q.peer != nullptr) q.peer->rnr_blocked = false;
    cv.notify_all();
  }

  void Transmit(QpState& q) {
    QpState* peer = q.peer;
    if (peer != nullptr && !peer->error && peer->rq.empty()) {
      // Receiver not ready (RNR NAK). Decided before anything else so that
      // a retried transmission does not count as another fault event.
      ++stats.rnr_waits;
      if (options.rnr_retry_forever) {
        q.rnr_blocked = true;
        return;
      }
    }
    SendWr wr = q.sq.front();
    q.sq.pop_front();
    if (options.poison && Crc32c(0, wr.src, wr.len) != wr.crc)
      Violation(q, wr.Describe() + ": its buffer changed between ibv_post_send and transmission");
    if (Fires(q, FakeFault::Kind::kQpError)) {
      q.sq.push_front(wr);
      ToError(q);
      return;
    }
    if (Fires(q, FakeFault::Kind::kDisconnect)) {
      // As if rdma_cm tore the connection down under the consumer (a port
      // went down, the CM timed out): it never called rdma_disconnect, yet
      // both ends flush; its own later Disconnect is a no-op.
      q.sq.push_front(wr);
      Disconnect(q);
      return;
    }
    if (peer == nullptr || peer->error) {
      // Nobody acknowledges: flushed when the disconnect reaches us.
      wr.lost = true;
      q.inflight.push_back(wr);
      return;
    }
    if (Fires(q, FakeFault::Kind::kRetryExceeded)) {
      Doom(q, wr, WcStatus::kRetryExcErr);
      return;
    }
    std::byte* target = reinterpret_cast<std::byte*>(wr.remote_addr);
    if (wr.write && (Fires(q, FakeFault::Kind::kRemoteAccessError) || !Covers(*peer, target, wr.len, wr.rkey, true))) {
      Doom(q, wr, WcStatus::kRemAccessErr);  // NAKed; the QP errors when it completes
      return;
    }
    if (peer->rq.empty()) {  // rnr_retry_forever off: the RNR retries ran out
      Doom(q, wr, WcStatus::kRnrRetryExcErr);
      return;
    }
    ++stats.transmitted;
    const RecvWr r = peer->rq.front();
    peer->rq.pop_front();
    if (options.poison && !IsPoisoned(r.buf, r.len))
      Violation(*peer, "receive buffer of wr_id " + Hex(r.wr_id) + " was written while it was posted");
    if (wr.write) {
      std::memcpy(target, wr.src, wr.len);
      Push(*peer, Make(Completion::Op::kRecvImm, WcStatus::kSuccess, r.wr_id, wr.len, wr.imm), false);
    } else if (r.len < wr.len) {
      Push(*peer, Make(Completion::Op::kRecv, WcStatus::kLocLenErr, r.wr_id), false);
      ToError(*peer);
      Doom(q, wr, WcStatus::kRemInvReqErr);
      return;
    } else {
      std::memcpy(r.buf, wr.src, wr.len);
      Push(*peer, Make(Completion::Op::kRecv, WcStatus::kSuccess, r.wr_id, wr.len), false);
    }
    if (options.poison) {
      Poison(wr.src, wr.len);
      wr.poisoned = true;
    }
    wr.ready = ReadyTime();
    q.inflight.push_back(wr);
  }

  // A new request's source overlaps one the NIC still owns: if that one's
  // poison is gone, the consumer wrote into it (checked now, before the new
  // request's own transmission poisons the range again).
  void CheckOverlap(QpState& q, const std::byte* src, size_t len) {
    for (SendWr& w : q.inflight) {
      if (!w.poisoned || w.src >= src + len || src >= w.src + w.len) continue;
      if (!IsPoisoned(w.src, w.len)) {
        Violation(q, w.Describe() + ": its buffer was written after transmission, before its completion "
                                    "(reused for a request posted meanwhile)");
        w.poisoned = false;
      }
    }
  }

  void Acknowledge(QpState& q) {
    const SendWr wr = q.inflight.front();
    q.inflight.pop_front();
    if (wr.poisoned && !IsPoisoned(wr.src, wr.len))
      Violation(q, wr.Describe() + ": its buffer was written after transmission, before its completion");
    ++stats.acknowledged;
    Push(q, Make(wr.write ? Completion::Op::kWrite : Completion::Op::kSend, wr.outcome, wr.wr_id, wr.len), true);
    if (wr.outcome != WcStatus::kSuccess) ToError(q);
  }

  // The peer's rdma_disconnect reaches us: what it had received is
  // acknowledged first (those ACKs left before its DREQ), then we error.
  void Dreq(QpState& q) {
    q.dreq_pending = false;
    while (!q.error && !q.inflight.empty() && !q.inflight.front().lost) Acknowledge(q);
    ToError(q);
  }

  void Disconnect(QpState& q) {
    if (q.disconnected) return;
    q.disconnected = true;
    ToError(q);
    if (q.peer != nullptr && !q.peer->error) q.peer->dreq_pending = true;
    cv.notify_all();
  }

  QpState* Find(int pair, int side) {
    for (QpState* q : qps)
      if (q->pair == pair && q->side == side) return q;
    return nullptr;
  }

  // ---- the NIC thread ----
  void Run() {
    std::unique_lock lock(mu);
    enum Step { kTransmit, kAck, kDreq };
    std::vector<std::pair<QpState*, Step>> steps;
    while (!stop) {
      steps.clear();
      const auto now = std::chrono::steady_clock::now();
      auto next = std::chrono::steady_clock::time_point::max();
      auto consider = [&](QpState* q, const SendWr& wr, Step step) {
        if (wr.ready <= now) steps.emplace_back(q, step);
        else next = std::min(next, wr.ready);
      };
      for (QpState* q : qps) {
        if (!q->hold_transmit && !q->rnr_blocked && !q->retrying && !q->sq.empty()) consider(q, q->sq.front(), kTransmit);
        if (!q->hold_ack && !q->inflight.empty() && !q->inflight.front().lost) consider(q, q->inflight.front(), kAck);
        if (q->dreq_pending) steps.emplace_back(q, kDreq);
      }
      if (steps.empty()) {
        if (next == std::chrono::steady_clock::time_point::max()) cv.wait(lock);
        else cv.wait_until(lock, next);
        continue;
      }
      auto [q, step] = steps[rng() % steps.size()];
      switch (step) {
        case kTransmit: Transmit(*q); break;
        case kAck: Acknowledge(*q); break;
        case kDreq: Dreq(*q); break;
      }
    }
  }

  mutable std::mutex mu;
  std::condition_variable cv;
  FakeNicOptions options;  // faults grow through AddFault (under mu)
  std::mt19937_64 rng;
  std::vector<QpState*> qps;
  std::vector<std::string> violations;
  FakeNicStats stats;
  uint32_t next_key = 0x100;
  int next_pair = 0;
  bool faults_enabled = true;
  bool stop = false;
  std::thread thread;  // last: starts once the rest exists
};

namespace {

class FakeQueuePair final : public QueuePair {
 public:
  using Fabric = FakeNic::Fabric;

  FakeQueuePair(std::shared_ptr<Fabric> fabric, std::unique_ptr<QpState> state)
      : fabric_(std::move(fabric)), q_(std::move(state)) {}

  ~FakeQueuePair() override {
    {
      std::lock_guard lock(fabric_->mu);
      fabric_->Disconnect(*q_);
      for (const Region& r : q_->regions) fabric_->stats.registered_bytes -= r.size;  // deregistered with the QP
      if (q_->peer != nullptr) q_->peer->peer = nullptr;
      std::erase(fabric_->qps, q_.get());
    }
    ::close(q_->event_fd);
  }

  Result<MemoryKeys> Register(std::span<std::byte> memory, bool remote_write) override {
    std::lock_guard lock(fabric_->mu);
    const uint32_t key = fabric_->next_key++;
    q_->regions.push_back({memory.data(), memory.size(), key, remote_write});
    fabric_->stats.registered_bytes += memory.size();
    return MemoryKeys{key, key};
  }

  Status PostRecv(uint64_t wr_id, std::span<std::byte> buffer, uint32_t lkey) override {
    std::lock_guard lock(fabric_->mu);
    Fabric& f = *fabric_;
    if (const FakeFault* fault = f.Fires(*q_, FakeFault::Kind::kPostRecvFails)) return VerbError("ibv_post_recv", fault->error);
    if (q_->recv_outstanding >= q_->recv_depth) return VerbError("ibv_post_recv", ENOMEM);
    if (!f.Covers(*q_, buffer.data(), buffer.size(), lkey, false))
      return VerbError("ibv_post_recv", EINVAL);  // a real NIC reports this as IBV_WC_LOC_PROT_ERR later
    ++q_->recv_outstanding;
    ++f.stats.posted_recvs;
    const RecvWr r{wr_id, buffer.data(), static_cast<uint32_t>(buffer.size())};
    if (q_->error) {
      f.FlushRecv(*q_, r);
      return Status::Ok();
    }
    if (f.options.poison) Poison(r.buf, r.len);
    q_->rq.push_back(r);
    if (q_->peer != nullptr && q_->peer->rnr_blocked) {
      q_->peer->rnr_blocked = false;
      f.cv.notify_all();
    }
    return Status::Ok();
  }

  Status PostSend(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey) override {
    return Post(wr_id, buffer, lkey, false, 0, 0, 0);
  }

  Status PostWriteImm(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey, uint64_t remote_addr,
                      uint32_t rkey, uint32_t imm) override {
    return Post(wr_id, buffer, lkey, true, remote_addr, rkey, imm);
  }

  Result<int> Poll(Completion* out, int max) override {
    std::lock_guard lock(fabric_->mu);
    if (fabric_->Fires(*q_, FakeFault::Kind::kPollFails)) return IoError("ibv_poll_cq failed: returned -1 (fake NIC fault)");
    int n = 0;
    while (n < max && !q_->cq.empty()) {
      const Cqe& e = q_->cq.front();
      if (e.from_send_queue) --q_->send_outstanding;
      else --q_->recv_outstanding;
      out[n++] = e.c;
      q_->cq.pop_front();
    }
    return n;
  }

  int event_fd() const override { return q_->event_fd; }

  Status ArmAndAck() override {
    uint64_t value;
    [[maybe_unused]] ssize_t r = ::read(q_->event_fd, &value, sizeof value);
    std::lock_guard lock(fabric_->mu);
    q_->armed = true;
    return Status::Ok();
  }

  Status Disconnect() override {
    std::lock_guard lock(fabric_->mu);
    fabric_->Disconnect(*q_);
    return Status::Ok();
  }

 private:
  Status Post(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey, bool write, uint64_t remote_addr,
              uint32_t rkey, uint32_t imm) {
    std::lock_guard lock(fabric_->mu);
    Fabric& f = *fabric_;
    if (const FakeFault* fault = f.Fires(*q_, FakeFault::Kind::kPostSendFails)) return VerbError("ibv_post_send", fault->error);
    if (q_->send_outstanding >= q_->send_depth) return VerbError("ibv_post_send", ENOMEM);
    auto* src = const_cast<std::byte*>(buffer.data());  // registered local memory the NIC may poison
    if (!f.Covers(*q_, src, buffer.size(), lkey, false)) return VerbError("ibv_post_send", EINVAL);
    ++q_->send_outstanding;
    ++f.stats.posted_sends;
    SendWr wr;
    wr.wr_id = wr_id;
    wr.write = write;
    wr.src = src;
    wr.len = static_cast<uint32_t>(buffer.size());
    wr.remote_addr = remote_addr;
    wr.rkey = rkey;
    wr.imm = imm;
    if (q_->error) {
      f.FlushSend(*q_, wr);
      return Status::Ok();
    }
    if (f.options.poison) {
      f.CheckOverlap(*q_, wr.src, wr.len);
      wr.crc = Crc32c(0, wr.src, wr.len);
    }
    wr.ready = f.ReadyTime();
    q_->sq.push_back(wr);
    f.cv.notify_all();
    return Status::Ok();
  }

  std::shared_ptr<Fabric> fabric_;
  std::unique_ptr<QpState> q_;
};

}  // namespace

FakeNic::FakeNic(FakeNicOptions options) : fabric_(std::make_shared<Fabric>(std::move(options))) {}

FakeNic::~FakeNic() = default;

std::pair<std::unique_ptr<QueuePair>, std::unique_ptr<QueuePair>> FakeNic::CreatePair(uint32_t send_depth,
                                                                                    uint32_t recv_depth) {
  auto a = std::make_unique<QpState>();
  auto b = std::make_unique<QpState>();
  {
    std::lock_guard lock(fabric_->mu);
    const int pair = fabric_->next_pair++;
    for (QpState* q : {a.get(), b.get()}) {
      q->pair = pair;
      q->send_depth = send_depth;
      q->recv_depth = recv_depth;
      q->event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
      fabric_->qps.push_back(q);
    }
    b->side = 1;
    a->peer = b.get();
    b->peer = a.get();
  }
  return {std::make_unique<FakeQueuePair>(fabric_, std::move(a)), std::make_unique<FakeQueuePair>(fabric_, std::move(b))};
}

void FakeNic::Hold(int pair, int side, Stage stage, bool held) {
  {
    std::lock_guard lock(fabric_->mu);
    QpState* q = fabric_->Find(pair, side);
    if (q == nullptr) return;
    (stage == Stage::kTransmit ? q->hold_transmit : q->hold_ack) = held;
  }
  fabric_->cv.notify_all();
}

void FakeNic::AddFault(const FakeFault& fault) {
  std::lock_guard lock(fabric_->mu);
  fabric_->options.faults.push_back(fault);
}

void FakeNic::SetFaultsEnabled(bool enabled) {
  std::lock_guard lock(fabric_->mu);
  fabric_->faults_enabled = enabled;
}

std::vector<std::string> FakeNic::violations() const {
  std::lock_guard lock(fabric_->mu);
  return fabric_->violations;
}

FakeNicStats FakeNic::stats() const {
  std::lock_guard lock(fabric_->mu);
  return fabric_->stats;
}

uint64_t FakeNic::seed() const { return fabric_->options.seed; }

}  // namespace strata::rdma
