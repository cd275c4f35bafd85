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
//   truncate(lsn)      only a no-op is possible (lsn at or past the stream
//                      end); anything else is refused: see the design note,
//                      section 12, "Trap for step 6"
//   release()          no client call exists yet: a no-op
//
// Threads: LogClient is thread-safe; this class adds a mutex only around the
// creation of the client.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "backend.h"
#include "backend_logservice.h"
#include "strata/logservice/client.h"

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

  std::string describe() const override {
    std::string nodes;
    for (const auto &n : cfg_.nodes) nodes += (nodes.empty() ? "" : ",") + n;
    return "'" + cfg_.volume + "' on " + nodes;
  }

  Status open(bool) override { return Status::Ok(); }

  Status acquire_writer(WriterInfo *out) override {
    std::lock_guard<std::mutex> guard(mutex_);
    reader_.reset();
    if (writer_ == nullptr) {
      auto r = ls::LogClient::Open(config(ls::OpenMode::kWriter));
      if (!r.ok()) return from(r.status());
      writer_ = std::move(*r);
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
    out->metadata = r->metadata;
    return Status::Ok();
  }

  Status write_checkpoint(std::uint64_t lsn, std::string_view metadata) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "write_checkpoint before acquire_writer");
    return from(writer_->WriteCheckpoint(lsn, metadata));
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

  Status put_tail(std::uint64_t block_lsn, const void *block, std::uint64_t data_end) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "put_tail before acquire_writer");
    if (Status s = start_stream_at(block_lsn); !s.ok()) return s;
    return from(writer_->PutTail(
        block_lsn, std::string_view(static_cast<const char *>(block), kBlockSize), data_end));
  }

  Status wait_durable(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "wait_durable before acquire_writer");
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
      const auto s = writer_->WaitDurable(lsn, std::chrono::seconds(5));
      if (s.ok() || s.code() == ls::Code::kFenced) return from(s);
      if (!keep_waiting("wait for durable redo", s, start)) return from(s);
    }
  }

  std::uint64_t durable_lsn() const override {
    return writer_ != nullptr ? writer_->durable_lsn() : 0;
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
    for (const auto &n : s.nodes)
      h.nodes.push_back(NodeHealth{n.address, n.connected, n.connected && n.sealed, n.durable,
                                   n.last_error});
    return h;
  }

  Status truncate(std::uint64_t lsn) override {
    if (writer_ == nullptr) return Status(Code::kInvalid, "truncate before acquire_writer");
    if (lsn >= writer_->stream_end()) return Status::Ok();
    return Status(Code::kInvalid,
                  "recovery ended at LSN " + std::to_string(lsn) +
                      ", inside the stored block stream (which ends at " +
                      std::to_string(writer_->stream_end()) +
                      "); the log service client cannot cut it yet");
  }

  Status release(std::uint64_t) override { return Status::Ok(); }

  Status read(std::uint64_t lsn, void *buf, std::size_t len, std::size_t *got) override {
    *got = 0;
    ls::LogClient *c = client();
    if (c == nullptr) return open_status_;
    // Read() stops at the stream end (the tail image comes from a read that
    // starts there) and at its own size limit: loop until full or empty.
    auto *out = static_cast<char *>(buf);
    std::size_t done = 0;
    while (done < len) {
      auto r = c->Read(lsn + done, len - done);
      if (!r.ok()) return from(r.status());
      const std::size_t n = std::min(len - done, r->size()) / kBlockSize * kBlockSize;
      if (n == 0) break;
      std::memcpy(out + done, r->data(), n);
      done += n;
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
  std::unique_ptr<ls::LogClient> reader_;
  Status open_status_{Code::kUnavailable, "not connected"};
};

}  // namespace

std::unique_ptr<Backend> make_logservice_backend(LogServiceConfig cfg) {
  return std::make_unique<LogServiceBackend>(std::move(cfg));
}

}  // namespace strata::redo
