// SpaceLimitedFileSystem: a FileSystem whose files under one root may use at
// most `limit` bytes, with the failure a full disk gives. See file_system.h.
//
// Accounting: `used` starts as the size of every file under the root when the
// wrapper is created and follows every Append, Truncate, Remove, Rename over
// an existing file and truncating open. An Append that does not fit fails
// with ENOSPC (kNoSpace) before writing anything, which the FileSystem
// contract allows ("a failed Append may leave a prefix", here an empty one),
// so the storage layer takes exactly the path a real ENOSPC takes. Directory
// entries and file system metadata are not counted. Thread-safe (one mutex).
#include <cerrno>
#include <memory>
#include <mutex>

#include "storage/file_system.h"

namespace strata::logservice {
namespace {

struct Budget {
  std::mutex mu;
  std::uint64_t used = 0;
  const std::uint64_t limit;
  explicit Budget(std::uint64_t l) : limit(l) {}
  bool Reserve(std::uint64_t n) {
    std::lock_guard<std::mutex> l(mu);
    if (used + n > limit) return false;
    used += n;
    return true;
  }
  void Adjust(std::int64_t delta) {
    std::lock_guard<std::mutex> l(mu);
    if (delta < 0 && static_cast<std::uint64_t>(-delta) > used) used = 0;
    else used = static_cast<std::uint64_t>(static_cast<std::int64_t>(used) + delta);
  }
};

class LimitedWritable final : public WritableFile {
 public:
  LimitedWritable(std::unique_ptr<WritableFile> base, std::string path, std::shared_ptr<Budget> budget)
      : base_(std::move(base)), path_(std::move(path)), budget_(std::move(budget)) {}

  Status Append(std::string_view data) override {
    if (!budget_->Reserve(data.size())) return Status::FromErrno("write", path_, ENOSPC);
    const std::uint64_t before = base_->Size();
    Status s = base_->Append(data);
    // Count what really landed (a failed append may have written a prefix).
    budget_->Adjust(static_cast<std::int64_t>(base_->Size() - before) - static_cast<std::int64_t>(data.size()));
    return s;
  }
  Status Truncate(std::uint64_t size) override {
    const std::uint64_t before = base_->Size();
    Status s = base_->Truncate(size);
    budget_->Adjust(static_cast<std::int64_t>(base_->Size()) - static_cast<std::int64_t>(before));
    return s;
  }
  Status Sync() override { return base_->Sync(); }
  std::uint64_t Size() const override { return base_->Size(); }

 private:
  std::unique_ptr<WritableFile> base_;
  std::string path_;
  std::shared_ptr<Budget> budget_;
};

class SpaceLimitedFs final : public FileSystem {
 public:
  SpaceLimitedFs(std::shared_ptr<FileSystem> base, std::shared_ptr<Budget> budget)
      : base_(std::move(base)), budget_(std::move(budget)) {}

  Result<std::unique_ptr<WritableFile>> OpenWritable(const std::string& path, OpenMode mode) override {
    const std::uint64_t old = mode == OpenMode::kCreateOrTruncate ? FileSize(path) : 0;
    auto f = base_->OpenWritable(path, mode);
    if (!f.ok()) return f.status();
    if (old > 0) budget_->Adjust(-static_cast<std::int64_t>(old));
    return std::unique_ptr<WritableFile>(std::make_unique<LimitedWritable>(std::move(f.value()), path, budget_));
  }
  Result<std::unique_ptr<ReadableFile>> OpenReadable(const std::string& path) override {
    return base_->OpenReadable(path);
  }
  Result<std::vector<std::string>> ListDir(const std::string& dir) override { return base_->ListDir(dir); }
  Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  Status SyncDir(const std::string& dir) override { return base_->SyncDir(dir); }
  Status Rename(const std::string& from, const std::string& to) override {
    const std::uint64_t replaced = FileSize(to);
    Status s = base_->Rename(from, to);
    if (s.ok() && replaced > 0) budget_->Adjust(-static_cast<std::int64_t>(replaced));
    return s;
  }
  Status Remove(const std::string& path) override {
    const std::uint64_t size = FileSize(path);
    Status s = base_->Remove(path);
    if (s.ok() && size > 0) budget_->Adjust(-static_cast<std::int64_t>(size));
    return s;
  }
  Result<bool> Exists(const std::string& path) override { return base_->Exists(path); }

  // Size of a file, 0 if it is missing or not a plain file.
  std::uint64_t FileSize(const std::string& path) {
    if (base_->ListDir(path).ok()) return 0;  // a directory
    auto f = base_->OpenReadable(path);
    if (!f.ok()) return 0;
    auto size = f.value()->Size();
    return size.ok() ? *size : 0;
  }
  std::uint64_t TreeSize(const std::string& dir, int depth = 0) {
    auto names = base_->ListDir(dir);
    if (!names.ok() || depth > 8) return 0;
    std::uint64_t total = 0;
    for (const auto& name : *names) {
      const std::string p = JoinPath(dir, name);
      total += base_->ListDir(p).ok() ? TreeSize(p, depth + 1) : FileSize(p);
    }
    return total;
  }

 private:
  std::shared_ptr<FileSystem> base_;
  std::shared_ptr<Budget> budget_;
};

}  // namespace

std::shared_ptr<FileSystem> SpaceLimitedFileSystem(std::shared_ptr<FileSystem> base, const std::string& root,
                                                   std::uint64_t limit_bytes) {
  auto budget = std::make_shared<Budget>(limit_bytes);
  auto fs = std::make_shared<SpaceLimitedFs>(std::move(base), budget);
  budget->Adjust(static_cast<std::int64_t>(fs->TreeSize(root)));
  return fs;
}

}  // namespace strata::logservice
