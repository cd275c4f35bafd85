// The log-service volume: backend.h over the client library of logservice/
// (LogClient, logservice/include/strata/logservice/client.h). No MySQL headers.
//
// Mapping:
//   open()             remembers the configuration; nothing is contacted yet
//   acquire_writer()   LogClient::Open(kWriter): epoch bump on a read quorum,
//                      seal, W nodes brought to the sealed end (fences older
//                      writers); log_end = sealed_end()
//   read_checkpoint()  Open(kReadOnly) first if no client exists yet (so
//                      sys_init reads identity before recovery fences)
//   append/put_tail    Append / PutTail (copied, asynchronous, backpressure
//                      in Append through max_inflight_bytes)
//   wait_durable(lsn)  WaitDurable in slices of 5 s, logging each stalled
//                      slice; stall_timeout (0 = forever) turns it fatal
//   wait_written(lsn)  WaitWritten, the same way (a write quorum holds the
//                      bytes in its log files, maybe not yet synced)
//   put_tail(B) below  the rewind after a crash (below): recovery ended inside
//   the stream end     a complete block B, which InnoDB must write again
//   truncate(lsn)      a no-op at or past the stream end (the rewind did the
//                      cutting); anything else is refused
//   read(lsn, len)     LogReadAhead over the current client: recovery asks
//                      64 KiB at a time, front to back, and one round trip
//                      each was the cost of a restart; the read-ahead keeps
//                      reads of 1 MiB in flight (read_ahead.h), same bytes
//   release(lsn)       LogClient::Release on a thread of its own (the files
//                      governor calls this under log.m_files_mutex and must
//                      not wait for a round trip), capped at what every node
//                      holds, so a node that is behind or down can still catch
//                      up from its peers; each node also caps it at its
//                      stored checkpoint
//
// The rewind. A crash can leave the stored stream ending in complete blocks
// that hold a torn mtr: an Append of more than 1 MiB went out in parts, or a
// write's complete blocks reached the quorum and its tail did not. Recovery
// then stops at recovered_lsn inside block B < stream_end, and InnoDB's first
// write is PutTail(B, trimmed block), which the client only takes at the
// stream end. So, in this order:
//   1. the trimmed block B goes into the checkpoint record, after InnoDB's
//      metadata ("pending tail"), durably on a write quorum;
//   2. the writer reopens with seal_at = B: a new epoch, every node cuts at B;
//   3. PutTail(B) as usual; once it is durable (truncate(), called by
//      start_writer after wait_durable) the pending tail is dropped again.
// The cut is bounded: only the last write can have been torn, so a recovery
// that ends more than max_rewind_bytes (the log buffer) before the stored end
// means the scan stopped for another reason (a damaged block, a bug), and
// cutting there would destroy redo a quorum acknowledged on every replica.
// That start is refused, naming both LSNs; nothing is written.
// A crash after 1 leaves the stream as it was: recovery stops at the same
// LSN and the rewind runs again. A crash after 2 leaves the stream ending at
// B with nothing there: read() then serves block B from the pending tail, so
// recovery again reaches recovered_lsn and nothing before it is lost.
//
// Threads: LogClient is thread-safe; this class adds a mutex only around the
// creation of the client.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "backend.h"
#include "backend_logservice.h"
#include "strata/logservice/client.h"
#include "strata/logservice/read_ahead.h"

namespace strata::redo {

namespace {

namespace ls = strata::logservice::client;

Status from(const ls::ClientStatus &s) {
  switch (s.code()) {
    case ls::Code::kOk:
      return Status::Ok();
    case ls::Code::kNotFound:
      return Status(Code::kNotFound, s.message());
    case ls::Code::kFenced:
      return Status(Code::kFenced, s.message());
    case ls::Code::kUnavailable:
    case ls::Code::kTimeout:
      return Status(Code::kUnavailable, s.message());
    case ls::Code::kAuthFailed:
      return Status(Code::kUnavailable,
                    "a node refused us: different innodb_log_service_cluster_id or secret (" +
                        s.message() + ")");
    case ls::Code::kInvalidArgument:
      return Status(Code::kInvalid, s.message());
    case ls::Code::kFailed:
      return Status(Code::kIoError, s.message());
  }
  return Status(Code::kIoError, s.message());
}

class LogServiceBackend final : public Backend {
 public:
  explicit LogServiceBackend(LogServiceConfig cfg) : cfg_(std::move(cfg)) {}

  ~LogServiceBackend() override {
    {
      std::lock_guard<std::mutex> guard(release_mutex_);
      release_stop_ = true;
    }
    release_cv_.notify_all();
    if (release_thread_.joinable()) release_thread_.join();
  }

