// Oracle: the invariants; see oracle.h.
#include "oracle.h"

#include <algorithm>

#include "codec.h"
#include "wire.h"

namespace strata::logservice::sim {

char GenByte(int gen, Lsn lsn) {
  std::uint64_t x = (static_cast<std::uint64_t>(gen) + 1) * 0x9E3779B97F4A7C15ull + lsn * 0xD1B54A32D192ED03ull;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<char>(x);
}

std::string GenBytes(int gen, Lsn from, std::size_t n) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = GenByte(gen, from + i);
  return s;
}

namespace {

std::uint64_t U64(std::string_view p, std::size_t off) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[off + i]);
  return v;
}

// Index of the first byte where a and b differ, or npos.
std::size_t FirstDiff(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (a.substr(0, n) == b.substr(0, n)) return std::string_view::npos;
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return i;
  return std::string_view::npos;
}

}  // namespace

std::string Oracle::Who(int gen) const {
  auto it = gens_.find(gen);
  std::string s = "writer " + std::to_string(gen);
  if (it != gens_.end() && it->second.opened) s += " (epoch " + std::to_string(it->second.epoch) + ")";
  return s;
}

// Which generation wrote the bytes at [lsn, lsn + bytes.size()): the one
// whose pattern matches most of them.
static std::string Attribute(Lsn lsn, std::string_view bytes, int max_gen) {
  const std::size_t n = std::min<std::size_t>(bytes.size(), 32);
  int best = -1;
  std::size_t best_hits = 0;
  for (int g = 0; g <= max_gen; ++g) {
    std::size_t hits = 0;
    for (std::size_t i = 0; i < n; ++i) hits += GenByte(g, lsn + i) == bytes[i];
    if (hits > best_hits) {
      best = g;
      best_hits = hits;
    }
  }
  if (n == 0 || best_hits * 2 < n) return "bytes of no writer";
  return "writer " + std::to_string(best) + "'s bytes";
}

Lsn Oracle::ClaimedBelow(Epoch e) const {
  Lsn m = 0;
  for (const auto& [g, G] : gens_)
    if (G.opened && G.epoch < e) m = std::max<Lsn>(m, G.claimed.size());
  return m;
}

void Oracle::Opened(int gen, Epoch epoch) {
  Gen& G = gens_[gen];
  G.opened = true;
  G.epoch = epoch;
  auto [it, fresh] = epoch_owner_.emplace(epoch, gen);
  if (!fresh && it->second != gen)
    s_.Fail("epochs: " + Who(gen) + " and " + Who(it->second) + " both opened as writers of epoch " +
            std::to_string(epoch));
}

void Oracle::CheckRecoveryHolds(int h, int g) {
  const Gen& H = gens_[h];
  const Gen& G = gens_[g];
  if (G.claimed.empty()) return;
  if (H.log.size() < G.claimed.size()) {
    s_.Fail("lost acknowledged redo: " + Who(g) + " was told LSN " + std::to_string(G.claimed.size()) +
            " is durable, but " + Who(h) + " recovered a log that ends at " + std::to_string(H.log.size()) +
            " (the bytes it dropped are " + Attribute(H.log.size(), std::string_view(G.claimed).substr(H.log.size()), static_cast<int>(gens_.rbegin()->first)) + ")");
    return;
  }
  const std::size_t d = FirstDiff(G.claimed, std::string_view(H.log).substr(0, G.claimed.size()));
  if (d != std::string_view::npos) {
    const int mg = gens_.rbegin()->first;
    s_.Fail("forged acknowledged redo: " + Who(g) + " was told LSN " + std::to_string(G.claimed.size()) +
            " is durable, but at LSN " + std::to_string(d) + " " + Who(h) + " recovered " +
            Attribute(d, std::string_view(H.log).substr(d), mg) + " where " +
            Attribute(d, std::string_view(G.claimed).substr(d), mg) + " were acknowledged");
  }
}

