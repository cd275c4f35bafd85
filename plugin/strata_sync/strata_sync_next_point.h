/* Strata strong sync: which events a dump thread flags for an ack, decided
   without the source's mutex for the events that cannot be one (four of the
   five events of a one-row transaction, nearly all of a large group).

   The source registers an ack point (the end of a commit group) in its
   after_flush hook, which runs in binary log order and before the group's
   end is published to dump threads. So once a dump thread has looked up the
   first point at or after an event it sends, no point can appear between
   that event and the point it found: points registered later lie after
   both. Every event before the remembered point is therefore not flagged.
   A remembered point erased meanwhile (an ack covered it) is still
   flagged, which asks for one ack more than needed. RESET BINARY LOGS
   starts positions over, so the source bumps a generation that makes every
   dump thread look up again. A new dump starts with a fresh one (its OS
   thread may have served another dump, further on): an ack point left
   unflagged counts as not sent to that replica (strata_sync_ack_ledger.h).
   Pure logic: tests/next_point_test.cc. */
#ifndef STRATA_SYNC_NEXT_POINT_H
#define STRATA_SYNC_NEXT_POINT_H

#include <cstdint>
#include <set>

#include "strata_sync_position.h"

namespace strata::sync {

class NextAckPoint {
 public:
  /** True if p is certainly no ack point: it lies before the point this
      thread last found, in the same generation of points. */
  bool before(const Pos &p, std::uint64_t generation) const {
    return m_known && m_generation == generation && p < m_next;
  }

  /** Under the lock that guards points: true if p is an ack point.
      Remembers the first point after p for before(). */
  bool lookup(const std::set<Pos> &points, const Pos &p,
              std::uint64_t generation) {
    auto it = points.lower_bound(p);
    const bool is_point = it != points.end() && !(p < *it);
    if (is_point) ++it;
    m_generation = generation;
    m_known = it != points.end();
    if (m_known) m_next = *it;
    return is_point;
  }

 private:
  bool m_known = false;
  std::uint64_t m_generation = 0;
  Pos m_next;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_NEXT_POINT_H
