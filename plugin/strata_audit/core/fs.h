// The file operations the audit log needs, behind an interface so tests can
// inject faults (a full disk, failing renames). Errors are errno values
// (0 = success). Implementations must be thread-compatible: the LogFile that
// uses one serialises its calls.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstdint>
#include <string>

namespace strata_audit {

class Fs {
 public:
  virtual ~Fs() = default;
  // Opens for appending (creating with mode 0600 if missing); also readable,
  // for the torn-tail check.
  [[nodiscard]] virtual int open_append(const std::string &path, int *fd) = 0;
  // Writes all of iov or fails; *written says how much reached the file.
  [[nodiscard]] virtual int writev_all(int fd, const iovec *iov, int n,
                                       size_t *written) = 0;
  [[nodiscard]] virtual int pread(int fd, void *buf, size_t len,
                                  uint64_t off, size_t *got) = 0;
  [[nodiscard]] virtual int fsync(int fd) = 0;
  [[nodiscard]] virtual int file_size(int fd, uint64_t *size) = 0;
  // The permission bits (07777) of an open file, and changing them.
  [[nodiscard]] virtual int file_mode(int fd, uint32_t *mode) = 0;
  [[nodiscard]] virtual int chmod(int fd, uint32_t mode) = 0;
  [[nodiscard]] virtual int truncate(int fd, uint64_t size) = 0;
  virtual void close(int fd) = 0;
  [[nodiscard]] virtual int rename(const std::string &from,
                                   const std::string &to) = 0;
  [[nodiscard]] virtual int unlink(const std::string &path) = 0;
  virtual bool exists(const std::string &path) = 0;
};

// The real thing (POSIX calls, EINTR retried).
Fs *posix_fs();

}  // namespace strata_audit
