// FaultInjectionFileSystem: see the header for the crash model. Everything
// runs under one mutex; handles hold the inode plus the "generation" they were
// opened in, so a simulated crash invalidates them all at once.
#include "storage/fault_injection_file_system.h"

#include <cerrno>

namespace strata::logservice {
namespace {

std::string ParentOf(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  std::size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

struct FaultInjectionFileSystem::Inode {
  std::string data;     // what reads see (the page cache)
  std::string durable;  // what survives a power loss
};

class FaultInjectionFileSystem::WritableImpl final : public WritableFile {
 public:
  WritableImpl(FaultInjectionFileSystem* fs, std::shared_ptr<Inode> inode, std::string path, std::uint64_t gen)
      : fs_(fs), inode_(std::move(inode)), path_(std::move(path)), gen_(gen), size_(inode_->data.size()) {}

  // Writes at the handle's offset: over preallocated bytes, then past them.
  void WriteAtLocked(std::string_view bytes) {
    std::string& d = inode_->data;
    const std::size_t over = std::min<std::size_t>(bytes.size(), d.size() > size_ ? d.size() - size_ : 0);
    d.replace(size_, over, bytes.substr(0, over));
    d.append(bytes.substr(over));
    size_ += bytes.size();
  }

  Status Append(std::string_view data) override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    STRATA_RETURN_IF_ERROR(fs_->MaybeInjectFailure(Op::kAppend, path_));
    Status died = fs_->CountMutation(Op::kAppend, path_);
    if (!died.ok()) {
      // The process dies mid-write: some prefix reached the page cache.
      std::uniform_int_distribution<std::size_t> len(0, data.size());
      WriteAtLocked(data.substr(0, len(fs_->rng_)));
      return died;
    }
    if (fs_->space_limit_) {
      std::uint64_t used = fs_->UsedBytesLocked();
      std::uint64_t room = used >= *fs_->space_limit_ ? 0 : *fs_->space_limit_ - used;
      if (data.size() > room) {
        WriteAtLocked(data.substr(0, room));
        return Status::FromErrno("write", path_, ENOSPC);
      }
    }
    WriteAtLocked(data);
    return Status::Ok();
  }

  Status Preallocate(std::uint64_t upto, std::string_view pattern) override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    if (pattern.empty()) return Status::InvalidArgument("preallocate: empty pattern");
    std::string& d = inode_->data;
    if (upto <= d.size()) return Status::Ok();
    STRATA_RETURN_IF_ERROR(fs_->MaybeInjectFailure(Op::kAppend, path_));
    STRATA_RETURN_IF_ERROR(fs_->CountMutation(Op::kAppend, path_));
    if (fs_->space_limit_ && fs_->UsedBytesLocked() + (upto - d.size()) > *fs_->space_limit_)
      return Status::FromErrno("write (preallocate)", path_, ENOSPC);
    for (std::uint64_t o = d.size(); o < upto; ++o) d.push_back(pattern[o % pattern.size()]);
    return Status::Ok();
  }

  Status Truncate(std::uint64_t size) override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    STRATA_RETURN_IF_ERROR(fs_->MaybeInjectFailure(Op::kTruncate, path_));
    STRATA_RETURN_IF_ERROR(fs_->CountMutation(Op::kTruncate, path_));
    inode_->data.resize(size, '\0');
    size_ = size;
    return Status::Ok();
  }

  Status Sync() override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    STRATA_RETURN_IF_ERROR(fs_->MaybeInjectFailure(Op::kSync, path_));
    STRATA_RETURN_IF_ERROR(fs_->CountMutation(Op::kSync, path_));
    inode_->durable = inode_->data;
    ++fs_->sync_count_;
    return Status::Ok();
  }

  std::uint64_t Size() const override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    return size_;
  }

 private:
  FaultInjectionFileSystem* fs_;
  std::shared_ptr<Inode> inode_;
  std::string path_;
  std::uint64_t gen_;
  std::uint64_t size_;  // where Append writes (preallocated bytes may follow)
};

class FaultInjectionFileSystem::ReadableImpl final : public ReadableFile {
 public:
  ReadableImpl(FaultInjectionFileSystem* fs, std::shared_ptr<Inode> inode, std::string path, std::uint64_t gen)
      : fs_(fs), inode_(std::move(inode)), path_(std::move(path)), gen_(gen) {}

  Status ReadAt(std::uint64_t offset, std::size_t n, std::string* out) const override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    STRATA_RETURN_IF_ERROR(fs_->MaybeInjectFailure(Op::kRead, path_));
    out->clear();
    if (offset < inode_->data.size()) *out = inode_->data.substr(offset, n);
    return Status::Ok();
  }

  Result<std::uint64_t> Size() const override {
    std::lock_guard<std::mutex> lock(fs_->mu_);
    STRATA_RETURN_IF_ERROR(fs_->CheckAlive(gen_));
    return static_cast<std::uint64_t>(inode_->data.size());
  }

 private:
  FaultInjectionFileSystem* fs_;
  std::shared_ptr<Inode> inode_;
  std::string path_;
  std::uint64_t gen_;
};

