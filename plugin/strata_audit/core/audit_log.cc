#include "audit_log.h"

#include <syslog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace strata_audit {

std::optional<Strategy> parse_strategy(std::string_view name) {
  std::string up;
  for (char c : name) up.push_back((c >= 'a' && c <= 'z') ? c - 'a' + 'A' : c);
  if (up == "ASYNCHRONOUS") return Strategy::kAsynchronous;
  if (up == "PERFORMANCE") return Strategy::kPerformance;
  if (up == "SEMISYNCHRONOUS") return Strategy::kSemisynchronous;
  if (up == "SYNCHRONOUS") return Strategy::kSynchronous;
  return std::nullopt;
}

int last_record_id_in(LogFile *file, uint64_t *id, std::string *what) {
  // A record's id is in its first ~60 bytes in every format; lines without
  // one (none of ours so far) are passed over, a few at most.
  constexpr size_t kLines = 8;
  constexpr size_t kHead = 256;
  *id = 0;
  std::vector<std::string> heads;
  int err = file->last_line_heads(kLines, kHead, &heads, what);
  if (err) return err;
  for (const auto &h : heads) {
    if ((*id = parse_record_id(h)) != 0) break;
  }
  return 0;
}

uint64_t parse_record_id(std::string_view line) {
  // The first "N_YYYY-MM-DDT" in the line.
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9') continue;
    if (i > 0 && line[i - 1] >= '0' && line[i - 1] <= '9') continue;
    size_t j = i;
    uint64_t v = 0;
    while (j < line.size() && line[j] >= '0' && line[j] <= '9' && j - i < 19)
      v = v * 10 + static_cast<uint64_t>(line[j++] - '0');
    if (j + 12 <= line.size() && line[j] == '_' && line[j + 5] == '-' &&
        line[j + 8] == '-' && line[j + 11] == 'T')
      return v;
  }
  return 0;
}

namespace {

// Buffers that grow to hold one huge statement are not kept at that size
// for the life of the thread (or of the log).
constexpr size_t kKeepBufferBytes = size_t{1} << 20;

void release_if_huge(std::string &s, size_t keep = kKeepBufferBytes) {
  if (s.capacity() > keep) std::string().swap(s);
}

struct ReleaseIfHuge {
  std::string &s;
  ~ReleaseIfHuge() { release_if_huge(s); }
};

}  // namespace

