// Streams a layer file to "<name>.tmp", then makes it durable under its
// final name; see layer_writer.h for the crash model.
#include "layer_writer.h"

#include "strata/rdma/crc32c.h"

namespace strata::pageserver {

using logservice::FileSystem;
using logservice::OpenMode;
using logservice::WritableFile;
using rdma::Crc32c;

namespace {

Status CheckOrder(const format::FileHeader& header, const std::vector<const PageRecord*>& records) {
  const RecordKind want = header.kind == format::FileKind::kDelta ? RecordKind::kDelta : RecordKind::kImage;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const PageRecord& r = *records[i];
    if (r.kind != want) return Status::InvalidArgument("layer file: record of the wrong kind");
    if (r.body.size() > format::kMaxRecordBody) return Status::InvalidArgument("layer file: record body too large");
    if (r.start_lsn > r.end_lsn || r.start_lsn < (want == RecordKind::kDelta ? header.lsn_start : 0) ||
        r.end_lsn > header.lsn_end || (want == RecordKind::kImage && r.end_lsn != header.lsn_end))
      return Status::InvalidArgument("layer file: record LSNs outside the file's range");
    if (want == RecordKind::kImage && r.body.empty()) return Status::InvalidArgument("layer file: empty image");
    if (i == 0) continue;
    const PageRecord& p = *records[i - 1];
    if (r.page < p.page) return Status::InvalidArgument("layer file: records not sorted by page");
    if (r.page == p.page && (want == RecordKind::kImage || r.end_lsn < p.end_lsn))
      return Status::InvalidArgument("layer file: a page's records out of LSN order (or two images of one page)");
  }
  return Status::Ok();
}

// Appends blocks, then the index and the footer, to `file`.
class Builder {
 public:
  explicit Builder(WritableFile& file) : file_(file) {}

  Status Add(const PageRecord& r) {
    if (block_records_ > 0 && block_.size() + format::kRecordHeaderSize + r.body.size() > format::kBlockTarget)
      STRATA_RETURN_IF_ERROR(FlushBlock());
    if (index_.empty() || index_.back().page != r.page) {
      format::IndexEntry e;
      e.page = r.page;
      e.block_offset = offset_;  // the block being filled starts here
      e.min_end_lsn = r.end_lsn;
      index_.push_back(e);
    }
    format::IndexEntry& e = index_.back();
    e.record_count += 1;
    e.body_bytes += r.body.size();
    e.max_end_lsn = r.end_lsn;
    format::EncodeRecord(r, &block_);
    block_records_ += 1;
    records_ += 1;
    return Status::Ok();
  }

  Status Finish(std::uint32_t* footer_crc) {
    if (block_records_ > 0) STRATA_RETURN_IF_ERROR(FlushBlock());
    std::string index;
    for (const auto& e : index_) format::EncodeIndexEntry(e, &index);
    format::Footer f;
    f.index_offset = offset_;
    f.index_count = index_.size();
    f.block_count = blocks_;
    f.record_count = records_;
    f.index_crc = Crc32c(index);
    const std::string footer = format::EncodeFooter(f);
    *footer_crc = Crc32c(footer);
    STRATA_RETURN_IF_ERROR(Append(index));
    return Append(footer);
  }

  Status Append(std::string_view bytes) {
    STRATA_RETURN_IF_ERROR(file_.Append(bytes));
    offset_ += bytes.size();
    return Status::Ok();
  }
  std::uint64_t size() const { return offset_; }

 private:
  Status FlushBlock() {
    const std::string block = format::EncodeBlock(block_, block_records_);
    block_.clear();
    block_records_ = 0;
    blocks_ += 1;
    return Append(block);
  }

  WritableFile& file_;
  std::uint64_t offset_ = 0;
  std::string block_;
  std::uint32_t block_records_ = 0;
  std::uint64_t blocks_ = 0;
  std::uint64_t records_ = 0;
  std::vector<format::IndexEntry> index_;
};

}  // namespace

Result<WrittenLayer> WriteLayerFile(FileSystem& fs, const std::string& dir, const format::FileHeader& header,
                                    const std::vector<const PageRecord*>& records) {
  STRATA_RETURN_IF_ERROR(CheckOrder(header, records));
  const std::string path = logservice::JoinPath(dir, format::LayerFileName(header.file_id, header.kind));
  const std::string tmp = path + ".tmp";
  std::uint32_t footer_crc = 0;
  std::uint64_t size = 0;
  Status s;
  {
    auto file = fs.OpenWritable(tmp, OpenMode::kCreateOrTruncate);
    if (!file.ok()) return file.status();
    Builder b(**file);
    s = b.Append(format::EncodeFileHeader(header));
    for (std::size_t i = 0; s.ok() && i < records.size(); ++i) s = b.Add(*records[i]);
    if (s.ok()) s = b.Finish(&footer_crc);
    if (s.ok()) s = (*file)->Sync();
    size = b.size();
  }
  if (s.ok()) s = fs.Rename(tmp, path);
  if (!s.ok()) {
    fs.Remove(tmp).IgnoreError();  // an orphan either way; Open removes what is left
    return s;
  }
  STRATA_RETURN_IF_ERROR(fs.SyncDir(dir));
  WrittenLayer out;
  out.path = path;
  out.entry.file_id = header.file_id;
  out.entry.kind = header.kind;
  out.entry.footer_crc = footer_crc;
  out.entry.lsn_start = header.lsn_start;
  out.entry.lsn_end = header.lsn_end;
  out.entry.size = size;
  return out;
}

}  // namespace strata::pageserver
