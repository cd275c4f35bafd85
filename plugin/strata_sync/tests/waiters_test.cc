// Unit tests of the waiter queue (strata_sync_waiters.h) and a measurement of
// what one ack costs the source under its mutex with 10, 1,000 and 4,000
// waiting sessions: the waiters and pending sessions it covers plus one,
// never a walk over all of them. The work is counted (machine independent)
// and timed (printed; the growth is checked with a wide margin).
#include "strata_sync_ack_ledger.h"
#include "strata_sync_sessions.h"
#include "strata_sync_waiters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <set>
#include <vector>

using strata::sync::AckLedger;
using strata::sync::PendingCommits;
using strata::sync::Pos;
using strata::sync::Waiter;
using strata::sync::WaiterQueue;
using Clock = std::chrono::steady_clock;

namespace {

Pos at(std::uint64_t pos) { return Pos{"binlog.000001", pos}; }

void resume_noop(void *) {}

}  // namespace

TEST(StrataSyncWaiters, CoveredPrefixInLogOrder) {
  WaiterQueue q;
  const auto t = Clock::now();
  Waiter a, b, c;
  a.pos = at(300), a.since = t;
  b.pos = at(100), b.since = t;
  c.pos = at(200), c.since = t;
  for (Waiter *w : {&a, &b, &c}) q.add(w);
  std::vector<std::uint64_t> taken;
  q.take_covered(at(250), [&](Waiter *w) { taken.push_back(w->pos.pos); });
  EXPECT_EQ(taken, (std::vector<std::uint64_t>{100, 200}));
  EXPECT_EQ(q.size(), 1u);
  EXPECT_EQ(q.first(), &a);
  q.remove(&a);
  q.remove(&a);  // not queued any more: no-op
  EXPECT_TRUE(q.empty());
}

// Parked sessions leave by age: the scan stops at the first whose deadline
// has not come, and threads are never handed out as parked.
TEST(StrataSyncWaiters, ParkedLeaveLongestWaitingFirst) {
  WaiterQueue q;
  const auto t0 = Clock::now();
  Waiter thread_w, p1, p2, p3;
  thread_w.pos = at(50), thread_w.since = t0;
  p1.pos = at(300), p1.since = t0 + std::chrono::milliseconds(1);
  p2.pos = at(100), p2.since = t0 + std::chrono::milliseconds(2);
  p3.pos = at(200), p3.since = t0 + std::chrono::milliseconds(3);
  for (Waiter *w : {&p1, &p2, &p3}) w->resume = resume_noop;
  for (Waiter *w : {&thread_w, &p1, &p2, &p3}) q.add(w);
  EXPECT_EQ(q.oldest(), &thread_w);
  EXPECT_EQ(q.oldest_parked(), &p1);
  const auto deadline = t0 + std::chrono::milliseconds(2);
  std::vector<Waiter *> taken;
  const std::size_t before = q.visits();
  q.take_parked_while([&](const Waiter *w) { return w->since <= deadline; },
                      [&](Waiter *w) { taken.push_back(w); });
  EXPECT_EQ(taken, (std::vector<Waiter *>{&p1, &p2}));
  EXPECT_EQ(q.visits() - before, 3u);  // two taken, one looked at
  EXPECT_EQ(q.size(), 2u);
  int threads = 0;
  q.for_each_thread([&](Waiter *) { threads++; });
  EXPECT_EQ(threads, 1);
}

// The old map of pending AFTER_COMMIT sessions dropped covered entries by
// walking all of them on every quorum move; this checks the cost per ack
// does not grow with the number of sessions (public API only).
TEST(StrataSyncWaiters, PendingSessionsAckCostIsFlat) {
  const auto per_ack_ns = [](std::size_t sessions) {
    PendingCommits s;
    std::uint64_t next = 1;
    for (std::size_t i = 0; i < sessions; i++, next++)
      s.record(static_cast<std::uint32_t>(next), at(next * 10));
    std::vector<double> runs;
    for (int run = 0; run < 5; run++) {
      const int acks = 4000;
      const auto t = Clock::now();
      for (int i = 0; i < acks; i++, next++) {
        // The ack covers the oldest session's commit; a new one commits.
        s.forget_covered(at((next - sessions) * 10));
        s.record(static_cast<std::uint32_t>(next), at(next * 10));
      }
      runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t)
                         .count() /
                     acks);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
  };
  const double small = per_ack_ns(10), large = per_ack_ns(4000);
  std::printf("pending sessions: 10: %.0f ns/ack, 4000: %.0f ns/ack\n", small,
              large);
  EXPECT_LT(large, 10 * small);
}