AuditLog::AuditLog(Options opts)
    : opts_(std::move(opts)),
      ring_(opts_.buffer_size),
      file_(opts_.fs ? opts_.fs : posix_fs(), opts_.path),
      rotate_on_size_(opts_.rotate_on_size),
      rotations_(opts_.rotations) {
  if (opts_.handler == Handler::kFile)
    file_.set_envelope(std::string(file_header(opts_.format)),
                       std::string(file_footer(opts_.format)));
  if (!opts_.clock_us) {
    opts_.clock_us = [] {
      return std::chrono::duration_cast<std::chrono::microseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  if (!opts_.syslog_write) {
    const int prio = opts_.syslog_priority ? opts_.syslog_priority
                                           : (LOG_USER | LOG_INFO);
    const std::string prefix =
        opts_.syslog_ident.empty() ? "" : opts_.syslog_ident + ": ";
    opts_.syslog_write = [prio, prefix](std::string_view line) {
      ::syslog(prio, "%s%.*s", prefix.c_str(), static_cast<int>(line.size()),
               line.data());
    };
  }
}

AuditLog::~AuditLog() { stop(); }

void AuditLog::report(bool error, const std::string &msg) {
  if (opts_.log) opts_.log(error, msg);
}

void AuditLog::report_tightened_locked() {
  if (file_.is_open() && file_.tightened_from() != 0)
    report(false, "the audit log " + file_.path() + " had mode " +
                      octal(file_.tightened_from()) +
                      " (readable or writable by others); changed to " +
                      octal(LogFile::kFileMode));
}

int AuditLog::start(std::string *error) {
  uint64_t torn = 0;
  std::string what;
  uint64_t last_id = 0;
  if (opts_.handler == Handler::kFile) {
    std::lock_guard<std::mutex> fl(file_mu_);
    int err = file_.open(&torn, &what);
    if (err) {
      *error = what + ": " + std::strerror(err);
      return err;
    }
    report_tightened_locked();
    // The ids continue from the highest found in the file and in the newest
    // rotated one (the file may be new, or hold only older records). If
    // either cannot be read the log does not start: the ids could go back.
    err = last_record_id_in(&file_, &last_id, &what);
    Fs *fs = opts_.fs ? opts_.fs : posix_fs();
    LogFile prev(fs, file_.rotated_name(1));
    if (!err && fs->exists(prev.path())) {
      uint64_t prev_id = 0, prev_torn = 0;
      err = prev.open(&prev_torn, &what);
      if (!err) err = last_record_id_in(&prev, &prev_id, &what);
      last_id = std::max(last_id, prev_id);
    }
    if (err) {
      *error = what + " (to continue the record ids): " + std::strerror(err);
      file_.close();
      return err;
    }
    stats_.current_size = file_.size();
  }
  if (torn > 0) {
    report(false, "removed " + std::to_string(torn) +
                      " bytes of an incomplete last record (left by a crash) "
                      "from " + opts_.path);
  }
  {
    std::lock_guard<std::mutex> lk(mu_);
    sync_next_id_ = last_id + 1;
    log_start_.clear();
    const int64_t now = opts_.clock_us();
    last_time_us_.store(now);
    append_time(&log_start_, now, false);
    stop_.store(false);
    writer_state_.store(kBusy);
    running_ = true;
    // Publishes the above to every session that reserves a record.
    ring_.reset(last_id + 1);
  }
  if (asynchronous()) writer_ = std::thread([this] { writer_main(); });
  return 0;
}

void AuditLog::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!running_) return;
    running_ = false;
  }
  // No record can be reserved after close(); the writer drains the ones
  // reserved before (waiting for those still being copied), then exits.
  ring_.close();
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lk(mu_);
  }
  cv_data_.notify_all();
  if (writer_.joinable()) writer_.join();
  {
    std::lock_guard<std::mutex> lk(mu_);
  }
  cv_space_.notify_all();
  std::lock_guard<std::mutex> fl(file_mu_);
  if (opts_.handler == Handler::kFile && file_.is_open()) {
    iovec none{nullptr, 0};
    std::string what;
    (void)file_.finish(&what);  // a clean close: the XML formats' footer
    (void)file_.append(&none, 0, true, &what);  // fdatasync what we wrote
  }
  file_.close();
}

uint64_t AuditLog::last_record_id() const {
  if (asynchronous()) return ring_.next_id() - 1;
  std::lock_guard<std::mutex> lk(mu_);
  return sync_next_id_ - 1;
}

int64_t AuditLog::stamp_time() {
  // Called after the head of the ring was loaded (acquire) and before the
  // CAS that reserves the record (seq_cst, so release): the previous
  // record's time was raised into last_time_us_ before its CAS, whose value
  // this session loaded, so it is visible here and the time never goes
  // below it. Every caller raises last_time_us_ to its own time.
  int64_t now = opts_.clock_us();
  int64_t last = last_time_us_.load(std::memory_order_relaxed);
  while (now > last && !last_time_us_.compare_exchange_weak(
                           last, now, std::memory_order_relaxed)) {
  }
  return now > last ? now : last;
}

void AuditLog::wake_writer() {
  stats_.writer_wakeups.fetch_add(1, std::memory_order_relaxed);
  { std::lock_guard<std::mutex> lk(mu_); }
  cv_data_.notify_one();
}

void AuditLog::append_sync(std::string_view head, std::string_view tail) {
  std::lock_guard<std::mutex> lk(mu_);
  if (!running_) return;
  Stamp s;
  s.record_id = sync_next_id_++;
  s.time_us = stamp_time();
  s.server_id = opts_.server_id;
  s.log_start = log_start_;
  scratch_.clear();
  scratch_.append(head);
  format_stamp(opts_.format, s, &scratch_);
  scratch_.append(tail);
  std::lock_guard<std::mutex> fl(file_mu_);
  write_locked(scratch_, 1, opts_.strategy == Strategy::kSynchronous);
}

