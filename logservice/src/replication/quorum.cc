// Quorum rules; see quorum.h for the reasoning.
#include "quorum.h"

#include <algorithm>
#include <functional>

namespace strata::logservice::repl {

namespace {
// k-th highest (1-based) of values, 0 if fewer than k.
Lsn KthHighest(std::vector<Lsn> v, std::size_t k) {
  if (k == 0 || v.size() < k) return 0;
  std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), std::greater<Lsn>());
  return v[k - 1];
}

// Where a node's log ends and its rank (ChooseSource): its block stream,
// ranked as the newest of the writer of its last byte and every writer
// whose whole recovered log it holds, extended by its tail register when
// that counts (RegisterCounts).
struct LogEnd {
  Epoch epoch;
  Lsn end;
  bool operator>(const LogEnd& o) const { return epoch != o.epoch ? epoch > o.epoch : end > o.end; }
};
Epoch BlocksRank(const NodeState& s) {
  return std::max(StreamEpochAt(s.history, s.durable), RecoveredEpochAt(s.history, s.durable));
}
// The register extends the log when it sits at the block end, its blocks
// are its writer's stream (its history vouches for it, or it is anchored),
// and its writer is not older than the blocks' rank: a newer writer that
// recovered these blocks without the register's bytes never had them
// acknowledged, and a log ranked as that writer must not grow by them.
bool RegisterCounts(const NodeState& s, Epoch blocks_rank) {
  const TailImage& t = s.tail;
  return t.valid() && t.block_lsn == s.durable && t.epoch >= blocks_rank &&
         (s.tail_anchored || TailBelongs(s.history, t.epoch, s.durable));
}
LogEnd EndOf(const NodeState& s) {
  const Epoch rank = BlocksRank(s);
  if (RegisterCounts(s, rank)) return LogEnd{s.tail.epoch, s.tail.data_end};
  return LogEnd{rank, s.durable};
}
}  // namespace

Lsn QuorumFrontier(const std::vector<NodeAck>& nodes, std::size_t w, Lsn tail_block, Lsn tail_end) {
  std::vector<Lsn> durable, tails;
  for (const auto& n : nodes) {
    if (!n.sealed) continue;
    durable.push_back(n.durable);
    // A node vouches for the tail's bytes only if it also holds every block
    // below it durably: its register may be the only copy it keeps of them
    // and it will drop the register when a later tail arrives, keeping the
    // bytes only in blocks that land after its gap-free end.
    tails.push_back(tail_end > tail_block && n.tail_block == tail_block && n.durable >= tail_block
                        ? std::min(n.tail_end, tail_end)
                        : 0);
  }
  const Lsn b = KthHighest(durable, w);
  if (tail_end > tail_block && tail_block <= b) return std::max(b, KthHighest(tails, w));
  return b;
}

Epoch StreamEpochAt(const std::vector<SealEntry>& history, Lsn end) {
  Epoch e = 0;
  for (const auto& h : history)
    if (h.lsn < end) e = std::max(e, h.epoch);
  return e;
}

bool TailBelongs(const std::vector<SealEntry>& history, Epoch epoch, Lsn end) {
  bool found = false;
  for (const auto& h : history) {
    if (h.epoch == epoch) found = true;
    else if (found && h.lsn < end) return false;
  }
  return found;
}

Epoch CountedRegisterEpoch(const NodeState& source) {
  return RegisterCounts(source, BlocksRank(source)) ? source.tail.epoch : 0;
}

Epoch RecoveredEpochAt(const std::vector<SealEntry>& history, Lsn end) {
  Epoch e = 0;
  for (const auto& h : history)
    if (h.end <= end) e = std::max(e, h.epoch);
  return e;
}

std::optional<std::size_t> ChooseSource(const std::vector<NodeState>& states) {
  std::optional<std::size_t> best;
  LogEnd best_end{0, 0};
  for (std::size_t i = 0; i < states.size(); ++i) {
    const LogEnd e = EndOf(states[i]);
    if (!best || e > best_end) {
      best = i;
      best_end = e;
    }
  }
  return best;
}

TailImage ChooseTail(const std::vector<NodeState>& states, const std::vector<SealEntry>& history, Lsn end,
                     Epoch source_register) {
  TailImage best;
  for (const auto& s : states) {
    const TailImage& t = s.tail;
    if (!t.valid() || t.block_lsn != end) continue;
    if (!TailBelongs(history, t.epoch, end) && !(source_register != 0 && t.epoch == source_register)) continue;
    if (!best.valid() || t.epoch > best.epoch || (t.epoch == best.epoch && t.data_end > best.data_end)) best = t;
  }
  return best;
}

Lsn SealPoint(const std::vector<SealEntry>& node_history, Lsn node_end, const std::vector<SealEntry>& new_history) {
  std::size_t k = 0;
  while (k < node_history.size() && k < new_history.size() && node_history[k] == new_history[k]) ++k;
  Lsn cut = node_end;
  for (std::size_t j = k; j < node_history.size(); ++j) cut = std::min(cut, node_history[j].lsn);
  for (std::size_t j = k; j < new_history.size(); ++j) cut = std::min(cut, new_history[j].lsn);
  return cut;
}

std::optional<std::vector<std::size_t>> RecoveryVoters(const std::vector<NodeState>& states, std::size_t n,
                                                       std::size_t r) {
  std::vector<std::size_t> members, all;
  for (std::size_t i = 0; i < states.size(); ++i) {
    all.push_back(i);
    if (!states[i].rebuilding) members.push_back(i);
  }
  if (members.size() >= r) return members;
  const bool lost_member_log =
      std::any_of(states.begin(), states.end(), [](const NodeState& s) { return s.rebuilding && s.was_member; });
  if (members.empty() && states.size() == n && !lost_member_log) return all;
  return std::nullopt;
}

bool ReachesCertifyLsn(Lsn durable, const TailImage& tail, Epoch seal_epoch, Lsn certify_lsn) {
  if (durable >= certify_lsn) return true;
  return tail.valid() && tail.epoch == seal_epoch && tail.block_lsn <= durable && tail.data_end >= certify_lsn;
}

std::string WhyNotMember(Epoch seal_epoch, Epoch promised_epoch, std::uint64_t writer_id, std::size_t peers,
                         const std::vector<NodeState>& answers) {
  if (seal_epoch == 0) return "not sealed by any writer";
  for (const auto& a : answers) {
    if (a.promised_epoch > promised_epoch)
      return "peer " + a.node_id + " promised epoch " + std::to_string(a.promised_epoch) + ", above our promise " +
             std::to_string(promised_epoch);
    if (a.promised_epoch == promised_epoch && a.writer_id != writer_id)
      return "peer " + a.node_id + " promised our epoch " + std::to_string(promised_epoch) + " to another writer";
    if (a.rebuilding && a.seal_epoch < seal_epoch)
      return "peer " + a.node_id + " is rebuilding and not sealed in epoch " + std::to_string(seal_epoch) + " yet";
  }
  if (answers.size() < peers)
    return std::to_string(answers.size()) + " of " + std::to_string(peers) + " peers answered";
  return "";
}

}  // namespace strata::logservice::repl
