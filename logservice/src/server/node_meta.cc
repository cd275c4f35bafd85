// NodeMeta / tail register persistence; see node_meta.h.
#include "node_meta.h"

#include "durable_file.h"
#include "strata/rdma/little_endian.h"

namespace strata::logservice::server {
namespace {

// 2 added rebuilding + certify_lsn; a version 1 file is a member's (it was
// written before nodes could rebuild) and reads as rebuilding = false.
// 3 added each history entry's recovered end, the tail register and the
// seal's cut (docs/design/logservice-seal-with-tail.md); older entries read
// with an unknown end, the older register stays in its own file.
// 4 added was_member; older files read it as "not rebuilding" (a member is
// one; a rebuilding node of an older version may never have been one).
// 5 added the retention pins (docs/design/page-server.md 7.4); older files
// read with none.
constexpr std::uint32_t kMetaVersion = 5;
constexpr std::uint32_t kTailVersion = 1;

void Put64(std::string* o, std::uint64_t v) { rdma::AppendLe(o, v, 8); }
bool Get64(std::string_view* in, std::uint64_t* v) {
  if (in->size() < 8) return false;
  *v = rdma::GetFixed64(in->data());
  in->remove_prefix(8);
  return true;
}
void PutStr(std::string* o, std::string_view s) { Put64(o, s.size()); o->append(s); }
bool GetStr(std::string_view* in, std::string* s, std::size_t cap) {
  std::uint64_t n;
  if (!Get64(in, &n) || n > cap || in->size() < n) return false;
  s->assign(in->data(), n);
  in->remove_prefix(n);
  return true;
}

}  // namespace

std::string EncodeNodeMeta(const NodeMeta& m) {
  std::string o;
  for (std::uint64_t v : {std::uint64_t{kMetaVersion}, m.promised_epoch, m.writer_id, m.seal_epoch, m.seal_lsn,
                          std::uint64_t{m.self_index}, std::uint64_t{m.history.size()}})
    Put64(&o, v);
  for (const auto& h : m.history) { Put64(&o, h.epoch); Put64(&o, h.lsn); Put64(&o, h.end); }
  Put64(&o, m.peers.size());
  for (const auto& p : m.peers) PutStr(&o, p);
  Put64(&o, m.rebuilding ? 1 : 0);
  Put64(&o, m.certify_lsn);
  Put64(&o, m.tail.epoch);
  Put64(&o, m.tail.block_lsn);
  Put64(&o, m.tail.data_end);
  PutStr(&o, m.tail.image);
  Put64(&o, m.tail_anchored ? 1 : 0);
  Put64(&o, m.seal_cut);
  Put64(&o, m.was_member || !m.rebuilding ? 1 : 0);
  Put64(&o, m.pins.size());
  for (const auto& p : m.pins) { PutStr(&o, p.name); Put64(&o, p.lsn); }
  return o;
}

Status DecodeNodeMeta(std::string_view in, NodeMeta* out) {
  NodeMeta m;
  std::uint64_t version, self, nh, np;
  if (!Get64(&in, &version) || version < 1 || version > kMetaVersion)
    return Status::Corruption("node meta: bad version");
  if (!Get64(&in, &m.promised_epoch) || !Get64(&in, &m.writer_id) || !Get64(&in, &m.seal_epoch) ||
      !Get64(&in, &m.seal_lsn) || !Get64(&in, &self) || !Get64(&in, &nh) || nh > wire::kMaxHistory)
    return Status::Corruption("node meta: truncated header");
  m.self_index = static_cast<std::uint32_t>(self);
  m.history.resize(nh);
  for (auto& h : m.history) {
    if (!Get64(&in, &h.epoch) || !Get64(&in, &h.lsn) || (version >= 3 && !Get64(&in, &h.end)))
      return Status::Corruption("node meta: truncated history");
    if (h.end < h.lsn) return Status::Corruption("node meta: history entry ends below its seal");
  }
  if (!Get64(&in, &np) || np > wire::kMaxPeers) return Status::Corruption("node meta: bad peer count");
  m.peers.resize(np);
  for (auto& p : m.peers)
    if (!GetStr(&in, &p, wire::kMaxAddress)) return Status::Corruption("node meta: truncated peer");
  if (version >= 2) {
    std::uint64_t rebuilding;
    if (!Get64(&in, &rebuilding) || rebuilding > 1 || !Get64(&in, &m.certify_lsn))
      return Status::Corruption("node meta: truncated rebuild state");
    m.rebuilding = rebuilding == 1;
  }
  if (version >= 3) {
    repl::TailImage& t = m.tail;
    std::uint64_t anchored;
    if (!Get64(&in, &t.epoch) || !Get64(&in, &t.block_lsn) || !Get64(&in, &t.data_end) ||
        !GetStr(&in, &t.image, wire::kMaxTailImage) || !Get64(&in, &anchored) || anchored > 1 ||
        !Get64(&in, &m.seal_cut))
      return Status::Corruption("node meta: truncated tail register");
    m.tail_anchored = anchored == 1;
    if (t.data_end != 0 && (t.data_end <= t.block_lsn || t.data_end - t.block_lsn > t.image.size()))
      return Status::Corruption("node meta: tail register's data end outside its image");
  } else {
    m.tail_in_file = true;
  }
  if (version >= 4) {
    std::uint64_t was_member;
    if (!Get64(&in, &was_member) || was_member > 1) return Status::Corruption("node meta: truncated membership");
    m.was_member = was_member == 1;
  }
  if (version >= 5) {
    std::uint64_t n;
    if (!Get64(&in, &n) || n > wire::kMaxPins) return Status::Corruption("node meta: bad pin count");
    m.pins.resize(n);
    for (auto& p : m.pins)
      if (!GetStr(&in, &p.name, wire::kMaxPinName) || p.name.empty() || !Get64(&in, &p.lsn))
        return Status::Corruption("node meta: truncated pin");
  }
  m.was_member = m.was_member || !m.rebuilding;
  if (!in.empty()) return Status::Corruption("node meta: trailing bytes");
  *out = std::move(m);
  return Status::Ok();
}

std::string EncodeTail(const repl::TailImage& t) {
  std::string o;
  Put64(&o, kTailVersion);
  Put64(&o, t.epoch);
  Put64(&o, t.block_lsn);
  Put64(&o, t.data_end);
  PutStr(&o, t.image);
  return o;
}

Status DecodeTail(std::string_view in, repl::TailImage* out) {
  repl::TailImage t;
  std::uint64_t version;
  if (!Get64(&in, &version) || version != kTailVersion || !Get64(&in, &t.epoch) || !Get64(&in, &t.block_lsn) ||
      !Get64(&in, &t.data_end) || !GetStr(&in, &t.image, wire::kMaxTailImage) || !in.empty())
    return Status::Corruption("tail register: malformed");
  *out = std::move(t);
  return Status::Ok();
}

Result<NodeMeta> LoadNodeMeta(FileSystem& fs, const std::string& dir) {
  auto bytes = storage::ReadDurableFile(fs, dir, "node_meta", storage::DurableFileKind::kNodeMeta);
  if (!bytes.ok()) return bytes.status();
  NodeMeta m;
  STRATA_RETURN_IF_ERROR(DecodeNodeMeta(*bytes, &m));
  return m;
}

Status SaveNodeMeta(FileSystem& fs, const std::string& dir, const NodeMeta& m) {
  return storage::WriteDurableFile(fs, dir, "node_meta", storage::DurableFileKind::kNodeMeta, EncodeNodeMeta(m));
}

Result<repl::TailImage> LoadTail(FileSystem& fs, const std::string& dir) {
  auto bytes = storage::ReadDurableFile(fs, dir, "tail", storage::DurableFileKind::kTail);
  if (!bytes.ok()) return bytes.status();
  repl::TailImage t;
  STRATA_RETURN_IF_ERROR(DecodeTail(*bytes, &t));
  return t;
}

Status SaveTail(FileSystem& fs, const std::string& dir, const repl::TailImage& t) {
  return storage::WriteDurableFile(fs, dir, "tail", storage::DurableFileKind::kTail, EncodeTail(t));
}

}  // namespace strata::logservice::server
