#include "audit_log.h"

#include <syslog.h>

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

AuditLog::AuditLog(Options opts)
    : opts_(std::move(opts)),
      ring_(opts_.buffer_size),
      file_(opts_.fs ? opts_.fs : posix_fs(), opts_.path),
      rotate_on_size_(opts_.rotate_on_size),
      rotations_(opts_.rotations) {
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
  scratch_.reserve(4096);
}

AuditLog::~AuditLog() { stop(); }

void AuditLog::report(bool error, const std::string &msg) {
  if (opts_.log) opts_.log(error, msg);
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
    last_id = parse_record_id(file_.last_line());
    if (last_id == 0 && file_.size() == 0) {
      // Just rotated or new: the ids may continue from the newest old file.
      LogFile prev(opts_.fs ? opts_.fs : posix_fs(), file_.rotated_name(1));
      uint64_t t2;
      std::string w2;
      if ((opts_.fs ? opts_.fs : posix_fs())->exists(prev.path()) &&
          prev.open(&t2, &w2) == 0)
        last_id = parse_record_id(prev.last_line());
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
    next_id_ = last_id + 1;
    log_start_.clear();
    last_time_us_ = opts_.clock_us();
    append_time(&log_start_, last_time_us_, false);
    stop_ = false;
    running_ = true;
  }
  if (opts_.strategy == Strategy::kAsynchronous ||
      opts_.strategy == Strategy::kPerformance)
    writer_ = std::thread([this] { writer_main(); });
  return 0;
}

void AuditLog::stop() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (!running_) return;
    stop_ = true;
    running_ = false;
  }
  cv_data_.notify_all();
  cv_space_.notify_all();
  if (writer_.joinable()) writer_.join();
  std::lock_guard<std::mutex> fl(file_mu_);
  if (opts_.handler == Handler::kFile && file_.is_open()) {
    iovec none{nullptr, 0};
    std::string what;
    (void)file_.append(&none, 0, true, &what);  // fdatasync what we wrote
  }
  file_.close();
}

uint64_t AuditLog::last_record_id() const {
  std::lock_guard<std::mutex> lk(mu_);
  return next_id_ - 1;
}

void AuditLog::append(const Record &r) {
  // Format before taking mu_: with many sessions on few CPUs, a session
  // preempted while holding mu_ stalls all the others (formatting under the
  // lock cost point selects half their throughput). Under the lock only the
  // stamped span (record id, time) is written.
  thread_local std::string body;
  body.clear();
  StampSpan span;
  Stamp draft;
  draft.server_id = opts_.server_id;
  format_record(opts_.format, r, draft, &body, &span);
  const std::string_view head(body.data(), span.begin);
  const std::string_view tail(body.data() + span.end, body.size() - span.end);

  std::unique_lock<std::mutex> lk(mu_);
  bool big_owner = false;
  for (;;) {
    if (!running_) {
      if (big_owner) big_pending_ = false;
      return;
    }
    // Id, time and text are assigned together with the push below, in one
    // hold of mu_, so file order == id order. If the record cannot be
    // queued yet (ASYNCHRONOUS, buffer full), the id is given back (nobody
    // else took one meanwhile) and everything is redone after the wait.
    Stamp s;
    s.record_id = next_id_;
    int64_t now = opts_.clock_us();
    if (now < last_time_us_) now = last_time_us_;  // clock stepped back
    last_time_us_ = now;
    s.time_us = now;
    s.server_id = opts_.server_id;
    s.log_start = log_start_;
    scratch_.clear();
    scratch_.append(head);
    format_stamp(opts_.format, s, &scratch_);
    scratch_.append(tail);

    switch (opts_.strategy) {
      case Strategy::kSemisynchronous:
      case Strategy::kSynchronous: {
        ++next_id_;
        std::lock_guard<std::mutex> fl(file_mu_);
        write_locked(scratch_, {}, 1,
                     opts_.strategy == Strategy::kSynchronous);
        return;
      }
      case Strategy::kPerformance:
        ++next_id_;
        if (!ring_.push(scratch_)) {
          stats_.events_lost.fetch_add(1, std::memory_order_relaxed);
          return;
        }
        pushed_bytes_ += scratch_.size();
        break;
      case Strategy::kAsynchronous:
        if (big_pending_ && !big_owner) {
          // Someone waits to write a record bigger than the buffer: let the
          // buffer drain for it first.
          cv_space_.wait(lk, [&] { return !big_pending_ || !running_; });
          continue;
        }
        if (scratch_.size() > ring_.capacity()) {
          if (ring_.empty() && !writer_busy_) {
            // Bigger than the whole buffer: write it directly, in order.
            ++next_id_;
            {
              std::lock_guard<std::mutex> fl(file_mu_);
              write_locked(scratch_, {}, 1, false);
            }
            if (big_owner) {
              big_pending_ = false;
              cv_space_.notify_all();
            }
            return;
          }
          stats_.write_waits.fetch_add(1, std::memory_order_relaxed);
          big_pending_ = big_owner = true;  // new records wait behind it
          cv_data_.notify_one();
          cv_space_.wait(lk, [&] {
            return (ring_.empty() && !writer_busy_) || !running_;
          });
          continue;
        }
        if (ring_.free_space() < scratch_.size()) {
          stats_.write_waits.fetch_add(1, std::memory_order_relaxed);
          const size_t need = scratch_.size() + 32;  // id may grow a digit
          cv_data_.notify_one();
          cv_space_.wait(lk, [&] {
            return ring_.free_space() >= std::min(need, ring_.capacity()) ||
                   !running_;
          });
          continue;
        }
        ++next_id_;
        (void)ring_.push(scratch_);
        pushed_bytes_ += scratch_.size();
        break;
    }
    ++pending_records_;
    // Wake the writer only when it waits for a first record or when the
    // buffer is a quarter full; otherwise it wakes by itself within
    // kBatchWindow. This keeps a futex wake-up off most records.
    if ((writer_idle_ && pending_records_ == 1) ||
        (writer_sleeping_ && ring_.used() >= ring_.capacity() / 4))
      cv_data_.notify_one();
    return;
  }
}

