// The manifest: the page store's only commit point (design note section
// 7.2). A durable file (logservice/src/storage/durable_file.h: temporary
// name, fdatasync, rename, directory fsync) whose payload format is in
// format.h. A store state is committed when WriteManifest returns OK; a
// crash before that leaves the previous manifest, complete. After a failed
// write the caller cannot tell which of the two is on disk (the rename may
// have happened) and must reopen.
#pragma once

#include <string>

#include "format.h"
#include "storage/file_system.h"

namespace strata::pageserver {

// kNotFound if there is no manifest; kCorruption (with the path) if it fails a check.
Result<format::Manifest> ReadManifest(logservice::FileSystem& fs, const std::string& dir);
// kInvalidArgument (nothing written) if `m` exceeds the format's limits.
Status WriteManifest(logservice::FileSystem& fs, const std::string& dir, const format::Manifest& m);

}  // namespace strata::pageserver