namespace {

/* One source with one replica and `n` parked sessions, each waiting for its
   own commit group. An ack confirms the oldest group: the quorum moves past
   it, its waiter is resumed, its session forgotten, the parked sessions'
   deadlines checked; then a new session commits and parks, so n stays. */
struct AckBench {
  explicit AckBench(std::size_t n) {
    const auto t = Clock::now();
    for (std::size_t i = 0; i < n; i++) commit(t);
  }

  void commit(Clock::time_point now) {
    const Pos p = at(next++ * 100);
    ledger.add_point(p);
    ledger.sent(replica, p);
    auto w = std::make_unique<Waiter>();
    w->pos = p;
    w->since = now;
    w->resume = resume_noop;
    sessions.record(static_cast<std::uint32_t>(next), p);
    queue.add(w.get());
    owned.push_back(std::move(w));
  }

  void ack() {
    const Pos first = *ledger.points().begin();
    ASSERT_EQ(ledger.confirm(replica, first), 1u);
    const auto q = ledger.advance(1, &quorum_visits);
    ASSERT_TRUE(q.has_value());
    queue.take_covered(*q, [](Waiter *w) { w->resume(w->arg); });
    sessions.forget_covered(*q);
    const auto now = Clock::now();
    queue.take_parked_while(
        [&](const Waiter *w) {
          return now >= w->since + std::chrono::hours(1);
        },
        [](Waiter *) {});
    owned.pop_front();
    commit(now);
  }

  AckLedger ledger;
  AckLedger::ServerId replica = ledger.server({"uuid-1", 2});
  WaiterQueue queue;
  PendingCommits sessions;
  std::deque<std::unique_ptr<Waiter>> owned;
  std::uint64_t next = 1;
  std::size_t quorum_visits = 0;
};

}  // namespace

TEST(StrataSyncWaiters, AckCostWithThousandsOfParkedSessions) {
  std::vector<double> ns;
  for (std::size_t n : {10u, 1000u, 4000u}) {
    AckBench b(n);
    const std::size_t visits0 = b.queue.visits();
    std::vector<double> runs;
    const int acks = 2000;
    for (int run = 0; run < 5; run++) {
      const auto t = Clock::now();
      for (int i = 0; i < acks; i++) b.ack();
      runs.push_back(std::chrono::duration<double, std::nano>(Clock::now() - t)
                         .count() /
                     acks);
    }
    std::sort(runs.begin(), runs.end());
    ns.push_back(runs[runs.size() / 2]);
    const double visits_per_ack =
        double(b.queue.visits() - visits0) / (5 * acks);
    const double quorum_per_ack = double(b.quorum_visits) / (5 * acks);
    std::printf(
        "parked sessions %5zu: %6.0f ns/ack (median of 5 x %d), waiters "
        "looked at per ack %.2f, ack points %.2f\n",
        n, ns.back(), acks, visits_per_ack, quorum_per_ack);
    // One covered waiter, the first one not covered, the oldest parked one.
    EXPECT_LE(visits_per_ack, 3.0);
    // The point the ack covers and the next, which it does not.
    EXPECT_LE(quorum_per_ack, 2.0);
    EXPECT_EQ(b.queue.size(), n);
  }
  // Logarithmic at most: an ack at 4,000 waiters costs a small multiple of
  // one at 10 (a walk over every waiter would cost hundreds of times more).
  EXPECT_LT(ns[2], 10 * ns[0]);
}
