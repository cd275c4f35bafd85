// dir://PATH: a redo volume in one local directory. For bring-up, for running
// upstream suites with the hooks active, and as the reference for what the
// log-service backend must do (backend.h). Single node: "quorum" is one
// fdatasync; the fence is an flock held for the life of the writer.
//
// Layout of PATH:
//   LOCK         flock(LOCK_EX) by the writer; a second writer is refused
//   EPOCH        decimal writer epoch, bumped by every acquire_writer()
//   redo.blocks  block k at byte offset 512k (LSN == offset; a sparse file,
//                release() punches holes below the checkpoint)
//   checkpoint   the checkpoint record (below), replaced by rename
//   retain       optional: a decimal LSN; release() keeps redo at and above
//                it (a retention pin, as page servers hold on the log nodes)
//
// The tail slot is the tail block's own place in redo.blocks, overwritten in
// place: exactly what stock InnoDB does to its partial last block, with the
// same torn-write exposure (a 512-byte sector write). The stream and the tail
// therefore need no separate bookkeeping; truncate() cuts blocks a crashed
// writer left after the recovered end.
//
// Durability: wait_durable(lsn) fdatasyncs redo.blocks once for everything
// written before it; durable_lsn() is the written end seen before the last
// completed fdatasync. Checkpoint records are written to a temp file,
// fdatasync'ed, renamed over `checkpoint`, and the directory is fsync'ed.
//
// Checkpoint record: "STRATACKPT" | u16 version=1 | u64 lsn | u64 epoch |
// u32 metadata length (<= 64 KiB) | metadata | u32 CRC-32 of all before it;
// little-endian.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include "backend.h"
#include "meta.h"

namespace strata::redo {

namespace {

constexpr char kCkptMagic[] = "STRATACKPT";
constexpr std::size_t kCkptMagicLen = 10;
constexpr std::size_t kCkptHeader = kCkptMagicLen + 2 + 8 + 8 + 4;
constexpr std::size_t kMaxMetadata = 64 * 1024;
constexpr std::uint64_t kReleaseGranule = 1 << 20;

Status io_error(const std::string &what, const std::string &path, int err) {
  return Status(Code::kIoError, what + " " + path + ": " + std::strerror(err));
}

std::uint64_t get_le(const unsigned char *p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
void put_le(std::string &s, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
}

Status write_all(int fd, const void *buf, std::size_t len, std::uint64_t off,
                 const std::string &path) {
  const char *p = static_cast<const char *>(buf);
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, p, len, static_cast<off_t>(off));
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("pwrite", path, errno);
    }
    p += n;
    len -= static_cast<std::size_t>(n);
    off += static_cast<std::uint64_t>(n);
  }
  return Status::Ok();
}

Status sync_dir(const std::string &dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return io_error("open", dir, errno);
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? Status::Ok() : io_error("fsync", dir, err);
}

Status read_file(const std::string &path, std::string *out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status(Code::kNotFound, path + " does not exist");
    return io_error("open", path, errno);
  }
  out->clear();
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("read", path, err);
    }
    if (n == 0) break;
    out->append(buf, static_cast<std::size_t>(n));
    if (out->size() > kCkptHeader + kMaxMetadata + 4) {
      ::close(fd);
      return Status(Code::kCorrupt, path + " is larger than any valid record");
    }
  }
  ::close(fd);
  return Status::Ok();
}

// Writes `bytes` to dir/name through dir/name.tmp, durable on return.
Status replace_file(const std::string &dir, const std::string &name, const std::string &bytes) {
  const std::string tmp = dir + "/" + name + ".tmp", dst = dir + "/" + name;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("open", tmp, errno);
  Status s = write_all(fd, bytes.data(), bytes.size(), 0, tmp);
  if (s.ok() && ::fdatasync(fd) != 0) s = io_error("fdatasync", tmp, errno);
  ::close(fd);
  if (!s.ok()) return s;
  if (::rename(tmp.c_str(), dst.c_str()) != 0) return io_error("rename to " + dst, tmp, errno);
  return sync_dir(dir);
}

class DirBackend final : public Backend {
 public:
  explicit DirBackend(std::string path) : path_(std::move(path)) {
    while (path_.size() > 1 && path_.back() == '/') path_.pop_back();
    blocks_path_ = path_ + "/redo.blocks";
  }
  ~DirBackend() override {
    if (blocks_fd_ >= 0) ::close(blocks_fd_);
    if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
  }

  std::string describe() const override { return "dir://" + path_; }

