/* Strata strong sync: the commits that wait for acknowledgement.

   Pure logic, no MySQL headers (tests/waiters_test.cc, which also measures
   an ack's cost with 10, 1,000 and 4,000 waiters). The source keeps one
   WaiterQueue under its mutex. See docs/design/strong-sync.md, section 5a.

   Why two orders: an ack wakes the waiters its quorum covers, which are a
   prefix in binary log order; the policy's timeout releases the waiters
   that waited longest, a prefix in arrival order (every waiter has the same
   timeout, and arrival times come from one steady clock under one mutex,
   so arrival order is deadline order). With both orders kept, an ack and
   a timeout check cost a look at the waiters they release plus one, never
   a walk over every waiter under the source's mutex (thousands of parked
   sessions at AFTER_COMMIT on the thread pool).

   Ownership: a thread that waits owns its Waiter (on its stack); a parked
   session's Waiter is on the heap and whoever takes it out of the queue
   resumes the session and deletes it (Source::finish_parked). The queue
   only links them. Thread-safety: none here; the caller serialises. */
#ifndef STRATA_SYNC_WAITERS_H
#define STRATA_SYNC_WAITERS_H

#include <cassert>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <list>
#include <map>

#include "strata_sync_position.h"

namespace strata::sync {

struct Waiter {
  using Clock = std::chrono::steady_clock;
  Pos pos;
  Clock::time_point since;
  std::condition_variable cv;  // a thread's wait
  bool covered = false;
  /* A parked session: called once, by whoever takes it out, to hand the
     session back to the thread pool. */
  void (*resume)(void *arg) = nullptr;
  void *arg = nullptr;

  bool parked() const { return resume != nullptr; }

 private:
  friend class WaiterQueue;
  std::multimap<Pos, Waiter *>::iterator m_by_pos;
  std::list<Waiter *>::iterator m_by_age;
  bool m_queued = false;
};

class WaiterQueue {
 public:
  /** Queues w; w->pos and w->since are set, w->since no earlier than that
      of any waiter queued before. */
  void add(Waiter *w) {
    assert(!w->m_queued);
    std::list<Waiter *> &age = ages(w);
    assert(age.empty() || age.back()->since <= w->since);
    w->m_by_pos = m_by_pos.emplace(w->pos, w);
    w->m_by_age = age.insert(age.end(), w);
    w->m_queued = true;
  }

  /** Takes w out (no-op if it is not queued). */
  void remove(Waiter *w) {
    if (!w->m_queued) return;
    m_by_pos.erase(w->m_by_pos);
    ages(w).erase(w->m_by_age);
    w->m_queued = false;
  }

  /** Takes out every waiter at or before q, in binary log order, and calls
      f(w) for each after it left the queue. */
  template <class F>
  void take_covered(const Pos &q, F f) {
    while (!m_by_pos.empty() && m_by_pos.begin()->first <= q) {
      m_visits++;
      Waiter *w = m_by_pos.begin()->second;
      remove(w);
      f(w);
    }
    m_visits++;  // the first waiter not covered, or the empty end
  }

  /** The parked waiters, longest waiting first, while pred(w) holds: each is
      taken out and passed to f. Stops at the first for which pred is false
      (later arrivals have later deadlines). */
  template <class Pred, class F>
  void take_parked_while(Pred pred, F f) {
    while (!m_parked.empty()) {
      m_visits++;
      Waiter *w = m_parked.front();
      if (!pred(w)) return;
      remove(w);
      f(w);
    }
  }

  /** The waiter that waits longest (of threads or of parked sessions). */
  const Waiter *oldest() const {
    const Waiter *t = m_threads.empty() ? nullptr : m_threads.front();
    const Waiter *p = m_parked.empty() ? nullptr : m_parked.front();
    if (t == nullptr) return p;
    if (p == nullptr) return t;
    return p->since < t->since ? p : t;
  }

  const Waiter *oldest_parked() const {
    return m_parked.empty() ? nullptr : m_parked.front();
  }

  /** The first waiter in binary log order, or nullptr. */
  const Waiter *first() const {
    return m_by_pos.empty() ? nullptr : m_by_pos.begin()->second;
  }

  /** Every waiting thread (not parked sessions): to wake them all when
      settings change, which is rare. */
  template <class F>
  void for_each_thread(F f) const {
    for (Waiter *w : m_threads) f(w);
  }

  std::size_t size() const { return m_by_pos.size(); }
  bool empty() const { return m_by_pos.empty(); }

  /** Waiters looked at so far by take_covered and take_parked_while (a
      measure of work that does not depend on the machine's speed). */
  std::size_t visits() const { return m_visits; }

 private:
  std::list<Waiter *> &ages(const Waiter *w) {
    return w->parked() ? m_parked : m_threads;
  }

  std::multimap<Pos, Waiter *> m_by_pos;
  std::list<Waiter *> m_threads, m_parked;  // each in arrival order
  std::size_t m_visits = 0;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_WAITERS_H
