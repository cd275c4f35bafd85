#include "log_file.h"

#include <algorithm>
#include <cerrno>
#include <vector>

namespace strata_audit {

std::string octal(uint32_t mode) {
  std::string s;
  do {
    s.insert(s.begin(), static_cast<char>('0' + (mode & 7)));
    mode >>= 3;
  } while (mode != 0);
  while (s.size() < 4) s.insert(s.begin(), '0');
  return s;
}

int LogFile::open(uint64_t *torn, std::string *what) {
  *torn = 0;
  if (fd_ >= 0) return 0;
  int err = fs_->open_append(path_, &fd_);
  if (err) {
    *what = "open " + path_;
    fd_ = -1;
    return err;
  }
  tightened_from_ = 0;
  uint32_t mode = 0;
  err = fs_->file_mode(fd_, &mode);
  if (err) {
    *what = "stat " + path_;
    close();
    return err;
  }
  if (mode != kFileMode) {
    err = fs_->chmod(fd_, kFileMode);
    if (err) {
      *what = "the audit log " + path_ + " has mode " + octal(mode) +
              " (others may read it) and changing it to " +
              octal(kFileMode) + " failed, so it is not opened: fchmod";
      close();
      return err;
    }
    tightened_from_ = mode;
  }
  err = fs_->file_size(fd_, &size_);
  if (err) {
    *what = "stat " + path_;
    close();
    return err;
  }
  rollback_pending_ = false;
  err = repair_tail(torn, what);
  if (err) return err;
  return open_envelope(what);
}

int LogFile::open_envelope(std::string *what) {
  if (!footer_.empty() && size_ >= footer_.size()) {
    std::string tail(footer_.size(), '\0');
    size_t got = 0;
    int err = fs_->pread(fd_, tail.data(), tail.size(), size_ - tail.size(), &got);
    if (err || got != tail.size()) {
      *what = "read " + path_;
      return err ? err : EIO;
    }
    if (tail == footer_) {
      err = fs_->truncate(fd_, size_ - footer_.size());
      if (err) {
        *what = "truncate " + path_ + " (its closing " + footer_.substr(0, footer_.size() - 1) + ")";
        return err;
      }
      size_ -= footer_.size();
    }
  }
  if (!header_.empty() && size_ == 0) {
    iovec iov{header_.data(), header_.size()};
    return append(&iov, 1, false, what);
  }
  return 0;
}

int LogFile::finish(std::string *what) {
  if (fd_ < 0 || footer_.empty()) return 0;
  iovec iov{footer_.data(), footer_.size()};
  return append(&iov, 1, false, what);
}

int LogFile::repair_tail(uint64_t *removed, std::string *what) {
  *removed = 0;
  if (size_ == 0) return 0;
  char last;
  size_t got = 0;
  int err = fs_->pread(fd_, &last, 1, size_ - 1, &got);
  if (err || got != 1) {
    *what = "read " + path_;
    return err ? err : EIO;
  }
  if (last == '\n') return 0;
  // Find the last '\n' and cut everything after it.
  std::vector<char> buf(64 * 1024);
  uint64_t end = size_;
  uint64_t keep = 0;
  while (end > 0) {
    const uint64_t start = end > buf.size() ? end - buf.size() : 0;
    const size_t len = static_cast<size_t>(end - start);
    err = fs_->pread(fd_, buf.data(), len, start, &got);
    if (err || got != len) {
      *what = "read " + path_;
      return err ? err : EIO;
    }
    bool found = false;
    for (size_t i = len; i > 0; --i) {
      if (buf[i - 1] == '\n') {
        keep = start + i;
        found = true;
        break;
      }
    }
    if (found) break;
    end = start;
  }
  err = fs_->truncate(fd_, keep);
  if (err) {
    *what = "truncate " + path_;
    return err;
  }
  *removed = size_ - keep;
  size_ = keep;
  return 0;
}

int LogFile::append(const iovec *iov, int n, bool sync, std::string *what) {
  if (fd_ < 0) {
    *what = "write " + path_ + " (not open)";
    return EBADF;
  }
  if (rollback_pending_) {
    int err = fs_->truncate(fd_, size_);
    if (err) {
      *what = "truncate " + path_ + " after a failed write";
      return err;
    }
    rollback_pending_ = false;
  }
  size_t written = 0;
  int err = fs_->writev_all(fd_, iov, n, &written);
  if (err) {
    *what = "write " + path_;
    if (written > 0) {
      if (fs_->truncate(fd_, size_) != 0) rollback_pending_ = true;
    }
    return err;
  }
  size_ += written;
  if (sync) {
    err = fs_->fsync(fd_);
    if (err) {
      *what = "fdatasync " + path_;
      return err;
    }
  }
  return 0;
}

int LogFile::reopen(uint64_t *torn, std::string *what) {
  close();
  return open(torn, what);
}

int LogFile::last_line_heads(size_t max_lines, size_t head_bytes,
                             std::vector<std::string> *heads,
                             std::string *what) {
  heads->clear();
  if (fd_ < 0 || size_ == 0) return 0;
  // After open() the file ends with '\n' (repair_tail). A line is
  // [start, end) with the '\n' at end; scan backward for the '\n' before it.
  std::vector<char> buf(64 * 1024);
  uint64_t end = size_ - 1;
  uint64_t pos = end;  // bytes [0, pos) not scanned yet for this line
  while (heads->size() < max_lines) {
    uint64_t start = 0;
    bool found = false;
    while (pos > 0 && !found) {
      const uint64_t from = pos > buf.size() ? pos - buf.size() : 0;
      const size_t len = static_cast<size_t>(pos - from);
      size_t got = 0;
      int err = fs_->pread(fd_, buf.data(), len, from, &got);
      if (err || got != len) {
        *what = "read " + path_;
        return err ? err : EIO;
      }
      for (size_t i = len; i > 0; --i) {
        if (buf[i - 1] == '\n') {
          start = from + i;
          found = true;
          break;
        }
      }
      pos = found ? start - 1 : from;
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>(head_bytes, end - start));
    std::string head(n, '\0');
    size_t got = 0;
    int err = n ? fs_->pread(fd_, head.data(), n, start, &got) : 0;
    if (err || got != n) {
      *what = "read " + path_;
      return err ? err : EIO;
    }
    heads->push_back(std::move(head));
    if (!found) break;  // that was the first line
    end = start - 1;
    pos = end;
  }
  return 0;
}

void LogFile::close() {
  if (fd_ >= 0) fs_->close(fd_);
  fd_ = -1;
  size_ = 0;
  rollback_pending_ = false;
}

int LogFile::rotate_if_needed(uint64_t limit, unsigned keep, bool *rotated,
                              std::string *what) {
  *rotated = false;
  if (limit == 0 || size_ < limit || fd_ < 0) return 0;
  // Highest existing index (keep == 0: all files are kept and shifted).
  unsigned top = 0;
  while (fs_->exists(rotated_name(top + 1))) ++top;
  if (keep > 0) {
    for (unsigned i = top; i >= keep && i > 0; --i) {
      int err = fs_->unlink(rotated_name(i));
      if (err && err != ENOENT) {
        *what = "unlink " + rotated_name(i);
        return err;
      }
    }
    if (top >= keep) top = keep - 1;
  }
  for (unsigned i = top; i > 0; --i) {
    int err = fs_->rename(rotated_name(i), rotated_name(i + 1));
    if (err) {
      *what = "rename " + rotated_name(i);
      return err;
    }
  }
  std::string ignored_what;
  (void)finish(&ignored_what);  // if it fails, the file ends as after a crash
  close();
  int err = fs_->rename(path_, rotated_name(1));
  if (err == ENOENT) err = 0;  // someone removed the file: start a new one
  if (err) {
    *what = "rename " + path_;
    uint64_t torn;
    std::string ignored;
    (void)open(&torn, &ignored);  // keep logging to the old file
    return err;
  }
  *rotated = true;
  uint64_t torn;
  return open(&torn, what);
}

}  // namespace strata_audit
