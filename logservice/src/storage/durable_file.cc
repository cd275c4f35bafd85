// Atomic replace of a small checksummed file; see durable_file.h.
#include "durable_file.h"

namespace strata::logservice::storage {

Status WriteDurableFile(FileSystem& fs, const std::string& dir, const std::string& name, DurableFileKind kind,
                        std::string_view payload) {
  const std::string path = JoinPath(dir, name);
  const std::string tmp = path + ".tmp";
  Status s;
  {
    auto file = fs.OpenWritable(tmp, OpenMode::kCreateOrTruncate);
    if (!file.ok()) return file.status();
    s = (*file)->Append(EncodeDurableFile(kind, payload));
    if (s.ok()) s = (*file)->Sync();
  }
  if (s.ok()) s = fs.Rename(tmp, path);
  if (!s.ok()) {
    // Best effort: a leftover .tmp is harmless (never read) but wastes space.
    fs.Remove(tmp).IgnoreError();
    return s;
  }
  return fs.SyncDir(dir);
}

Result<std::string> ReadDurableFile(FileSystem& fs, const std::string& dir, const std::string& name,
                                    DurableFileKind kind) {
  const std::string path = JoinPath(dir, name);
  auto file = fs.OpenReadable(path);
  if (!file.ok()) return file.status();
  auto size = (*file)->Size();
  if (!size.ok()) return size.status();
  if (*size > kDurableFileHeaderSize + kMaxDurableFilePayload)
    return Status::Corruption(path + ": " + std::to_string(*size) + " bytes is larger than any valid file");
  std::string bytes;
  STRATA_RETURN_IF_ERROR((*file)->ReadAt(0, *size, &bytes));
  std::string_view payload;
  Status decoded = DecodeDurableFile(bytes, kind, &payload);
  if (!decoded.ok()) return Status::Corruption(path + ": " + decoded.message());
  return std::string(payload);
}

}  // namespace strata::logservice::storage