FaultInjectionFileSystem::FaultInjectionFileSystem(std::uint64_t seed) : rng_(seed) { dirs_.insert("."); }
FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

Status FaultInjectionFileSystem::CheckAlive(std::uint64_t generation) const {
  if (dead_ || generation != generation_) return Status::IoError("simulated crash: handle is dead (EIO)");
  return Status::Ok();
}

Status FaultInjectionFileSystem::MaybeInjectFailure(Op op, const std::string& path) {
  for (auto it = injections_.begin(); it != injections_.end(); ++it) {
    if (it->op != op) continue;
    if (it->skip > 0) {
      --it->skip;
      return Status::Ok();
    }
    int err = it->err;
    if (--it->times <= 0) injections_.erase(it);
    return Status::FromErrno("injected", path, err);
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::CountMutation(Op, const std::string& path) {
  ++mutation_count_;
  if (mutations_until_crash_ < 0) return Status::Ok();
  if (mutations_until_crash_ == 0) {
    dead_ = true;
    return Status::IoError("simulated crash point reached at " + path);
  }
  --mutations_until_crash_;
  return Status::Ok();
}

std::uint64_t FaultInjectionFileSystem::UsedBytesLocked() const {
  std::set<const Inode*> seen;
  std::uint64_t used = 0;
  for (const auto& [path, inode] : live_)
    if (seen.insert(inode.get()).second) used += inode->data.size();
  return used;
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::OpenWritable(const std::string& path, OpenMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  STRATA_RETURN_IF_ERROR(MaybeInjectFailure(Op::kOpenWritable, path));
  if (!dirs_.count(ParentOf(path))) return Status::FromErrno("open", path, ENOENT);
  auto it = live_.find(path);
  if (mode == OpenMode::kCreateNew && it != live_.end()) return Status::FromErrno("open", path, EEXIST);
  if (mode == OpenMode::kOpenExisting && it == live_.end()) return Status::FromErrno("open", path, ENOENT);
  STRATA_RETURN_IF_ERROR(CountMutation(Op::kOpenWritable, path));
  std::shared_ptr<Inode> inode;
  if (it == live_.end()) {
    inode = std::make_shared<Inode>();
    live_[path] = inode;
  } else {
    inode = it->second;
    if (mode == OpenMode::kCreateOrTruncate) inode->data.clear();
  }
  return std::unique_ptr<WritableFile>(new WritableImpl(this, inode, path, generation_));
}

Result<std::unique_ptr<ReadableFile>> FaultInjectionFileSystem::OpenReadable(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  STRATA_RETURN_IF_ERROR(MaybeInjectFailure(Op::kRead, path));
  auto it = live_.find(path);
  if (it == live_.end()) return Status::FromErrno("open", path, ENOENT);
  return std::unique_ptr<ReadableFile>(new ReadableImpl(this, it->second, path, generation_));
}

Result<std::vector<std::string>> FaultInjectionFileSystem::ListDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  if (!dirs_.count(dir)) return Status::FromErrno("opendir", dir, ENOENT);
  std::vector<std::string> names;
  for (const auto& [path, inode] : live_)
    if (ParentOf(path) == dir) names.push_back(BaseName(path));
  for (const auto& d : dirs_)
    if (d != dir && ParentOf(d) == dir) names.push_back(BaseName(d));
  return names;
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  for (std::string d = dir; d != "." && !d.empty() && d != "/"; d = ParentOf(d)) dirs_.insert(d);
  return Status::Ok();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  STRATA_RETURN_IF_ERROR(MaybeInjectFailure(Op::kSyncDir, dir));
  if (!dirs_.count(dir)) return Status::FromErrno("open", dir, ENOENT);
  STRATA_RETURN_IF_ERROR(CountMutation(Op::kSyncDir, dir));
  for (auto it = durable_.begin(); it != durable_.end();) {
    if (ParentOf(it->first) == dir && !live_.count(it->first)) it = durable_.erase(it);
    else ++it;
  }
  for (const auto& [path, inode] : live_)
    if (ParentOf(path) == dir) durable_[path] = inode;
  return Status::Ok();
}

Status FaultInjectionFileSystem::Rename(const std::string& from, const std::string& to) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  STRATA_RETURN_IF_ERROR(MaybeInjectFailure(Op::kRename, from));
  if (dirs_.count(from) && !live_.count(from)) return RenameDirLocked(from, to);
  auto it = live_.find(from);
  if (it == live_.end()) return Status::FromErrno("rename", from, ENOENT);
  if (!dirs_.count(ParentOf(to))) return Status::FromErrno("rename", to, ENOENT);
  STRATA_RETURN_IF_ERROR(CountMutation(Op::kRename, from));
  auto inode = it->second;
  live_.erase(it);
  live_[to] = inode;
  return Status::Ok();
}

// A directory (a node moving its damaged log aside): the directory, its
// subdirectories and every file below it move at once. Like CreateDirs it is
// durable at once (directories are, in this model); the files keep their
// durable and cached bytes.
Status FaultInjectionFileSystem::RenameDirLocked(const std::string& from, const std::string& to) {
  if (dirs_.count(to) || live_.count(to)) return Status::FromErrno("rename", to, EEXIST);
  if (!dirs_.count(ParentOf(to))) return Status::FromErrno("rename", to, ENOENT);
  STRATA_RETURN_IF_ERROR(CountMutation(Op::kRename, from));
  const std::string prefix = from + "/";
  auto moved = [&](const std::string& p) { return to + p.substr(from.size()); };
  auto below = [&](const std::string& p) { return p == from || p.compare(0, prefix.size(), prefix) == 0; };
  std::set<std::string> dirs;
  for (const auto& d : dirs_) dirs.insert(below(d) ? moved(d) : d);
  dirs_ = std::move(dirs);
  for (auto* files : {&live_, &durable_}) {
    std::map<std::string, std::shared_ptr<Inode>> next;
    for (auto& [path, inode] : *files) next[below(path) ? moved(path) : path] = inode;
    *files = std::move(next);
  }
  return Status::Ok();
}

Status FaultInjectionFileSystem::Remove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  STRATA_RETURN_IF_ERROR(MaybeInjectFailure(Op::kRemove, path));
  if (!live_.count(path)) return Status::FromErrno("unlink", path, ENOENT);
  STRATA_RETURN_IF_ERROR(CountMutation(Op::kRemove, path));
  live_.erase(path);
  return Status::Ok();
}

