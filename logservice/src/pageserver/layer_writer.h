// Writing one immutable layer file (delta or image; format.h) so that it is
// either absent or complete under its final name after a crash:
//   "<name>.tmp" created, header + blocks + index + footer appended,
//   fdatasync, rename to "<name>", fsync of the directory.
// The file becomes part of the store only when a manifest lists it (the
// caller's commit); until then it is an orphan that the next Open deletes.
// On any error the temporary file is removed (best effort) and nothing else
// is touched; a file renamed before a failed directory fsync is left for Open.
#pragma once

#include <string>
#include <vector>

#include "format.h"
#include "storage/file_system.h"

namespace strata::pageserver {

struct WrittenLayer {
  format::ManifestFile entry;  // what the manifest lists for it
  std::string path;
};

// `records` must be in file order (format.h: sorted by (space, page,
// end_lsn), application order within a page) and agree with `header`
// (kind, LSN range); an image file holds one record per page. Checked:
// kInvalidArgument if not, before anything is written.
Result<WrittenLayer> WriteLayerFile(logservice::FileSystem& fs, const std::string& dir,
                                    const format::FileHeader& header, const std::vector<const PageRecord*>& records);

}  // namespace strata::pageserver
