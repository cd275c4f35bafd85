/* Strata strong sync: the sessions whose commit is not settled yet, for the
   AFTER_COMMIT wait point (strata_sync_source_wait_point).

   Pure logic, no MySQL headers (tests/sessions_test.cc). The source plugin
   keeps one instance under its mutex: after_commit() records each session's
   commit end, the end of the session's statement looks it up (and waits or
   parks if the quorum does not cover it yet), and settling takes it out.
   See docs/design/strong-sync.md, section 6.2. */
#ifndef STRATA_SYNC_SESSIONS_H
#define STRATA_SYNC_SESSIONS_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "strata_sync_position.h"

namespace strata::sync {

class PendingCommits {
 public:
  /** A commit of session `id` ended at `p`. A session's statement may
      commit more than once (a procedure): the later position is the one to
      wait for, since it covers the earlier ones. */
  void record(std::uint32_t id, const Pos &p) {
    auto [it, inserted] = m_pending.try_emplace(id, p);
    if (!inserted && it->second < p) it->second = p;
  }

  /** The position session `id` waits for, or nullptr. */
  const Pos *find(std::uint32_t id) const {
    auto it = m_pending.find(id);
    return it == m_pending.end() ? nullptr : &it->second;
  }

  /** Takes the session's entry out (it is settled). */
  std::optional<Pos> take(std::uint32_t id) {
    auto it = m_pending.find(id);
    if (it == m_pending.end()) return std::nullopt;
    Pos p = std::move(it->second);
    m_pending.erase(it);
    return p;
  }

  /** Drops every entry the quorum covers: those sessions need not wait, and
      a commit that never reaches a statement status (an event) does not
      stay. */
  void forget_covered(const Pos &quorum) {
    for (auto it = m_pending.begin(); it != m_pending.end();)
      it = it->second <= quorum ? m_pending.erase(it) : std::next(it);
  }

  /** Forgets everything (RESET BINARY LOGS AND GTIDS); returns how many. */
  std::size_t clear() {
    const std::size_t n = m_pending.size();
    m_pending.clear();
    return n;
  }

  std::size_t size() const { return m_pending.size(); }
  bool empty() const { return m_pending.empty(); }

 private:
  std::unordered_map<std::uint32_t, Pos> m_pending;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_SESSIONS_H
