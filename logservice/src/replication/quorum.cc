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
}  // namespace

Lsn QuorumFrontier(const std::vector<NodeAck>& nodes, std::size_t w, Lsn tail_block, Lsn tail_end) {
  std::vector<Lsn> durable, tails;
  for (const auto& n : nodes) {
    if (!n.sealed) continue;
    durable.push_back(n.durable);
    tails.push_back(tail_end > tail_block && n.tail_block == tail_block ? std::min(n.tail_end, tail_end) : 0);
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

std::optional<std::size_t> ChooseSource(const std::vector<NodeState>& states) {
  std::optional<std::size_t> best;
  Epoch best_epoch = 0;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const Epoch e = StreamEpochAt(states[i].history, states[i].durable);
    if (!best || e > best_epoch || (e == best_epoch && states[i].durable > states[*best].durable)) {
      best = i;
      best_epoch = e;
    }
  }
  return best;
}

TailImage ChooseTail(const std::vector<NodeState>& states, const std::vector<SealEntry>& history, Lsn end) {
  auto belongs = [&](Epoch e) {
    bool found = false;
    for (const auto& h : history) {
      if (h.epoch == e) found = true;
      else if (found && h.lsn < end) return false;  // a later writer sealed below the end
    }
    return found;
  };
  TailImage best;
  for (const auto& s : states) {
    const TailImage& t = s.tail;
    if (!t.valid() || t.block_lsn != end || !belongs(t.epoch)) continue;
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

}  // namespace strata::logservice::repl
