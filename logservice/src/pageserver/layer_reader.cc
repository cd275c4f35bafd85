// Checked reads of layer files; see layer_reader.h.
#include "layer_reader.h"

#include "strata/rdma/crc32c.h"

namespace strata::pageserver {

using rdma::Crc32c;

Result<std::shared_ptr<const LayerReader>> LayerReader::Open(logservice::FileSystem& fs, const std::string& path) {
  auto file = fs.OpenReadable(path);
  if (!file.ok()) return file.status();
  return Open(std::move(*file), path);
}

Status LayerReader::Corrupt(std::uint64_t offset, const std::string& what) const {
  return Status::Corruption(path_ + " at offset " + std::to_string(offset) + ": " + what);
}

Result<std::shared_ptr<const LayerReader>> LayerReader::Open(std::unique_ptr<logservice::ReadableFile> file,
                                                             const std::string& path) {
  std::shared_ptr<LayerReader> r(new LayerReader());
  r->file_ = std::move(file);
  r->path_ = path;
  auto size = r->file_->Size();
  if (!size.ok()) return size.status();
  r->size_ = *size;
  if (r->size_ < format::kFileHeaderSize + format::kFooterSize)
    return r->Corrupt(0, std::to_string(r->size_) + " bytes, too small for a header and a footer");

  std::string bytes;
  STRATA_RETURN_IF_ERROR(r->file_->ReadAt(0, format::kFileHeaderSize, &bytes));
  if (Status s = format::DecodeFileHeader(bytes, &r->header_); !s.ok()) return r->Corrupt(0, s.message());

  const std::uint64_t footer_at = r->size_ - format::kFooterSize;
  STRATA_RETURN_IF_ERROR(r->file_->ReadAt(footer_at, format::kFooterSize, &bytes));
  if (Status s = format::DecodeFooter(bytes, &r->footer_); !s.ok()) return r->Corrupt(footer_at, s.message());
  r->footer_crc_ = Crc32c(bytes);
  const format::Footer& f = r->footer_;
  // The index must fill [index_offset, footer_at) exactly. Checked by
  // division so that no count from disk can overflow or size an allocation.
  if (f.index_offset > footer_at) return r->Corrupt(footer_at, "index offset beyond the footer");
  const std::uint64_t index_len = footer_at - f.index_offset;
  if (index_len % format::kIndexEntrySize != 0 || index_len / format::kIndexEntrySize != f.index_count)
    return r->Corrupt(footer_at, "index size does not match its entry count");
  if (f.index_count == 0 && f.index_offset != format::kFileHeaderSize)
    return r->Corrupt(footer_at, "empty file with a block area");
  if (f.block_count > (f.index_offset - format::kFileHeaderSize) / format::kBlockHeaderSize ||
      f.record_count > (f.index_offset - format::kFileHeaderSize) / format::kRecordHeaderSize)
    return r->Corrupt(footer_at, "more blocks or records than the block area can hold");
  if (r->header_.kind == format::FileKind::kImage && f.index_count != f.record_count)
    return r->Corrupt(footer_at, "image file with more than one record for a page");

  STRATA_RETURN_IF_ERROR(r->file_->ReadAt(f.index_offset, index_len, &bytes));
  if (bytes.size() != index_len) return r->Corrupt(f.index_offset, "index cut short");
  if (Crc32c(bytes) != f.index_crc) return r->Corrupt(f.index_offset, "index CRC mismatch");
  r->index_.reserve(f.index_count);
  std::uint64_t records = 0;
  for (std::uint64_t i = 0; i < f.index_count; ++i) {
    const std::uint64_t at = f.index_offset + i * format::kIndexEntrySize;
    format::IndexEntry e;
    if (Status s = format::DecodeIndexEntry(std::string_view(bytes).substr(i * format::kIndexEntrySize), &e); !s.ok())
      return r->Corrupt(at, s.message());
    if (!r->index_.empty() && !(r->index_.back().page < e.page)) return r->Corrupt(at, "index not sorted by page");
    if (!r->index_.empty() && e.block_offset < r->index_.back().block_offset)
      return r->Corrupt(at, "index block offsets go backwards");
    if (e.block_offset < format::kFileHeaderSize || e.block_offset >= f.index_offset)
      return r->Corrupt(at, "index entry points outside the block area");
    const bool image = r->header_.kind == format::FileKind::kImage;
    if (e.min_end_lsn < r->header_.lsn_start || e.max_end_lsn > r->header_.lsn_end ||
        (image && (e.record_count != 1 || e.max_end_lsn != r->header_.lsn_end)))
      return r->Corrupt(at, "index entry LSNs outside the file's range");
    records += e.record_count;
    r->index_.push_back(e);
  }
  if (records != f.record_count) return r->Corrupt(footer_at, "footer record count disagrees with the index");
  return std::shared_ptr<const LayerReader>(std::move(r));
}

Status LayerReader::ReadBlock(std::uint64_t offset, std::vector<PageRecord>* records, std::uint64_t* next) const {
  const std::uint64_t end = footer_.index_offset;
  if (offset < format::kFileHeaderSize || offset >= end || end - offset < format::kBlockHeaderSize)
    return Corrupt(offset, "block header outside the block area");
  std::string bytes;
  STRATA_RETURN_IF_ERROR(file_->ReadAt(offset, format::kBlockHeaderSize, &bytes));
  std::uint32_t len = 0, count = 0;
  if (Status s = format::DecodeBlockHeader(bytes, &len, &count); !s.ok()) return Corrupt(offset, s.message());
  if (len > end - offset - format::kBlockHeaderSize) return Corrupt(offset, "block runs past the block area");
  STRATA_RETURN_IF_ERROR(file_->ReadAt(offset, format::kBlockHeaderSize + len, &bytes));
  if (bytes.size() != format::kBlockHeaderSize + len) return Corrupt(offset, "block cut short");
  if (Status s = format::CheckBlockCrc(bytes); !s.ok()) return Corrupt(offset, s.message());
  std::string_view payload = std::string_view(bytes).substr(format::kBlockHeaderSize);
  const RecordKind want = header_.kind == format::FileKind::kDelta ? RecordKind::kDelta : RecordKind::kImage;
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::uint64_t at = offset + format::kBlockHeaderSize + (bytes.size() - format::kBlockHeaderSize - payload.size());
    if (payload.empty()) return Corrupt(at, "block holds fewer records than its header says");
    PageRecord rec;
    std::size_t used = 0;
    if (Status s = format::DecodeRecord(payload, &rec, &used); !s.ok()) return Corrupt(at, s.message());
    if (rec.kind != want) return Corrupt(at, "record of the wrong kind for this file");
    if ((want == RecordKind::kDelta && rec.start_lsn < header_.lsn_start) || rec.end_lsn > header_.lsn_end ||
        (want == RecordKind::kImage && rec.end_lsn != header_.lsn_end))
      return Corrupt(at, "record LSNs outside the file's range");
    if (!records->empty() && i > 0) {
      const PageRecord& prev = records->back();
      if (rec.page < prev.page || (rec.page == prev.page && rec.end_lsn < prev.end_lsn))
        return Corrupt(at, "records out of order");
    }
    payload.remove_prefix(used);
    records->push_back(std::move(rec));
  }
  if (!payload.empty()) return Corrupt(offset, "block has bytes after its last record");
  *next = offset + format::kBlockHeaderSize + len;
  return Status::Ok();
}

