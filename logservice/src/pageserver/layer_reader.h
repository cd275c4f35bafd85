// Reading one layer file (format.h) without trusting it.
//
// Open reads and checks the header, the footer and the whole index (every
// length against the file's real size and the format's limits, every CRC,
// the index sorted and pointing inside the block area) and keeps the index
// in memory. Blocks are read on demand by ReadPage, which checks each
// block's CRC and every record it decodes (kind, LSNs within the file's
// range, order, agreement with the index entry). VerifyAll reads every
// block. Any failure is kCorruption "<path> at offset <n>: <what>"; nothing
// is skipped or repaired.
// Thread-safety: immutable after Open; ReadPage and VerifyAll may run
// concurrently (ReadableFile::ReadAt is).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "format.h"
#include "storage/file_system.h"

namespace strata::pageserver {

class LayerReader {
 public:
  static Result<std::shared_ptr<const LayerReader>> Open(logservice::FileSystem& fs, const std::string& path);
  // The same checks over an already open file (the fuzz target uses this).
  static Result<std::shared_ptr<const LayerReader>> Open(std::unique_ptr<logservice::ReadableFile> file,
                                                         const std::string& path);

  const std::string& path() const { return path_; }
  const format::FileHeader& header() const { return header_; }
  const format::Footer& footer() const { return footer_; }
  std::uint32_t footer_crc() const { return footer_crc_; }
  std::uint64_t size() const { return size_; }
  const std::vector<format::IndexEntry>& index() const { return index_; }

  // Appends the records of the page of `entry` (an entry of index()), in file order.
  Status ReadPage(const format::IndexEntry& entry, std::vector<PageRecord>* out) const;
  Status VerifyAll() const;

 private:
  LayerReader() = default;
  Status Corrupt(std::uint64_t offset, const std::string& what) const;
  // Reads and checks the block at `offset`; *next is the offset after it.
  Status ReadBlock(std::uint64_t offset, std::vector<PageRecord>* records, std::uint64_t* next) const;

  std::unique_ptr<logservice::ReadableFile> file_;
  std::string path_;
  format::FileHeader header_;
  format::Footer footer_;
  std::uint32_t footer_crc_ = 0;
  std::uint64_t size_ = 0;
  std::vector<format::IndexEntry> index_;
};

}  // namespace strata::pageserver