void Oracle::Recovered(int gen, const std::string& log) {
  Gen& H = gens_[gen];
  H.recovered = true;
  H.log = log;
  for (const auto& [g, G] : gens_)
    if (g != gen && G.opened && G.epoch < H.epoch) CheckRecoveryHolds(gen, g);
  // Beyond what anyone acknowledged the log may hold any writer's bytes,
  // but only bytes some writer wrote at that LSN.
  const int mg = gens_.rbegin()->first;
  for (Lsn l = committed_.size(); l < log.size(); ++l) {
    bool someone = false;
    for (int g = 0; g <= mg && !someone; ++g) someone = GenByte(g, l) == log[l];
    if (!someone) {
      s_.Fail("forged redo: " + Who(gen) + " recovered a byte at LSN " + std::to_string(l) +
              " that no writer wrote there");
      return;
    }
  }
}

void Oracle::Claim(int gen, Lsn durable, std::string_view content) {
  Gen& G = gens_[gen];
  if (durable <= G.claimed.size()) return;
  if (content.size() < durable) {
    s_.Fail("simulator: " + Who(gen) + " was told LSN " + std::to_string(durable) + " is durable but wrote only " +
            std::to_string(content.size()) + " bytes");
    return;
  }
  ++claims_;
  const std::size_t n = std::min<std::size_t>(durable, committed_.size());
  const std::size_t d = FirstDiff(content.substr(0, n), std::string_view(committed_).substr(0, n));
  if (d != std::string_view::npos) {
    const int mg = gens_.rbegin()->first;
    s_.Fail("acknowledged redo changed: LSN " + std::to_string(d) + " was acknowledged to " + Who(committed_by_) +
            " as " + Attribute(d, std::string_view(committed_).substr(d), mg) + ", and now to " + Who(gen) + " as " +
            Attribute(d, content.substr(d), mg));
    return;
  }
  if (durable > committed_.size()) {
    committed_.append(content.substr(committed_.size(), durable - committed_.size()));
    committed_by_ = gen;
  }
  G.claimed.append(content.substr(G.claimed.size(), durable - G.claimed.size()));
  for (const auto& [h, H] : gens_)
    if (h != gen && H.recovered && H.epoch > G.epoch) CheckRecoveryHolds(h, gen);
}

void Oracle::NodeEpochs(int node, Epoch promised, Epoch seal, const char* where) {
  auto& m = node_max_[node];
  if (promised < m.first) {
    s_.Fail("epochs only grow: node " + std::to_string(node + 1) + " reported promised epoch " + std::to_string(promised) +
            " (" + where + ") after it had reported " + std::to_string(m.first));
    return;
  }
  if (seal != 0 && seal < m.second) {
    s_.Fail("epochs only grow: node " + std::to_string(node + 1) + " reported seal epoch " + std::to_string(seal) + " (" +
            where + ") after it had reported " + std::to_string(m.second));
    return;
  }
  m.first = promised;
  m.second = std::max(m.second, seal);
}

