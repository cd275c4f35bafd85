// The audit log file: append whole records, rotate by size, reopen.
//
// Crash and error model:
// - Records reach the file only as whole records (the caller hands complete
//   records). A write that fails half way (ENOSPC, EIO) is rolled back with
//   ftruncate to the size before it; until that rollback succeeds no further
//   append is attempted, so a partial record is never followed by others.
// - A crash (kill -9, power loss) can still leave a partial last record.
//   open() removes bytes after the last '\n' ("torn tail") and reports how
//   many, so after a restart every line of the file is a complete record.
// - New files are created with mode 0600 (owner only). An existing file
//   with any other permission bit (group or other access, execute, setuid)
//   is set to 0600 when opened (tightened_from() says from what); if that
//   fails the file is not opened: a record never goes to a file others can
//   read.
// - Envelope (OLD and NEW formats: the file is one XML document): a header
//   is written to a new, empty file at open(), a footer by finish() (a
//   clean close, and before a rotation renames the file); open() removes a
//   footer that ends an existing file before records are appended. A crash
//   leaves a file without its footer, as it leaves Percona's.
// - Rotation renames path -> path.1 -> path.2 ...; keep = N keeps path.1 ..
//   path.N and deletes older ones; keep = 0 keeps all of them.
// Thread-safety: none; the owner (AuditLog) serialises all calls.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fs.h"

namespace strata_audit {

// "0600": a mode in octal, at least four digits.
std::string octal(uint32_t mode);

class LogFile {
 public:
  LogFile(Fs *fs, std::string path) : fs_(fs), path_(std::move(path)) {}
  ~LogFile() { close(); }
  LogFile(const LogFile &) = delete;
  LogFile &operator=(const LogFile &) = delete;

  // Set before open(): what a file starts and ends with ("" for nothing).
  void set_envelope(std::string header, std::string footer) {
    header_ = std::move(header);
    footer_ = std::move(footer);
  }

  // Errors below: errno value, and *what names the operation and path.
  [[nodiscard]] int open(uint64_t *torn_bytes_removed, std::string *what);
  [[nodiscard]] int append(const iovec *iov, int n, bool sync,
                           std::string *what);
  [[nodiscard]] int reopen(uint64_t *torn_bytes_removed, std::string *what);
  [[nodiscard]] int rotate_if_needed(uint64_t limit, unsigned keep,
                                     bool *rotated, std::string *what);
  // Appends the footer, if any (the file stays open). Errno.
  [[nodiscard]] int finish(std::string *what);
  void close();
  // The heads (first head_bytes at most, without '\n') of the last
  // max_lines complete lines, newest first, however long the lines are: it
  // reads backward through the file to each line's start. Empty if none.
  // Error: errno (a failed read), *what set.
  [[nodiscard]] int last_line_heads(size_t max_lines, size_t head_bytes,
                                    std::vector<std::string> *heads,
                                    std::string *what);

  bool is_open() const { return fd_ >= 0; }
  // The mode the last open() found and changed to kFileMode, or 0.
  uint32_t tightened_from() const { return tightened_from_; }
  static constexpr uint32_t kFileMode = 0600;
  uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }
  std::string rotated_name(unsigned i) const {
    return path_ + "." + std::to_string(i);
  }

 private:
  [[nodiscard]] int repair_tail(uint64_t *removed, std::string *what);
  // Removes a footer ending the file, writes the header to an empty one.
  [[nodiscard]] int open_envelope(std::string *what);

  Fs *fs_;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  bool rollback_pending_ = false;  // a failed append left bytes past size_
  uint32_t tightened_from_ = 0;
  std::string header_, footer_;
};

}  // namespace strata_audit