Status LayerReader::ReadPage(const format::IndexEntry& entry, std::vector<PageRecord>* out) const {
  std::uint64_t offset = entry.block_offset;
  std::uint32_t found = 0;
  std::uint64_t bytes = 0;
  Lsn min_end = 0, max_end = 0, prev_end = 0;
  bool first_block = true;
  while (found < entry.record_count) {
    if (offset >= footer_.index_offset) return Corrupt(offset, "page's records run past the last block");
    std::vector<PageRecord> block;
    std::uint64_t next = 0;
    STRATA_RETURN_IF_ERROR(ReadBlock(offset, &block, &next));
    bool seen_here = false;
    for (PageRecord& r : block) {
      if (r.page < entry.page) {
        if (!first_block || found > 0) return Corrupt(offset, "records of an earlier page after this page's");
        continue;
      }
      if (entry.page < r.page) {
        if (found < entry.record_count) return Corrupt(offset, "fewer records for the page than its index entry says");
        break;
      }
      if (found == entry.record_count) return Corrupt(offset, "more records for the page than its index entry says");
      if (found == 0) min_end = r.end_lsn;
      if (r.end_lsn < prev_end) return Corrupt(offset, "page's records out of LSN order");
      prev_end = max_end = r.end_lsn;
      bytes += r.body.size();
      ++found;
      seen_here = true;
      out->push_back(std::move(r));
    }
    if (first_block && !seen_here) return Corrupt(offset, "index entry points at a block without the page");
    first_block = false;
    offset = next;
  }
  if (min_end != entry.min_end_lsn || max_end != entry.max_end_lsn || bytes != entry.body_bytes)
    return Corrupt(entry.block_offset, "page's records disagree with its index entry");
  return Status::Ok();
}

Status LayerReader::VerifyAll() const {
  std::uint64_t offset = format::kFileHeaderSize;
  std::uint64_t blocks = 0;
  std::size_t idx = 0;  // index entry of the page being read
  std::uint32_t count = 0;
  std::uint64_t bytes = 0;
  Lsn min_end = 0, max_end = 0;
  bool have_prev = false;
  PageRecord prev;
  auto close_page = [&](std::uint64_t at) -> Status {
    const format::IndexEntry& e = index_[idx];
    if (count != e.record_count || bytes != e.body_bytes || min_end != e.min_end_lsn || max_end != e.max_end_lsn)
      return Corrupt(at, "records of a page disagree with its index entry");
    ++idx;
    count = 0;
    bytes = 0;
    return Status::Ok();
  };
  while (offset < footer_.index_offset) {
    std::vector<PageRecord> block;
    std::uint64_t next = 0;
    STRATA_RETURN_IF_ERROR(ReadBlock(offset, &block, &next));
    for (const PageRecord& r : block) {
      if (have_prev && (r.page < prev.page || (r.page == prev.page && r.end_lsn < prev.end_lsn)))
        return Corrupt(offset, "records out of order across blocks");
      if (have_prev && !(r.page == prev.page)) STRATA_RETURN_IF_ERROR(close_page(offset));
      if (idx >= index_.size() || !(index_[idx].page == r.page))
        return Corrupt(offset, "a page in the blocks is missing from the index");
      if (count == 0) {
        if (index_[idx].block_offset != offset) return Corrupt(offset, "index entry points at the wrong block");
        min_end = r.end_lsn;
      }
      max_end = r.end_lsn;
      bytes += r.body.size();
      ++count;
      have_prev = true;
      prev.page = r.page;
      prev.end_lsn = r.end_lsn;
    }
    ++blocks;
    offset = next;
  }
  if (offset != footer_.index_offset) return Corrupt(offset, "last block does not end at the index");
  if (have_prev) STRATA_RETURN_IF_ERROR(close_page(offset));
  if (idx != index_.size()) return Corrupt(footer_.index_offset, "index lists pages the blocks do not hold");
  if (blocks != footer_.block_count) return Corrupt(size_ - format::kFooterSize, "footer block count is wrong");
  return Status::Ok();
}

}  // namespace strata::pageserver
