// Durable small files replaced atomically: the checkpoint (and, later, other
// node metadata such as a promised epoch).
//
// Write: "<name>.tmp" is created (or emptied), written, fdatasync'ed, renamed
// over "<name>", and the directory is fsync'ed. A crash before the rename
// leaves the old file; after the rename but before the directory fsync,
// either the old or the new one (both complete and checksummed); a leftover
// .tmp is ignored and overwritten by the next write. Callers serialize
// writes to the same name.
#pragma once

#include <string>

#include "disk_format.h"
#include "storage/file_system.h"
#include "strata/logservice/status.h"

namespace strata::logservice::storage {

Status WriteDurableFile(FileSystem& fs, const std::string& dir, const std::string& name, DurableFileKind kind,
                        std::string_view payload);
// kNotFound if the file does not exist; kCorruption if it fails its checks.
Result<std::string> ReadDurableFile(FileSystem& fs, const std::string& dir, const std::string& name,
                                    DurableFileKind kind);

}  // namespace strata::logservice::storage
