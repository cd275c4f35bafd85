// Helpers for the audit core tests: a temp directory and a fault-injecting
// file layer (full disk, partial writes, a write gate to hold the writer).
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "fs.h"

namespace strata_audit::testing {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "strata_audit_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines(const std::string &s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t nl = s.find('\n', start);
    if (nl == std::string::npos) nl = s.size();
    out.push_back(s.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

class FaultFs final : public Fs {
 public:
  std::atomic<int> fail_write_errno{0};    // fail every write with this
  std::atomic<size_t> partial_bytes{0};    // ...after writing this much
  std::atomic<int> writes{0};
  std::atomic<int> fail_chmod_errno{0};  // fchmod fails with this (EPERM:
                                         // a file owned by someone else)
  std::atomic<int> held_at_gate{0};  // writes waiting for open_gate() now

  // Holds writers until open_gate() (to fill the buffer deterministically).
  void close_gate() {
    std::lock_guard<std::mutex> l(m_);
    gate_closed_ = true;
  }
  void open_gate() {
    {
      std::lock_guard<std::mutex> l(m_);
      gate_closed_ = false;
    }
    cv_.notify_all();
  }

  int open_append(const std::string &p, int *fd) override { return real()->open_append(p, fd); }
  int writev_all(int fd, const iovec *iov, int n, size_t *written) override {
    {
      std::unique_lock<std::mutex> l(m_);
      ++held_at_gate;
      cv_.wait(l, [&] { return !gate_closed_; });
      --held_at_gate;
    }
    ++writes;
    if (int e = fail_write_errno.load()) {
      *written = 0;
      size_t part = partial_bytes.load();
      if (part > 0 && n > 0) {
        iovec one{iov[0].iov_base, std::min(part, iov[0].iov_len)};
        size_t w = 0;
        (void)real()->writev_all(fd, &one, 1, &w);
        *written = w;
      }
      return e;
    }
    return real()->writev_all(fd, iov, n, written);
  }
  int pread(int fd, void *b, size_t l, uint64_t o, size_t *g) override { return real()->pread(fd, b, l, o, g); }
  int fsync(int fd) override { return real()->fsync(fd); }
  int file_size(int fd, uint64_t *s) override { return real()->file_size(fd, s); }
  int truncate(int fd, uint64_t s) override { return real()->truncate(fd, s); }
  int file_mode(int fd, uint32_t *m) override { return real()->file_mode(fd, m); }
  int chmod(int fd, uint32_t m) override {
    if (int e = fail_chmod_errno.load()) return e;
    return real()->chmod(fd, m);
  }
  void close(int fd) override { real()->close(fd); }
  int rename(const std::string &a, const std::string &b) override { return real()->rename(a, b); }
  int unlink(const std::string &p) override { return real()->unlink(p); }
  bool exists(const std::string &p) override { return real()->exists(p); }

 private:
  static Fs *real() { return posix_fs(); }
  std::mutex m_;
  std::condition_variable cv_;
  bool gate_closed_ = false;
};

}  // namespace strata_audit::testing
