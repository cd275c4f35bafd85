#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <vector>

#include "fs.h"

namespace strata_audit {

namespace {

class PosixFs final : public Fs {
 public:
  int open_append(const std::string &path, int *fd) override {
    int r;
    do {
      r = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return errno;
    *fd = r;
    return 0;
  }

  int writev_all(int fd, const iovec *iov, int n, size_t *written) override {
    *written = 0;
    std::vector<iovec> v(iov, iov + n);
    size_t i = 0;
    while (i < v.size()) {
      if (v[i].iov_len == 0) {
        ++i;
        continue;
      }
      ssize_t w = ::writev(fd, v.data() + i, static_cast<int>(v.size() - i));
      if (w < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      if (w == 0) return EIO;
      *written += static_cast<size_t>(w);
      size_t left = static_cast<size_t>(w);
      while (left > 0 && i < v.size()) {
        if (left >= v[i].iov_len) {
          left -= v[i].iov_len;
          ++i;
        } else {
          v[i].iov_base = static_cast<char *>(v[i].iov_base) + left;
          v[i].iov_len -= left;
          left = 0;
        }
      }
    }
    return 0;
  }

  int pread(int fd, void *buf, size_t len, uint64_t off, size_t *got) override {
    ssize_t r;
    do {
      r = ::pread(fd, buf, len, static_cast<off_t>(off));
    } while (r < 0 && errno == EINTR);
    if (r < 0) return errno;
    *got = static_cast<size_t>(r);
    return 0;
  }

  int fsync(int fd) override { return ::fdatasync(fd) == 0 ? 0 : errno; }

  int file_size(int fd, uint64_t *size) override {
    struct stat st;
    if (::fstat(fd, &st) != 0) return errno;
    *size = static_cast<uint64_t>(st.st_size);
    return 0;
  }

  int file_mode(int fd, uint32_t *mode) override {
    struct stat st;
    if (::fstat(fd, &st) != 0) return errno;
    *mode = static_cast<uint32_t>(st.st_mode & 07777);
    return 0;
  }

  int chmod(int fd, uint32_t mode) override {
    int r;
    do {
      r = ::fchmod(fd, static_cast<mode_t>(mode));
    } while (r < 0 && errno == EINTR);
    return r == 0 ? 0 : errno;
  }

  int truncate(int fd, uint64_t size) override {
    return ::ftruncate(fd, static_cast<off_t>(size)) == 0 ? 0 : errno;
  }

  void close(int fd) override { ::close(fd); }

  int rename(const std::string &from, const std::string &to) override {
    return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  }

  int unlink(const std::string &path) override {
    return ::unlink(path.c_str()) == 0 ? 0 : errno;
  }

  bool exists(const std::string &path) override {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
  }
};

}  // namespace

Fs *posix_fs() {
  static PosixFs fs;
  return &fs;
}

}  // namespace strata_audit
