// Moving a damaged redo log aside; see log_quarantine.h.
#include "log_quarantine.h"

#include <algorithm>
#include <vector>

namespace strata::logservice::server {
namespace {
const std::string kLogDir = "redo";
const std::string kPrefix = "redo.damaged-";

std::string CopyName(int n) { return kPrefix + std::to_string(n); }
}  // namespace

Result<std::vector<std::string>> QuarantinedLogs(FileSystem& fs, const std::string& data_dir) {
  std::vector<std::string> out;
  for (int n = 1; n <= kMaxQuarantinedLogs; ++n) {
    auto there = fs.Exists(JoinPath(data_dir, CopyName(n)));
    if (!there.ok()) return there.status();
    if (*there) out.push_back(JoinPath(data_dir, CopyName(n)));
  }
  return out;
}

Result<std::string> QuarantineLog(FileSystem& fs, const std::string& data_dir, const std::string& reason) {
  const std::string from = JoinPath(data_dir, kLogDir);
  auto present = fs.Exists(from);
  if (!present.ok()) return present.status();
  if (!*present) return Status::NotFound(from + ": no redo directory to move aside");
  std::string to;
  for (int n = 1; n <= kMaxQuarantinedLogs && to.empty(); ++n) {
    auto taken = fs.Exists(JoinPath(data_dir, CopyName(n)));
    if (!taken.ok()) return taken.status();
    if (!*taken) to = JoinPath(data_dir, CopyName(n));
  }
  if (to.empty())
    return Status::Corruption(reason + "; this node's log was found damaged " + std::to_string(kMaxQuarantinedLogs) +
                              " times before (" + JoinPath(data_dir, kPrefix) + "1.." +
                              std::to_string(kMaxQuarantinedLogs) +
                              "): replace the disk, or check and remove those copies, then restart the node");
  STRATA_RETURN_IF_ERROR(fs.Rename(from, to));
  STRATA_RETURN_IF_ERROR(fs.SyncDir(data_dir));
  // Evidence only, after the rename: a crash before it leaves a copy
  // without its reason, never a stray file in a live log.
  auto f = fs.OpenWritable(JoinPath(to, "DAMAGED"), OpenMode::kCreateOrTruncate);
  if (f.ok()) {
    (*f)->Append(reason + "\n").IgnoreError();
    (*f)->Sync().IgnoreError();
  }
  return to;
}

}  // namespace strata::logservice::server