  std::string describe() const override {
    std::string nodes;
    for (const auto &n : cfg_.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    return "'" + cfg_.volume + "' on " + nodes;
  }

  Status open(bool) override { return Status::Ok(); }

  Status acquire_writer(WriterInfo *out) override {
    std::lock_guard<std::mutex> guard(mutex_);
    ahead_.reset();  // it reads through reader_
    reader_.reset();
    if (writer_ == nullptr) {
      auto r = ls::LogClient::Open(config(ls::OpenMode::kWriter));
      if (!r.ok()) return from(r.status());
      writer_ = std::move(*r);
      writer_->set_written_acks(written_acks_);
    }
    out->epoch = writer_->epoch();
    out->log_end = writer_->sealed_end();
    return Status::Ok();
  }

  Status read_checkpoint(Checkpoint *out) override {
    ls::LogClient *c = client();
    if (c == nullptr) return open_status_;
    auto r = c->ReadCheckpoint();
    if (!r.ok()) return from(r.status());
    out->lsn = r->lsn;
    out->epoch = r->epoch;
    split_pending(r->metadata, &out->metadata);
    checkpoint_lsn_ = out->lsn;
    metadata_ = out->metadata;
    return Status::Ok();
  }

  Status write_checkpoint(std::uint64_t lsn, std::string_view metadata) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "write_checkpoint before acquire_writer");
    checkpoint_lsn_ = lsn;
    metadata_ = std::string(metadata);
    // A connection dropping (a node restarting, a silent peer) must not fail
    // the checkpoint while the client reconnects: retry like append does.
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto s = writer_->WriteCheckpoint(lsn, with_pending(metadata_));
      if (s.ok() || s.code() == ls::Code::kFenced || s.code() == ls::Code::kInvalidArgument)
        return from(s);
      if (!keep_waiting("checkpoint", s, start)) return from(s);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }

