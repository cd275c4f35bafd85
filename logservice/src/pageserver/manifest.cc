// Manifest I/O over the durable-file helper; see manifest.h.
#include "manifest.h"

#include "disk_format.h"
#include "durable_file.h"

namespace strata::pageserver {

namespace storage = logservice::storage;

static_assert(format::kManifestHeaderSize + format::kMaxManifestFiles * format::kManifestFileEntrySize +
                      format::kMaxDirectorySnapshot <=
                  storage::kMaxDurableFilePayload,
              "a manifest at the format's limits must fit a durable file");

Result<format::Manifest> ReadManifest(logservice::FileSystem& fs, const std::string& dir) {
  auto payload = storage::ReadDurableFile(fs, dir, format::kManifestName, storage::DurableFileKind::kPageServerManifest);
  if (!payload.ok()) return payload.status();
  format::Manifest m;
  if (Status s = format::DecodeManifest(*payload, &m); !s.ok())
    return Status::Corruption(logservice::JoinPath(dir, format::kManifestName) + ": " + s.message());
  return m;
}

Status WriteManifest(logservice::FileSystem& fs, const std::string& dir, const format::Manifest& m) {
  if (m.files.size() > format::kMaxManifestFiles)
    return Status::InvalidArgument("manifest: " + std::to_string(m.files.size()) + " files, above the limit (run GC)");
  if (m.directory.size() > format::kMaxDirectorySnapshot)
    return Status::InvalidArgument("manifest: directory snapshot of " + std::to_string(m.directory.size()) +
                                   " bytes, above the limit");
  return storage::WriteDurableFile(fs, dir, format::kManifestName, storage::DurableFileKind::kPageServerManifest,
                                   format::EncodeManifest(m));
}

}  // namespace strata::pageserver