void AuditLog::append(const Record &r) {
  if (!asynchronous()) {
    // Formatted here, with no shared state touched; only the stamped span
    // (record id, time) is formatted under mu_, in append_sync().
    thread_local std::string body;
    body.clear();
    StampSpan span;
    Stamp draft;
    draft.server_id = opts_.server_id;
    format_record(opts_.format, r, draft, &body, &span);
    append_sync(std::string_view(body.data(), span.begin),
                std::string_view(body.data() + span.end,
                                 body.size() - span.end));
    return;
  }
  // Copied as it is; the writer formats it (raw_record.h says why).
  const size_t size = raw_size(r);
  if (size > kMaxRawSize) {
    stats_.events_lost.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  thread_local std::string raw;
  const ReleaseIfHuge release_raw{raw};  // after the writer is done with it
  raw.resize(size);
  encode_raw(r, raw.data());
  int64_t time_us = 0;
  auto size_for = [&](uint64_t) {
    time_us = stamp_time();
    return size;
  };

  const bool may_wait = opts_.strategy == Strategy::kAsynchronous;
  RecordRing::Reservation res;
  bool waited = false;  // Audit_log_write_waits counts appends, not naps
  for (;;) {
    size_t need = 0;
    const RecordRing::Status st = ring_.reserve(size_for, may_wait, &res, &need);
    if (st == RecordRing::Status::kOk) break;
    if (st == RecordRing::Status::kClosed) return;
    if (st == RecordRing::Status::kTooBig || !may_wait) {
      stats_.events_lost.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // ASYNCHRONOUS, full. First drain the buffer here if nobody is writing:
    // with many more sessions than CPUs the writer thread may wait long for
    // a CPU, and a session that is running anyway writes without a wake-up
    // and a context switch. Then retry (somebody else may reserve first).
    if (drain_if_idle()) {
      stats_.session_drains.fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    // Somebody else is writing, or the oldest record is still being
    // copied: wait for room, for one drain at most, then try again from
    // the top: the room may have been taken by others first, and the next
    // drain may be this session's to do (the writer may still get no CPU).
    if (!waited) {
      stats_.write_waits.fetch_add(1, std::memory_order_relaxed);
      waited = true;
    }
    need = std::min(need, ring_.capacity());
    std::unique_lock<std::mutex> lk(mu_);
    waiters_.fetch_add(1);  // seq_cst: before the check (record_ring.h)
    if (writer_state_.load() != kBusy) {
      writer_state_.store(kBusy);
      cv_data_.notify_one();
    }
    // Drains notify; the timeout covers a record whose copying session
    // publishes it while only sessions could drain.
    if (!ring_.room_for(need))
      cv_space_.wait_for(lk, std::chrono::milliseconds(10));
    waiters_.fetch_sub(1);
  }

  set_raw_time(raw.data(), time_us);
  if (res.by_reference) {
    // Longer than the whole buffer: the writer writes it from here, in id
    // order; wait until it has.
    stats_.write_waits.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lk(mu_);
    waiters_.fetch_add(1);
    ring_.publish(res, raw.data());
    writer_state_.store(kBusy);
    cv_data_.notify_one();
    while (ring_.consumed_id() <= res.id)
      cv_space_.wait_for(lk, std::chrono::milliseconds(100));
    waiters_.fetch_sub(1);
    return;
  }

  ring_.copy(res, 0, raw);
  ring_.publish(res);

  // Wake the writer only when it sleeps waiting for a first record or for
  // this record, or sleeps out its batch window with the buffer a quarter
  // full; otherwise it wakes by itself within kBatchWindow. The seq_cst
  // load pairs with the writer's seq_cst store of its state before it
  // checks for records.
  int ws = writer_state_.load();
  if (ws == kIdleSleep ||
      (ws == kAwaitRecord && awaited_id_.load() == res.id) ||
      (ws == kBatchSleep &&
       res.pos + res.len - ring_.consumed_pos() >= ring_.capacity() / 4)) {
    if (writer_state_.compare_exchange_strong(ws, kBusy)) wake_writer();
  }
}

void AuditLog::writer_main() {
  // After a drain the writer sleeps out a batch window even if the ring is
  // empty: under load the next records arrive within it, and a writer gone
  // to idle sleep would be woken by the next session instead (a futex wake
  // on that session's path and a context switch for every batch). Only a
  // window that ends with nothing reserved sends it to idle sleep, so under
  // steady load it wakes once per window, on its own timer, and a record
  // waits at most about one window.
  bool drained = false;       // since the last sleep
  bool window_slept = false;  // the last sleep was a whole batch window
  for (;;) {
    // stop_ first: once it is set the ring is closed, so a next_id() read
    // after it is final.
    const bool stopping = stop_.load();
    if (ring_.consumed_id() == ring_.next_id()) {  // nothing reserved
      if (stopping) break;
      if (drained) {
        batch_sleep();
        drained = false;
        window_slept = true;
        continue;
      }
      std::unique_lock<std::mutex> lk(mu_);
      writer_state_.store(kIdleSleep);  // seq_cst, then check (Dekker)
      if (ring_.consumed_id() == ring_.next_id() && !stop_.load())
        cv_data_.wait_for(lk, std::chrono::milliseconds(500));
      writer_state_.store(kBusy);
      window_slept = false;
      continue;
    }
    // Let a batch build up (bounded delay; see append()), unless the
    // records already waited out a window.
    if (!window_slept) batch_sleep();
    window_slept = false;
    // Sessions may consume too (drain_if_idle), so the ring is read only
    // under file_mu_; this check of the oldest record's state is atomic.
    const uint64_t id = ring_.consumed_id();
    if (!ring_.is_published(id) && id != ring_.next_id()) {
      // The oldest record is reserved but still being copied by a session
      // that was preempted: only the writer waits for it, asleep (polling
      // here would take CPU from that very session); the session wakes it
      // when it publishes the record.
      std::unique_lock<std::mutex> lk(mu_);
      awaited_id_.store(id);
      writer_state_.store(kAwaitRecord);  // seq_cst, then check (Dekker)
      // (A session may have consumed it meanwhile and its slot been
      // reused: then the tail has moved, and the writer does not sleep.)
      if (ring_.consumed_id() == id && !ring_.is_published(id))
        cv_data_.wait_for(lk, std::chrono::milliseconds(10));
      writer_state_.store(kBusy);
      window_slept = true;  // the records have waited already
      continue;
    }
    if (opts_.before_writer_drain) opts_.before_writer_drain();
    if (drain_locked(std::unique_lock<std::mutex>(file_mu_))) drained = true;
  }
}

void AuditLog::batch_sleep() {
  if (stop_.load() || waiters_.load() != 0 ||
      ring_.used() >= ring_.capacity() / 4)
    return;
  std::unique_lock<std::mutex> lk(mu_);
  writer_state_.store(kBatchSleep);  // seq_cst, then check (Dekker)
  if (!stop_.load() && waiters_.load() == 0)
    cv_data_.wait_for(lk, kBatchWindow);
  writer_state_.store(kBusy);
}

bool AuditLog::drain_if_idle() {
  std::unique_lock<std::mutex> fl(file_mu_, std::try_to_lock);
  if (!fl.owns_lock()) return false;
  return drain_locked(std::move(fl));
}

bool AuditLog::drain_locked(std::unique_lock<std::mutex> fl) {
  // Peek, write and consume under file_mu_: whoever holds it is the ring's
  // only consumer (record_ring.h), the writer thread or a session.
  const RecordRing::Batch b = ring_.peek();
  if (b.records == 0) return false;
  format_batch_locked(b);
  write_locked(formatted_, b.records, false);
  // A full buffer formats to about 2.5 times its size.
  release_if_huge(formatted_, std::max(kKeepBufferBytes, 4 * ring_.capacity()));
  ring_.consume(b);  // seq_cst stores, then the waiters_ check (Dekker)
  fl.unlock();
  if (waiters_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_space_.notify_all();
  }
  return true;
}

void AuditLog::format_batch_locked(const RecordRing::Batch &b) {
  // The batch is b.records encoded records back to back in b.a then b.b;
  // the bytes [off, off + n) of that, copied into straddling_ if they
  // straddle the two.
  auto bytes = [&](size_t off, size_t n) -> std::string_view {
    if (off >= b.a.size()) return b.b.substr(off - b.a.size(), n);
    if (off + n <= b.a.size()) return b.a.substr(off, n);
    straddling_.assign(b.a.substr(off));
    straddling_.append(b.b.substr(0, n - (b.a.size() - off)));
    return straddling_;
  };
  formatted_.clear();
  Stamp s;
  s.record_id = ring_.consumed_id();
  s.server_id = opts_.server_id;
  s.log_start = log_start_;
  size_t off = 0;
  for (uint64_t i = 0; i < b.records; ++i, ++s.record_id) {
    const uint32_t size = raw_record_size(bytes(off, sizeof(uint32_t)).data());
    const std::string_view raw = bytes(off, size);
    off += size;
    Record r;
    if (!decode_raw(raw, &r, &s.time_us)) {
      // Cannot happen (the ring hands back what sessions encoded); keep
      // the file readable and the id sequence whole, and say so.
      r = Record();
      r.kind = EventKind::kAuditConfig;
      r.variable = "strata_audit_internal_error";
      r.value = "undecodable buffered record";
    }
    format_record(opts_.format, r, s, &formatted_);
  }
}

void AuditLog::write_locked(std::string_view bytes, uint64_t n, bool sync) {
  if (opts_.handler == Handler::kSyslog) {
    // Records never contain '\n' (all formats escape it), so each line is
    // one record.
    size_t start = 0;
    while (start < bytes.size()) {
      size_t nl = bytes.find('\n', start);
      if (nl == std::string_view::npos) nl = bytes.size();
      opts_.syslog_write(bytes.substr(start, nl - start));
      start = nl + 1;
    }
    stats_.events_written.fetch_add(n, std::memory_order_relaxed);
    stats_.total_size.fetch_add(bytes.size(), std::memory_order_relaxed);
    return;
  }
  std::string what;
  int err = 0;
  if (!file_.is_open()) {
    uint64_t torn;
    err = file_.open(&torn, &what);
    if (!err) report_tightened_locked();
  }
  if (!err) {
    iovec iov{const_cast<char *>(bytes.data()), bytes.size()};
    err = file_.append(&iov, 1, sync, &what);
  }
  if (err) {
    stats_.events_lost.fetch_add(n, std::memory_order_relaxed);
    stats_.write_errors.fetch_add(1, std::memory_order_relaxed);
    ++errors_in_episode_;
    if (!io_error_) {
      io_error_ = true;
      report(true, "cannot write the audit log: " + what + ": " +
                       std::strerror(err) +
                       "; records are dropped until writing succeeds "
                       "(see Audit_log_events_lost, Audit_log_write_errors)");
    }
    return;
  }
  stats_.events_written.fetch_add(n, std::memory_order_relaxed);
  stats_.total_size.fetch_add(bytes.size(), std::memory_order_relaxed);
  if (io_error_) {
    io_error_ = false;
    report(false, "audit log writable again after " +
                      std::to_string(errors_in_episode_) + " failed writes");
    errors_in_episode_ = 0;
  }
  bool rotated = false;
  err = file_.rotate_if_needed(rotate_on_size_, rotations_, &rotated, &what);
  if (err) {
    report(true, "cannot rotate the audit log: " + what + ": " +
                     std::strerror(err));
  }
  if (rotated) stats_.rotations_done.fetch_add(1, std::memory_order_relaxed);
  stats_.current_size.store(file_.size(), std::memory_order_relaxed);
}

int AuditLog::reopen() {
  if (opts_.handler != Handler::kFile) return 0;
  std::lock_guard<std::mutex> fl(file_mu_);
  uint64_t torn;
  std::string what;
  // The file may have been renamed away (outside rotation): it gets its
  // footer; if not, reopening removes it again.
  (void)file_.finish(&what);
  int err = file_.reopen(&torn, &what);
  if (err) {
    report(true, "cannot reopen the audit log: " + what + ": " +
                     std::strerror(err));
  }
  report_tightened_locked();
  stats_.current_size.store(file_.size(), std::memory_order_relaxed);
  return err;
}

void AuditLog::set_rotation(uint64_t size, unsigned keep) {
  std::lock_guard<std::mutex> fl(file_mu_);
  rotate_on_size_ = size;
  rotations_ = keep;
}

void AuditLog::flush_buffer() {
  if (!asynchronous()) return;  // sessions wrote their records themselves
  // Waits for what was reserved before the call only: under steady load the
  // buffer may never be empty.
  const uint64_t target = ring_.next_id();
  if (ring_.consumed_id() >= target) return;
  std::unique_lock<std::mutex> lk(mu_);
  waiters_.fetch_add(1);
  writer_state_.store(kBusy);
  cv_data_.notify_one();
  while (ring_.consumed_id() < target && !stop_.load())
    cv_space_.wait_for(lk, std::chrono::milliseconds(100));
  waiters_.fetch_sub(1);
}

}  // namespace strata_audit