  Status append(std::uint64_t lsn, const void *blocks, std::size_t len) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "append before acquire_writer");
    if (Status s = start_stream_at(lsn); !s.ok()) return s;
    const std::string_view bytes(static_cast<const char *>(blocks), len);
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto s = writer_->Append(lsn, bytes, std::chrono::seconds(5));
      if (s.ok() || s.code() == ls::Code::kFenced || s.code() == ls::Code::kInvalidArgument)
        return from(s);
      if (!keep_waiting("append", s, start)) return from(s);
    }
  }

  // The tail goes with the blocks (LogClient::AppendWithTail) only at the
  // stream end; a rewind (put_tail below) never follows an append.
  Status append_with_tail(std::uint64_t lsn, const void *blocks, std::size_t len, const void *tail,
                          std::uint64_t data_end) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "append before acquire_writer");
    if (Status s = start_stream_at(lsn); !s.ok()) return s;
    const std::string_view bytes(static_cast<const char *>(blocks), len);
    const std::string_view image(static_cast<const char *>(tail), kBlockSize);
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto s = writer_->AppendWithTail(lsn, bytes, image, data_end, std::chrono::seconds(5));
      if (s.ok() || s.code() == ls::Code::kFenced || s.code() == ls::Code::kInvalidArgument)
        return from(s);
      if (!keep_waiting("append", s, start)) return from(s);
    }
  }

  Status put_tail(std::uint64_t block_lsn, const void *block, std::uint64_t data_end) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "put_tail before acquire_writer");
    if (block_lsn < writer_->stream_end() ||
        (block_lsn == writer_->stream_end() && data_end < writer_->sealed_end())) {
      if (Status s = rewind(block_lsn, block, data_end); !s.ok()) return s;
    }
    if (Status s = start_stream_at(block_lsn); !s.ok()) return s;
    return from(writer_->PutTail(
        block_lsn, std::string_view(static_cast<const char *>(block), kBlockSize), data_end));
  }

  Status wait_durable(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "wait_durable before acquire_writer");
    return wait_in_slices("wait for durable redo",
                          [&](std::chrono::milliseconds slice) { return writer_->WaitDurable(lsn, slice); });
  }

  Status wait_written(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "wait_written before acquire_writer");
    return wait_in_slices("wait for written redo",
                          [&](std::chrono::milliseconds slice) { return writer_->WaitWritten(lsn, slice); });
  }

  // Runs a client wait in slices of 5 s until it succeeds, the writer is
  // fenced, or keep_waiting() gives up (it logs each stalled slice).
  template <typename Wait>
  Status wait_in_slices(const char *what, Wait wait) {
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto s = wait(std::chrono::milliseconds(5000));
      if (s.ok() || s.code() == ls::Code::kFenced) return from(s);
      if (!keep_waiting(what, s, start)) return from(s);
    }
  }

  std::uint64_t durable_lsn() const override {
    return writer_ != nullptr ? writer_->durable_lsn() : 0;
  }

  void set_written_acks(bool on) override {
    std::lock_guard<std::mutex> guard(mutex_);
    written_acks_ = on;  // for a client opened later (a rewind)
    if (writer_ != nullptr) writer_->set_written_acks(on);
  }

  void set_max_inflight(std::uint64_t bytes) override {
    std::lock_guard<std::mutex> guard(mutex_);
    cfg_.max_inflight_bytes = bytes;  // for a client opened later (a rewind)
    if (writer_ != nullptr) writer_->set_max_inflight_bytes(bytes);
  }

  Health health() const override {
    Health h;
    h.write_quorum = cfg_.write_quorum;
    if (writer_ == nullptr) {
      h.reason = "not the writer yet";
      for (const auto &n : cfg_.nodes) h.nodes.push_back(NodeHealth{n, false, false, 0, ""});
      return h;
    }
    const ls::ClusterStatus s = writer_->status();
    h.nodes_up = s.healthy;
    h.fenced = s.fenced;
    h.reason = s.reason;
    // A node rebuilding after losing its storage is sealed but counts toward
    // no quorum (docs/design/logservice-node-rebuild.md).
    for (const auto &n : s.nodes)
      h.nodes.push_back(NodeHealth{n.address, n.connected, n.connected && n.sealed && !n.rebuilding, n.durable,
                                   n.rebuilding && n.last_error.empty() ? "rebuilding from peers" : n.last_error});
    return h;
  }

  ClientWriteStats write_stats() const override {
    ClientWriteStats out;
    if (writer_ == nullptr) return out;
    const ls::WriteStats w = writer_->write_stats();
    static_assert(ClientWriteStats::kBuckets == ls::LatencyHistogram::kBuckets);
    out.appends = w.appends;
    out.tails = w.tails;
    out.window_wait_ns = w.window_wait_ns;
    out.posts = w.posts;
    out.post_ns = w.post_ns;
    out.first_acks = w.first_acks;
    out.first_ack_ns = w.first_ack_ns;
    out.second_acks = w.second_acks;
    out.second_ack_ns = w.second_ack_ns;
    out.durable_groups = w.durable_groups;
    out.durable_ns = w.durable_ns;
    for (int b = 0; b < ClientWriteStats::kBuckets; ++b) out.durable_hist[b] = w.durable_hist.counts[b];
    out.waits = w.waits;
    out.wait_ns = w.wait_ns;
    out.wait_wakeups = w.wait_wakeups;
    out.wake_ns = w.wake_ns;
    return out;
  }

  Status truncate(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "truncate before acquire_writer");
    if (lsn >= writer_->stream_end()) {
      if (pending_.empty()) return Status::Ok();
      // The rewound tail is durable (start_writer waited for it): the copy
      // in the checkpoint record has done its job.
      pending_.clear();
      return from(writer_->WriteCheckpoint(checkpoint_lsn_, metadata_));
    }
    return Status(Code::kInvalid,
                  "recovery ended at LSN " + std::to_string(lsn) +
                      ", inside the stored block stream (which ends at " +
                      std::to_string(writer_->stream_end()) +
                      "); the log service client cannot cut it yet");
  }

  Status release(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "release before acquire_writer");
    for (const auto &n : writer_->status().nodes) lsn = std::min<std::uint64_t>(lsn, n.durable);
    lsn = lsn / kBlockSize * kBlockSize;
    {
      std::lock_guard<std::mutex> guard(release_mutex_);
      if (lsn <= release_target_) return Status::Ok();
      release_target_ = lsn;
      if (!release_thread_.joinable()) release_thread_ = std::thread([this] { release_loop(); });
    }
    release_cv_.notify_all();
    return Status::Ok();
  }

  Status read(std::uint64_t lsn, void *buf, std::size_t len, std::size_t *got) override {
    *got = 0;
    ls::LogReadAhead *c = read_ahead();
    if (c == nullptr) return open_status_;
    // Read() stops at the stream end (the tail image comes from a read that
    // starts there) and at what has arrived: loop until full or empty.
    auto *out = static_cast<char *>(buf);
    std::size_t done = 0;
    const auto start = std::chrono::steady_clock::now();
    while (done < len) {
      auto r = c->Read(lsn + done, len - done);
      if (!r.ok()) {
        // Recovery must not give up on one dropped connection: the client
        // reconnects; retry for up to 30 s.
        if (r.status().code() == ls::Code::kFenced ||
            std::chrono::steady_clock::now() - start > std::chrono::seconds(30))
          return from(r.status());
        if (cfg_.log) cfg_.log("read at " + std::to_string(lsn + done) + " retried: " + r.status().message());
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      const std::size_t n = std::min(len - done, r->size()) / kBlockSize * kBlockSize;
      if (n == 0) break;
      std::memcpy(out + done, r->data(), n);
      done += n;
    }
    // A rewind cut the stream at the pending tail's block and died before
    // that block was stored again: serve it from the checkpoint record.
    if (!pending_.empty() && done < len && lsn + done == pending_lsn()) {
      std::memcpy(out + done, pending_.data() + 16, kBlockSize);
      done += kBlockSize;
    }
    *got = done;
    return Status::Ok();
  }

 private:
  ls::ClusterConfig config(ls::OpenMode mode) const {
    ls::ClusterConfig c;
    c.nodes = cfg_.nodes;
    c.transport = cfg_.transport == 1   ? ls::TransportKind::kTcp
                  : cfg_.transport == 2 ? ls::TransportKind::kRdma
                                        : ls::TransportKind::kAuto;
    c.write_quorum = cfg_.write_quorum;
    c.cluster_id = cfg_.cluster_id;
    c.secret = cfg_.secret;
    c.mode = mode;
    c.max_inflight_bytes = cfg_.max_inflight_bytes;
    c.log = cfg_.log;
    return c;
  }

  // Sends the newest release target; a failure is logged and retried with
  // the next, higher target (the nodes keep the bytes meanwhile).
  void release_loop() {
    std::uint64_t done = 0;
    std::unique_lock<std::mutex> lock(release_mutex_);
    for (;;) {
      release_cv_.wait(lock, [&] { return release_stop_ || release_target_ > done; });
      if (release_stop_) return;
      const std::uint64_t target = release_target_;
      lock.unlock();
      const auto s = writer_->Release(target);
      if (!s.ok() && cfg_.log) cfg_.log("release below " + std::to_string(target) + ": " + s.message());
      lock.lock();
      done = target;
    }
  }

  // The pending tail travels after InnoDB's metadata in the checkpoint
  // record: metadata, then [block lsn (8), data end (8), block (512)], then
  // the 8-byte magic. InnoDB's own parser sees only what read_checkpoint
  // returns, never the trailer.
  static constexpr char kPendingMagic[] = "STRATAPT";
  static constexpr std::size_t kPendingSize = 16 + kBlockSize;

  std::string with_pending(const std::string &metadata) const {
    return pending_.empty() ? metadata : metadata + pending_ + std::string(kPendingMagic, 8);
  }
  void split_pending(const std::string &record, std::string *metadata) {
    const std::size_t trailer = kPendingSize + 8;
    if (record.size() >= trailer &&
        record.compare(record.size() - 8, 8, std::string(kPendingMagic, 8)) == 0) {
      pending_ = record.substr(record.size() - trailer, kPendingSize);
      *metadata = record.substr(0, record.size() - trailer);
    } else {
      pending_.clear();
      *metadata = record;
    }
  }
  static std::uint64_t get64(const char *p) {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | static_cast<unsigned char>(p[i]);
    return v;
  }
  static void put64(std::string *s, std::uint64_t v) {
    for (int i = 7; i >= 0; --i) s->push_back(static_cast<char>(v >> (8 * i)));
  }
  std::uint64_t pending_lsn() const { return get64(pending_.data()); }

  // Steps 1 and 2 of the rewind (top of the file).
  Status rewind(std::uint64_t block_lsn, const void *block, std::uint64_t data_end) {
    const std::uint64_t stored_end = std::max(writer_->sealed_end(), writer_->stream_end());
    if (stored_end > data_end && stored_end - data_end > cfg_.max_rewind_bytes)
      return Status(Code::kInvalid,
                    "recovery ended at LSN " + std::to_string(data_end) + " but the log service holds redo up to LSN " +
                        std::to_string(stored_end) + ": cutting " + std::to_string(stored_end - data_end) +
                        " bytes is more than one log write can leave torn (innodb_log_buffer_size = " +
                        std::to_string(cfg_.max_rewind_bytes) +
                        "), so the redo after LSN " + std::to_string(data_end) +
                        " may hold acknowledged commits; refusing to start rather than cut it. If the log "
                        "buffer was larger before the crash, start with that innodb_log_buffer_size");
    std::string p;
    put64(&p, block_lsn);
    put64(&p, data_end);
    p.append(static_cast<const char *>(block), kBlockSize);
    pending_ = p;
    if (cfg_.log)
      cfg_.log("rewind: recovery ended at LSN " + std::to_string(data_end) + ", inside the stored stream (end " +
               std::to_string(writer_->stream_end()) + "); sealing the log service at " +
               std::to_string(block_lsn) + " and rewriting that block");
    if (Status s = from(writer_->WriteCheckpoint(checkpoint_lsn_, with_pending(metadata_))); !s.ok()) return s;
    std::lock_guard<std::mutex> guard(mutex_);
    ahead_.reset();  // it reads through writer_
    writer_.reset();
    ls::ClusterConfig c = config(ls::OpenMode::kWriter);
    c.seal_at = block_lsn;
    auto r = ls::LogClient::Open(c);
    if (!r.ok()) return from(r.status());
    writer_ = std::move(*r);
    writer_->set_written_acks(written_acks_);
    if (writer_->stream_end() != block_lsn)
      return Status(Code::kIoError, "the log service sealed at " + std::to_string(writer_->stream_end()) +
                                        ", not at " + std::to_string(block_lsn));
    return Status::Ok();
  }

  // A fresh stream starts at LSN 0, InnoDB's at LOG_START_LSN (8 KiB): fill
  // the blocks before it with zeros once (nothing ever reads them).
  Status start_stream_at(std::uint64_t lsn) {
    const std::uint64_t end = writer_->stream_end();
    if (end != 0 || lsn == 0) return Status::Ok();
    if (lsn % kBlockSize != 0 || lsn > (1u << 20))
      return Status(Code::kInvalid, "a fresh stream must start at a block below 1 MiB");
    return from(writer_->Append(0, std::string(lsn, '\0')));
  }

  // The writer if there is one, else a read-only client (created once).
  ls::LogClient *client() {
    std::lock_guard<std::mutex> guard(mutex_);
    if (writer_ != nullptr) return writer_.get();
    if (reader_ == nullptr) {
      auto r = ls::LogClient::Open(config(ls::OpenMode::kReadOnly));
      if (!r.ok()) {
        open_status_ = from(r.status());
        return nullptr;
      }
      reader_ = std::move(*r);
    }
    return reader_.get();
  }

  // The read-ahead over client(), made once per client; whoever replaces
  // writer_ or reader_ drops it first (it refers to the client).
  ls::LogReadAhead *read_ahead() {
    ls::LogClient *c = client();
    if (c == nullptr) return nullptr;
    std::lock_guard<std::mutex> guard(mutex_);
    if (ahead_ == nullptr || ahead_client_ != c) {
      ahead_ = std::make_unique<ls::LogReadAhead>(*c);
      ahead_client_ = c;
    }
    return ahead_.get();
  }

  // Logs one stalled 5 s slice; false once innodb_log_service_stall_timeout
  // (0 = wait forever) has passed since `start`.
  bool keep_waiting(const char *what, const ls::ClientStatus &s,
                    std::chrono::steady_clock::time_point start) {
    if (cfg_.log) cfg_.log(std::string("redo stalled: ") + what + ": " + s.message());
    const unsigned limit = cfg_.stall_timeout_seconds();
    return limit == 0 || std::chrono::steady_clock::now() - start < std::chrono::seconds(limit);
  }

  LogServiceConfig cfg_;
  std::mutex mutex_;
  std::unique_ptr<ls::LogClient> writer_;
  bool written_acks_ = true;  // LogClient::set_written_acks, kept across reopens
  std::unique_ptr<ls::LogClient> reader_;
  std::unique_ptr<ls::LogReadAhead> ahead_;  // recovery's reads (read_ahead())
  ls::LogClient *ahead_client_ = nullptr;     // the client ahead_ reads through
  // The checkpoint record as InnoDB last read or wrote it, so a rewind can
  // write it again with the pending tail after it.
  std::uint64_t checkpoint_lsn_ = 0;
  std::string metadata_;
  std::string pending_;  // empty, or kPendingSize bytes (see with_pending)
  std::mutex release_mutex_;
  std::condition_variable release_cv_;
  std::uint64_t release_target_ = 0;
  bool release_stop_ = false;
  std::thread release_thread_;
  Status open_status_{Code::kUnavailable, "not connected"};
};

}  // namespace

std::unique_ptr<Backend> make_logservice_backend(LogServiceConfig cfg) {
  return std::make_unique<LogServiceBackend>(std::move(cfg));
}

}  // namespace strata::redo