Result<bool> FaultInjectionFileSystem::Exists(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckAlive(generation_));
  return live_.count(path) > 0 || dirs_.count(path) > 0;
}

void FaultInjectionFileSystem::SimulateCrash(CrashMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generation_;
  dead_ = false;
  mutations_until_crash_ = -1;
  injections_.clear();
  if (mode == CrashMode::kProcessOnly) return;  // the kernel keeps the page cache
  std::set<Inode*> done;
  for (auto& [path, inode] : durable_) {
    if (!done.insert(inode.get()).second) continue;
    std::string kept = inode->durable;
    const std::string& cached = inode->data;
    // The unsynced changes start at the first byte where the cached file
    // differs from the durable one (appends, or writes over preallocated
    // bytes); a crash keeps a prefix of them. A file cut shorter since its
    // last sync comes back whole, as before.
    std::size_t first = 0;
    const std::size_t common = std::min(cached.size(), kept.size());
    while (first < common && cached[first] == kept[first]) ++first;
    const bool changed_since_sync = cached.size() > first;
    if (mode == CrashMode::kTornUnsynced && changed_since_sync) {
      std::uniform_int_distribution<std::size_t> len(0, cached.size() - first);
      const std::size_t cut = first + len(rng_);
      std::string torn = cached.substr(0, cut);
      if (cut < kept.size()) torn.append(kept, cut, std::string::npos);
      if (cut > first && rng_() % 2 == 0) torn[cut - 1] = static_cast<char>(rng_());  // torn sector
      kept = std::move(torn);
    }
    inode->data = kept;
    inode->durable = kept;
  }
  live_ = durable_;
}

void FaultInjectionFileSystem::CrashAfterMutations(int n) {
  std::lock_guard<std::mutex> lock(mu_);
  mutations_until_crash_ = n;
}

bool FaultInjectionFileSystem::crash_point_reached() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dead_;
}

std::uint64_t FaultInjectionFileSystem::mutation_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return mutation_count_;
}

void FaultInjectionFileSystem::FailOp(Op op, int err, int skip, int times) {
  std::lock_guard<std::mutex> lock(mu_);
  injections_.push_back({op, err, skip, times});
}

void FaultInjectionFileSystem::SetSpaceLimit(std::optional<std::uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  space_limit_ = bytes;
}

std::uint64_t FaultInjectionFileSystem::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return UsedBytesLocked();
}

std::uint64_t FaultInjectionFileSystem::sync_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sync_count_;
}

Result<std::string> FaultInjectionFileSystem::FileContents(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return Status::FromErrno("open", path, ENOENT);
  return it->second->data;
}

Status FaultInjectionFileSystem::OverwriteFile(const std::string& path, std::string contents) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& inode = live_[path];
  if (!inode) inode = std::make_shared<Inode>();
  inode->data = contents;
  inode->durable = std::move(contents);
  durable_[path] = inode;
  return Status::Ok();
}

Status FaultInjectionFileSystem::FlipBit(const std::string& path, std::uint64_t offset, int bit) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = live_.find(path);
  if (it == live_.end()) return Status::FromErrno("open", path, ENOENT);
  Inode& inode = *it->second;
  if (offset >= inode.data.size()) return Status::InvalidArgument("FlipBit past end of " + path);
  inode.data[offset] = static_cast<char>(inode.data[offset] ^ (1 << bit));
  if (offset < inode.durable.size()) inode.durable[offset] = inode.data[offset];
  return Status::Ok();
}

}  // namespace strata::logservice
