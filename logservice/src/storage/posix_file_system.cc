// PosixFileSystem: FileSystem on the local disk.
//
// WritableFile appends with pwrite at its own tracked offset (not O_APPEND),
// so a failed, partial write can be cut off again with ftruncate and the next
// append starts where the last good one ended. Sync is fdatasync: segment
// sizes change on every append, but fdatasync still persists the size
// (metadata needed to read the data back), which is all we need; it is
// cheaper when the append overwrote what Preallocate wrote ahead of it. EINTR is
// retried; every other errno is returned, naming the call and the path.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "storage/file_system.h"

namespace strata::logservice {
namespace {

class PosixReadable final : public ReadableFile {
 public:
  PosixReadable(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  ~PosixReadable() override { ::close(fd_); }

  Status ReadAt(std::uint64_t offset, std::size_t n, std::string* out) const override {
    out->resize(n);
    std::size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd_, out->data() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("pread", path_, errno);
      }
      if (r == 0) break;  // end of file
      got += static_cast<std::size_t>(r);
    }
    out->resize(got);
    return Status::Ok();
  }

  Result<std::uint64_t> Size() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0) return Status::FromErrno("fstat", path_, errno);
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  std::string path_;
  int fd_;
};

class PosixWritable final : public WritableFile {
 public:
  PosixWritable(std::string path, int fd, std::uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size), filled_end_(size) {}
  ~PosixWritable() override { ::close(fd_); }

  Status Append(std::string_view data) override {
    std::size_t done = 0;
    while (done < data.size()) {
      ssize_t r = ::pwrite(fd_, data.data() + done, data.size() - done, static_cast<off_t>(size_));
      if (r < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("pwrite", path_, errno);
      }
      done += static_cast<std::size_t>(r);
      size_ += static_cast<std::uint64_t>(r);
    }
    return Status::Ok();
  }

  Status Truncate(std::uint64_t size) override {
    while (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      if (errno != EINTR) return Status::FromErrno("ftruncate", path_, errno);
    }
    size_ = size;
    filled_end_ = size;
    return Status::Ok();
  }

  Status Preallocate(std::uint64_t upto, std::string_view pattern) override {
    if (pattern.empty()) return Status::InvalidArgument("preallocate: empty pattern");
    std::uint64_t at = std::max(size_, filled_end_);
    std::string chunk;
    while (at < upto) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(64 << 10, upto - at));
      chunk.resize(n);
      for (std::size_t k = 0; k < n; ++k) chunk[k] = pattern[(at + k) % pattern.size()];
      std::size_t done = 0;
      while (done < n) {
        ssize_t r = ::pwrite(fd_, chunk.data() + done, n - done, static_cast<off_t>(at + done));
        if (r < 0) {
          if (errno == EINTR) continue;
          return Status::FromErrno("pwrite (preallocate)", path_, errno);
        }
        done += static_cast<std::size_t>(r);
        filled_end_ = at + done;
      }
      at += n;
    }
    return Status::Ok();
  }

  Status Sync() override {
    while (::fdatasync(fd_) != 0) {
      if (errno != EINTR) return Status::FromErrno("fdatasync", path_, errno);
    }
    return Status::Ok();
  }

  std::uint64_t Size() const override { return size_; }

 private:
  std::string path_;
  int fd_;
  std::uint64_t size_;
  std::uint64_t filled_end_;  // the file's end on disk: Preallocate's pattern from size_ up to it
};

class Posix final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override {
    int flags = O_WRONLY | O_CLOEXEC;
    if (mode == OpenMode::kCreateNew) flags |= O_CREAT | O_EXCL;
    if (mode == OpenMode::kCreateOrTruncate) flags |= O_CREAT | O_TRUNC;
    int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return Status::FromErrno("open", path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return Status::FromErrno("fstat", path, err);
    }
    return std::unique_ptr<WritableFile>(new PosixWritable(path, fd, static_cast<std::uint64_t>(st.st_size)));
  }

  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("open", path, errno);
    return std::unique_ptr<ReadableFile>(new PosixReadable(path, fd));
  }

  Result<std::vector<std::string>> ListDir(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return Status::FromErrno("opendir", dir, errno);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(std::move(name));
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return Status::FromErrno("readdir", dir, err);
    return names;
  }

  Status CreateDirs(const std::string& dir) override {
    for (std::size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
      std::string prefix = dir.substr(0, slash);
      if (!prefix.empty() && ::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST)
        return Status::FromErrno("mkdir", prefix, errno);
      if (slash == std::string::npos) break;
    }
    std::size_t last = dir.find_last_of('/');
    return SyncDir(last == std::string::npos || last == 0 ? std::string(last == 0 ? "/" : ".") : dir.substr(0, last));
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("open", dir, errno);
    int rc;
    while ((rc = ::fsync(fd)) != 0 && errno == EINTR) {
    }
    int err = errno;
    ::close(fd);
    if (rc != 0) return Status::FromErrno("fsync", dir, err);
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return Status::FromErrno("rename", from + " -> " + to, errno);
    return Status::Ok();
  }

  Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno("unlink", path, errno);
    return Status::Ok();
  }

  Result<bool> Exists(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0) return true;
    if (errno == ENOENT) return false;
    return Status::FromErrno("stat", path, errno);
  }
};

}  // namespace

std::shared_ptr<FileSystem> PosixFileSystem() {
  static std::shared_ptr<FileSystem> fs = std::make_shared<Posix>();
  return fs;
}

std::string JoinPath(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

}  // namespace strata::logservice