void AuditLog::writer_main() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    if (ring_.empty() && !stop_) {
      writer_idle_ = writer_sleeping_ = true;
      cv_data_.wait(lk);
      writer_idle_ = writer_sleeping_ = false;
      continue;
    }
    if (ring_.empty() && stop_) break;
    if (!stop_ && flush_waiters_ == 0 &&
        ring_.used() < ring_.capacity() / 4) {
      // Let a batch build up (bounded delay; see append()).
      writer_sleeping_ = true;
      cv_data_.wait_for(lk, kBatchWindow);
      writer_sleeping_ = false;
    }
    std::string_view a, b;
    ring_.peek(&a, &b);
    const uint64_t n = pending_records_;
    pending_records_ = 0;
    writer_busy_ = true;
    lk.unlock();
    {
      std::lock_guard<std::mutex> fl(file_mu_);
      write_locked(a, b, n, false);
    }
    lk.lock();
    ring_.consume(a.size() + b.size());
    consumed_bytes_ += a.size() + b.size();
    writer_busy_ = false;
    cv_space_.notify_all();
  }
}

void AuditLog::write_locked(std::string_view a, std::string_view b, uint64_t n,
                            bool sync) {
  if (opts_.handler == Handler::kSyslog) {
    // Records never contain '\n' (all formats escape it), so each line is
    // one record; a record may wrap from a to b.
    std::string joined;
    auto emit = [&](std::string_view part) {
      size_t start = 0;
      while (start < part.size()) {
        const size_t nl = part.find('\n', start);
        if (nl == std::string_view::npos) {
          joined.append(part.substr(start));
          return;
        }
        if (joined.empty()) {
          opts_.syslog_write(part.substr(start, nl - start));
        } else {
          joined.append(part.substr(start, nl - start));
          opts_.syslog_write(joined);
          joined.clear();
        }
        start = nl + 1;
      }
    };
    emit(a);
    emit(b);
    stats_.events_written.fetch_add(n, std::memory_order_relaxed);
    stats_.total_size.fetch_add(a.size() + b.size(), std::memory_order_relaxed);
    return;
  }
  std::string what;
  int err = 0;
  if (!file_.is_open()) {
    uint64_t torn;
    err = file_.open(&torn, &what);
  }
  if (!err) {
    iovec iov[2] = {{const_cast<char *>(a.data()), a.size()},
                    {const_cast<char *>(b.data()), b.size()}};
    err = file_.append(iov, b.empty() ? 1 : 2, sync, &what);
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
  stats_.total_size.fetch_add(a.size() + b.size(), std::memory_order_relaxed);
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
  int err = file_.reopen(&torn, &what);
  if (err) {
    report(true, "cannot reopen the audit log: " + what + ": " +
                     std::strerror(err));
  }
  stats_.current_size.store(file_.size(), std::memory_order_relaxed);
  return err;
}

void AuditLog::set_rotation(uint64_t size, unsigned keep) {
  std::lock_guard<std::mutex> fl(file_mu_);
  rotate_on_size_ = size;
  rotations_ = keep;
}

void AuditLog::flush_buffer() {
  std::unique_lock<std::mutex> lk(mu_);
  // Waits for what was queued before the call only: under steady load the
  // buffer may never be empty.
  const uint64_t target = pushed_bytes_;
  ++flush_waiters_;
  cv_data_.notify_one();
  cv_space_.wait(lk, [&] {
    return consumed_bytes_ >= target || ring_.empty() || stop_ || !running_;
  });
  --flush_waiters_;
}

}  // namespace strata_audit
