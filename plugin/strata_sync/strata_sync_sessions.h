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
#include <map>
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
    auto it = m_by_session.find(id);
    if (it != m_by_session.end()) {
      if (!(it->second->first < p)) return;
      m_by_pos.erase(it->second);
      it->second = m_by_pos.emplace(p, id);
      return;
    }
    m_by_session.emplace(id, m_by_pos.emplace(p, id));
  }

  /** The position session `id` waits for, or nullptr. */
  const Pos *find(std::uint32_t id) const {
    auto it = m_by_session.find(id);
    return it == m_by_session.end() ? nullptr : &it->second->first;
  }

  /** Takes the session's entry out (it is settled). */
  std::optional<Pos> take(std::uint32_t id) {
    auto it = m_by_session.find(id);
    if (it == m_by_session.end()) return std::nullopt;
    Pos p = it->second->first;
    m_by_pos.erase(it->second);
    m_by_session.erase(it);
    return p;
  }

  /** Drops every entry the quorum covers: those sessions need not wait, and
      a commit that never reaches a statement status (an event) does not
      stay. Costs the entries dropped plus one (entries are kept in
      position order too): an ack does not walk every pending session. */
  void forget_covered(const Pos &quorum) {
    while (!m_by_pos.empty() && m_by_pos.begin()->first <= quorum) {
      m_by_session.erase(m_by_pos.begin()->second);
      m_by_pos.erase(m_by_pos.begin());
    }
  }

  /** Forgets everything (RESET BINARY LOGS AND GTIDS); returns how many. */
  std::size_t clear() {
    const std::size_t n = m_by_session.size();
    m_by_session.clear();
    m_by_pos.clear();
    return n;
  }

  std::size_t size() const { return m_by_session.size(); }
  bool empty() const { return m_by_session.empty(); }

 private:
  std::multimap<Pos, std::uint32_t> m_by_pos;
  std::unordered_map<std::uint32_t, std::multimap<Pos, std::uint32_t>::iterator>
      m_by_session;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_SESSIONS_H