  Status open(bool create) override {
    if (create) {  // mkdir -p: the volume's parent may not exist yet
      for (std::size_t pos = 0; pos != std::string::npos;) {
        pos = path_.find('/', pos + 1);
        const std::string part = path_.substr(0, pos);
        if (::mkdir(part.c_str(), 0750) != 0 && errno != EEXIST)
          return io_error("mkdir", part, errno);
      }
    }
    struct stat st;
    if (::stat(path_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status(Code::kUnavailable, "volume directory " + path_ + " does not exist");
    return Status::Ok();
  }

  Status acquire_writer(WriterInfo *out) override {
    if (lock_fd_ < 0) {
      const std::string lock = path_ + "/LOCK";
      lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
      if (lock_fd_ < 0) return io_error("open", lock, errno);
      if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        ::close(lock_fd_);
        lock_fd_ = -1;
        if (err == EWOULDBLOCK)
          return Status(Code::kFenced, "volume " + path_ + " is in use by another server");
        return io_error("flock", lock, err);
      }
    }
    std::string epoch_text;
    std::uint64_t epoch = 0;
    Status s = read_file(path_ + "/EPOCH", &epoch_text);
    if (s.ok()) {
      epoch = std::strtoull(epoch_text.c_str(), nullptr, 10);
    } else if (s.code() != Code::kNotFound) {
      return s;
    }
    epoch_ = epoch + 1;
    s = replace_file(path_, "EPOCH", std::to_string(epoch_) + "\n");
    if (!s.ok()) return s;

    blocks_fd_ = ::open(blocks_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (blocks_fd_ < 0) return io_error("open", blocks_path_, errno);
    // Whatever the previous writer left in the page cache becomes durable
    // now, so durable_lsn() may start at the end of the file.
    if (::fdatasync(blocks_fd_) != 0) return io_error("fdatasync", blocks_path_, errno);
    struct stat st;
    if (::fstat(blocks_fd_, &st) != 0) return io_error("fstat", blocks_path_, errno);
    const std::uint64_t end = static_cast<std::uint64_t>(st.st_size) / kBlockSize * kBlockSize;
    written_end_.store(end);
    durable_.store(end);
    out->epoch = epoch_;
    out->log_end = end;
    return Status::Ok();
  }

  Status read_checkpoint(Checkpoint *out) override {
    const std::string path = path_ + "/checkpoint";
    std::string rec;
    Status s = read_file(path, &rec);
    if (!s.ok()) return s;
    const auto *p = reinterpret_cast<const unsigned char *>(rec.data());
    if (rec.size() < kCkptHeader + 4 || std::memcmp(p, kCkptMagic, kCkptMagicLen) != 0)
      return Status(Code::kCorrupt, path + ": not a checkpoint record");
    const std::uint64_t meta_len = get_le(p + kCkptMagicLen + 18, 4);
    if (meta_len > kMaxMetadata || rec.size() != kCkptHeader + meta_len + 4)
      return Status(Code::kCorrupt, path + ": length mismatch");
    if (get_le(p + kCkptHeader + meta_len, 4) != crc32_ieee(p, kCkptHeader + meta_len))
      return Status(Code::kCorrupt, path + ": checksum mismatch");
    if (get_le(p + kCkptMagicLen, 2) != 1)
      return Status(Code::kCorrupt, path + ": unknown record version");
    out->lsn = get_le(p + kCkptMagicLen + 2, 8);
    out->epoch = get_le(p + kCkptMagicLen + 10, 8);
    out->metadata.assign(rec.data() + kCkptHeader, meta_len);
    return Status::Ok();
  }

  Status write_checkpoint(std::uint64_t lsn, std::string_view metadata) override {
    if (lock_fd_ < 0) return Status(Code::kInvalid, "write_checkpoint before acquire_writer");
    if (metadata.size() > kMaxMetadata) return Status(Code::kInvalid, "metadata too large");
    std::string rec(kCkptMagic, kCkptMagicLen);
    put_le(rec, 1, 2);
    put_le(rec, lsn, 8);
    put_le(rec, epoch_, 8);
    put_le(rec, metadata.size(), 4);
    rec.append(metadata);
    put_le(rec, crc32_ieee(rec.data(), rec.size()), 4);
    std::lock_guard<std::mutex> guard(checkpoint_mutex_);
    return replace_file(path_, "checkpoint", rec);
  }

  Status append(std::uint64_t lsn, const void *blocks, std::size_t len) override {
    if (blocks_fd_ < 0) return Status(Code::kInvalid, "append before acquire_writer");
    if (lsn % kBlockSize != 0 || len % kBlockSize != 0)
      return Status(Code::kInvalid, "append of a partial block");
    Status s = write_all(blocks_fd_, blocks, len, lsn, blocks_path_);
    if (s.ok()) advance_written(lsn + len);
    return s;
  }

  Status put_tail(std::uint64_t block_lsn, const void *block, std::uint64_t data_end) override {
    if (blocks_fd_ < 0) return Status(Code::kInvalid, "put_tail before acquire_writer");
    if (block_lsn % kBlockSize != 0 || data_end <= block_lsn || data_end > block_lsn + kBlockSize)
      return Status(Code::kInvalid, "put_tail outside its block");
    Status s = write_all(blocks_fd_, block, kBlockSize, block_lsn, blocks_path_);
    if (s.ok()) advance_written(data_end);
    return s;
  }

  Status wait_durable(std::uint64_t lsn) override {
    if (durable_.load(std::memory_order_acquire) >= lsn) return Status::Ok();
    std::lock_guard<std::mutex> guard(sync_mutex_);
    if (durable_.load(std::memory_order_acquire) >= lsn) return Status::Ok();
    const std::uint64_t target = written_end_.load(std::memory_order_acquire);
    if (target < lsn) return Status(Code::kInvalid, "wait_durable beyond what was written");
    if (::fdatasync(blocks_fd_) != 0) return io_error("fdatasync", blocks_path_, errno);
    durable_.store(target, std::memory_order_release);
    return Status::Ok();
  }

  // append/put_tail return after pwrite(2): the OS holds the bytes.
  Status wait_written(std::uint64_t lsn) override {
    if (written_end_.load(std::memory_order_acquire) < lsn)
      return Status(Code::kInvalid, "wait_written beyond what was handed over");
    return Status::Ok();
  }

  std::uint64_t durable_lsn() const override { return durable_.load(std::memory_order_acquire); }

  // One local "node": up while this process holds the volume.
  Health health() const override {
    Health h;
    NodeHealth n;
    n.address = describe();
    n.connected = n.in_quorum = blocks_fd_ >= 0;
    n.acked_lsn = durable_lsn();
    h.nodes_up = n.in_quorum ? 1 : 0;
    h.nodes.push_back(std::move(n));
    return h;
  }

  Status truncate(std::uint64_t lsn) override {
    if (blocks_fd_ < 0) return Status(Code::kInvalid, "truncate before acquire_writer");
    if (lsn % kBlockSize != 0) return Status(Code::kInvalid, "truncate inside a block");
    struct stat st;
    if (::fstat(blocks_fd_, &st) != 0) return io_error("fstat", blocks_path_, errno);
    if (static_cast<std::uint64_t>(st.st_size) <= lsn) return Status::Ok();
    if (::ftruncate(blocks_fd_, static_cast<off_t>(lsn)) != 0)
      return io_error("ftruncate", blocks_path_, errno);
    if (::fdatasync(blocks_fd_) != 0) return io_error("fdatasync", blocks_path_, errno);
    std::lock_guard<std::mutex> guard(sync_mutex_);
    if (written_end_.load() > lsn) written_end_.store(lsn);
    if (durable_.load() > lsn) durable_.store(lsn);
    return Status::Ok();
  }

  Status release(std::uint64_t lsn) override {
    if (blocks_fd_ < 0) return Status::Ok();
    // A retention pin, as the log nodes keep for page servers: redo at and
    // above it stays (tests of the page-apply helper read it afterwards).
    std::string pin;
    if (read_file(path_ + "/retain", &pin).ok() && !pin.empty())
      lsn = std::min<std::uint64_t>(lsn, std::strtoull(pin.c_str(), nullptr, 10));
    const std::uint64_t upto = lsn / kReleaseGranule * kReleaseGranule;
    if (upto <= released_) return Status::Ok();
    if (::fallocate(blocks_fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                    static_cast<off_t>(released_), static_cast<off_t>(upto - released_)) != 0) {
      if (errno == EOPNOTSUPP) return Status::Ok();  // the file system keeps it all
      return io_error("fallocate(PUNCH_HOLE)", blocks_path_, errno);
    }
    released_ = upto;
    return Status::Ok();
  }

  Status read(std::uint64_t lsn, void *buf, std::size_t len, std::size_t *got) override {
    *got = 0;
    if (lsn % kBlockSize != 0) return Status(Code::kInvalid, "read inside a block");
    int fd = blocks_fd_;
    bool own = false;
    if (fd < 0) {  // read-only start: no writer
      fd = ::open(blocks_path_.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) return errno == ENOENT ? Status::Ok() : io_error("open", blocks_path_, errno);
      own = true;
    }
    char *p = static_cast<char *>(buf);
    std::size_t done = 0;
    while (done < len) {
      const ssize_t n = ::pread(fd, p + done, len - done, static_cast<off_t>(lsn + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        if (own) ::close(fd);
        return io_error("pread", blocks_path_, err);
      }
      if (n == 0) break;
      done += static_cast<std::size_t>(n);
    }
    if (own) ::close(fd);
    *got = done / kBlockSize * kBlockSize;
    return Status::Ok();
  }

 private:
  void advance_written(std::uint64_t end) {
    std::uint64_t cur = written_end_.load();
    while (cur < end && !written_end_.compare_exchange_weak(cur, end)) {
    }
  }

  std::string path_;
  std::string blocks_path_;
  int lock_fd_ = -1;
  int blocks_fd_ = -1;
  std::uint64_t epoch_ = 0;
  std::uint64_t released_ = 0;  // governor thread only
  std::atomic<std::uint64_t> written_end_{0};
  std::atomic<std::uint64_t> durable_{0};
  std::mutex sync_mutex_;
  std::mutex checkpoint_mutex_;
};

}  // namespace

std::unique_ptr<Backend> make_dir_backend(std::string path) {
  return std::make_unique<DirBackend>(std::move(path));
}

}  // namespace strata::redo