void Oracle::CheckServed(int node, Epoch e, Lsn start, std::string_view bytes) {
  auto it = seals_.find(e);
  if (it == seals_.end()) {
    s_.Fail("node " + std::to_string(node + 1) + " served redo as sealed at epoch " + std::to_string(e) +
            ", which no writer ever sealed");
    return;
  }
  const Seal& se = it->second;
  auto git = gens_.find(se.gen);
  const bool known = git != gens_.end() && git->second.recovered && git->second.epoch == e;
  const Lsn below = ClaimedBelow(e);
  const int mg = gens_.empty() ? 0 : gens_.rbegin()->first;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const Lsn l = start + i;
    if (known) {
      const std::string& r = git->second.log;
      const char want = l < r.size() ? r[l] : GenByte(se.gen, l);
      if (bytes[i] != want) {
        s_.Fail("node " + std::to_string(node + 1) + " served, sealed at epoch " + std::to_string(e) + " (" +
                Who(se.gen) + ", sealed at LSN " + std::to_string(se.lsn) + "), " + Attribute(l, bytes.substr(i), mg) +
                " at LSN " + std::to_string(l) + " where that stream holds " +
                (l < r.size() ? Attribute(l, std::string_view(r).substr(l), mg) : Who(se.gen) + "'s bytes") +
                (l >= se.lsn ? ": bytes a recovery truncated" : ""));
        return;
      }
    } else if (l >= se.lsn) {
      s_.Fail("node " + std::to_string(node + 1) + " served " + Attribute(l, bytes.substr(i), mg) + " at LSN " +
              std::to_string(l) + ", sealed at epoch " + std::to_string(e) + " whose writer (" + Who(se.gen) +
              ") sealed the stream at LSN " + std::to_string(se.lsn) + " and has written nothing: bytes a recovery truncated");
      return;
    } else if (l < below && bytes[i] != committed_[l]) {
      s_.Fail("node " + std::to_string(node + 1) + " served, sealed at epoch " + std::to_string(e) + ", " +
              Attribute(l, bytes.substr(i), mg) + " at acknowledged LSN " + std::to_string(l) + " where " +
              Attribute(l, std::string_view(committed_).substr(l), mg) + " were acknowledged");
      return;
    }
  }
}

void Oracle::OnSend(int from, int /*to*/, std::uint64_t link, std::string_view p) {
  if (p.size() < wire::kHeaderSize) return;
  const auto type = static_cast<wire::MsgType>(static_cast<unsigned char>(p[wire::kTypeOffset]));
  auto nit = node_of_process_.find(from);
  if (nit != node_of_process_.end() && wire::IsResponse(type)) {
    const int node = nit->second;
    if (check_reply_epochs_) NodeEpochs(node, U64(p, wire::kEpochOffset), 0, "reply header");
    if (type != wire::MsgType::kPromiseResp && type != wire::MsgType::kSealResp &&
        type != wire::MsgType::kStatusResp && type != wire::MsgType::kReadResp)
      return;
    repl::Frame f;
    if (!repl::Decode(p, &f).ok()) {
      s_.Fail("node " + std::to_string(node + 1) + " sent a malformed " + std::string(repl::MsgTypeName(type)));
      return;
    }
    if (type == wire::MsgType::kReadResp) {
      auto rit = read_seal_.find({link, f.request_id});
      if (rit == read_seal_.end()) return;
      const Epoch e = rit->second;
      read_seal_.erase(rit);
      if (e == 0 || f.code != wire::ReplyCode::kOk) return;
      for (const auto& r : f.ranges) {
        CheckServed(node, e, r.start, r.bytes);
        if (s_.failed()) return;
      }
      return;
    }
    if (f.code == wire::ReplyCode::kOk || f.state.promised_epoch != 0)
      NodeEpochs(node, f.state.promised_epoch, f.state.seal_epoch, repl::MsgTypeName(type).data());
    return;
  }
  if (type == wire::MsgType::kSealReq || type == wire::MsgType::kReadReq) {
    repl::Frame f;
    if (!repl::Decode(p, &f).ok()) return;
    if (type == wire::MsgType::kReadReq) {
      read_seal_[{link, f.request_id}] = f.seal_epoch;
      return;
    }
    auto git = gen_of_process_.find(from);
    const int gen = git == gen_of_process_.end() ? -1 : git->second;
    auto [it, fresh] = seals_.emplace(f.epoch, Seal{gen, f.lsn});
    if (!fresh && (it->second.gen != gen || it->second.lsn != f.lsn))
      s_.Fail("epoch " + std::to_string(f.epoch) + " sealed twice: by " + Who(it->second.gen) + " at LSN " +
              std::to_string(it->second.lsn) + " and by " + Who(gen) + " at LSN " + std::to_string(f.lsn));
  }
}

}  // namespace strata::logservice::sim
