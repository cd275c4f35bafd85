#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "record_ring.h"

using strata_audit::RecordRing;
using Status = RecordRing::Status;

namespace {

// Reserves and publishes text (its length does not depend on the id).
Status put(RecordRing &r, const std::string &text, uint64_t *id = nullptr) {
  RecordRing::Reservation res;
  size_t need = 0;
  const Status st =
      r.reserve([&](uint64_t) { return text.size(); }, false, &res, &need);
  if (st != Status::kOk) return st;
  r.copy(res, 0, text);
  r.publish(res);
  if (id) *id = res.id;
  return st;
}

std::string take(RecordRing &r, uint64_t *records = nullptr) {
  const RecordRing::Batch b = r.peek();
  std::string s = std::string(b.a) + std::string(b.b);
  if (records) *records = b.records;
  r.consume(b);
  return s;
}

}  // namespace

TEST(RecordRing, ReserveCopyPublishTake) {
  RecordRing r(256);
  r.reset(7);
  uint64_t id = 0;
  ASSERT_EQ(put(r, "hello\n", &id), Status::kOk);
  EXPECT_EQ(id, 7u);
  ASSERT_EQ(put(r, "world\n", &id), Status::kOk);
  EXPECT_EQ(id, 8u);
  EXPECT_EQ(r.next_id(), 9u);
  EXPECT_EQ(r.used(), 12u);
  uint64_t n = 0;
  EXPECT_EQ(take(r, &n), "hello\nworld\n");
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(r.consumed_id(), 9u);
  EXPECT_EQ(r.used(), 0u);
  EXPECT_EQ(take(r, &n), "");
  EXPECT_EQ(n, 0u);
}

TEST(RecordRing, TheWriterStopsAtTheFirstRecordStillBeingCopied) {
  RecordRing r(256);
  RecordRing::Reservation a, b, c;
  size_t need;
  auto len = [](size_t n) { return [n](uint64_t) { return n; }; };
  ASSERT_EQ(r.reserve(len(2), false, &a, &need), Status::kOk);
  ASSERT_EQ(r.reserve(len(2), false, &b, &need), Status::kOk);
  ASSERT_EQ(r.reserve(len(2), false, &c, &need), Status::kOk);
  EXPECT_EQ(b.pos, a.pos + 2);  // bytes in id order
  r.copy(b, 0, "b\n");
  r.publish(b);
  r.copy(c, 0, "c\n");
  r.publish(c);
  EXPECT_EQ(take(r), "");  // a not published: nothing, though b and c are
  r.copy(a, 0, "a\n");
  r.publish(a);
  uint64_t n = 0;
  EXPECT_EQ(take(r, &n), "a\nb\nc\n");
  EXPECT_EQ(n, 3u);
}

TEST(RecordRing, WrapsAroundTheEnd) {
  RecordRing r(10);
  ASSERT_EQ(put(r, "abcdef\n"), Status::kOk);
  EXPECT_EQ(take(r), "abcdef\n");
  ASSERT_EQ(put(r, "123456\n"), Status::kOk);  // bytes 7..13: wraps at 10
  const RecordRing::Batch b = r.peek();
  EXPECT_EQ(std::string(b.a), "123");
  EXPECT_EQ(std::string(b.b), "456\n");
  r.consume(b);
  for (int i = 0; i < 100; ++i) {  // many laps, ids and positions keep going
    const std::string s = std::to_string(i % 10) + "xy\n";
    ASSERT_EQ(put(r, s), Status::kOk);
    ASSERT_EQ(take(r), s);
  }
  EXPECT_EQ(r.consumed_id(), 103u);
}

TEST(RecordRing, FullByBytesAndBySlotsAndTooBig) {
  RecordRing r(16);
  ASSERT_EQ(put(r, "0123456789\n"), Status::kOk);
  RecordRing::Reservation res;
  size_t need = 0;
  EXPECT_EQ(r.reserve([](uint64_t) { return size_t{6}; }, false, &res, &need),
            Status::kFull);
  EXPECT_EQ(need, 6u);
  EXPECT_FALSE(r.room_for(6));
  EXPECT_TRUE(r.room_for(5));
  ASSERT_EQ(put(r, "abcd\n"), Status::kOk);  // exact fit
  EXPECT_EQ(r.used(), 16u);
  take(r);
  EXPECT_TRUE(r.room_for(16));
  EXPECT_EQ(r.reserve([](uint64_t) { return size_t{17}; }, false, &res, &need),
            Status::kTooBig);

  RecordRing s(64);  // 64 slots: the 65th record in flight has no slot
  for (size_t i = 0; i < s.slot_count(); ++i) ASSERT_EQ(put(s, "\n"), Status::kOk);
  EXPECT_EQ(put(s, "\n"), Status::kFull);
  take(s);
  EXPECT_EQ(put(s, "\n"), Status::kOk);
}

TEST(RecordRing, TheLengthMayDependOnTheId) {
  RecordRing r(64);
  r.reset(98);
  for (int i = 0; i < 4; ++i) {
    RecordRing::Reservation res;
    size_t need;
    std::string text;
    ASSERT_EQ(r.reserve(
                  [&](uint64_t id) {
                    text = std::to_string(id) + "\n";
                    return text.size();
                  },
                  false, &res, &need),
              Status::kOk);
    r.copy(res, 0, text);
    r.publish(res);
  }
  EXPECT_EQ(take(r), "98\n99\n100\n101\n");
}

TEST(RecordRing, RecordsLongerThanTheRingGoByReferenceInOrder) {
  RecordRing r(16);
  ASSERT_EQ(put(r, "one\n"), Status::kOk);
  const std::string big(100, 'B');
  RecordRing::Reservation res;
  size_t need;
  ASSERT_EQ(r.reserve([&](uint64_t) { return big.size(); }, true, &res, &need),
            Status::kOk);
  EXPECT_TRUE(res.by_reference);
  r.publish(res, big.data());
  ASSERT_EQ(put(r, "two\n"), Status::kOk);
  RecordRing::Batch b = r.peek();
  EXPECT_FALSE(b.by_reference);
  EXPECT_EQ(std::string(b.a), "one\n");
  r.consume(b);
  b = r.peek();
  EXPECT_TRUE(b.by_reference);
  EXPECT_EQ(b.records, 1u);
  EXPECT_EQ(b.a, big);
  r.consume(b);
  EXPECT_GT(r.consumed_id(), res.id);
  EXPECT_EQ(take(r), "two\n");
}

TEST(RecordRing, NothingIsReservedAfterClose) {
  RecordRing r(64);
  ASSERT_EQ(put(r, "a\n"), Status::kOk);
  r.close();
  EXPECT_TRUE(r.closed());
  EXPECT_EQ(put(r, "b\n"), Status::kClosed);
  EXPECT_TRUE(r.room_for(1000));  // waiting for room is over
  EXPECT_EQ(take(r), "a\n");
  r.reset(1);
  EXPECT_FALSE(r.closed());
  EXPECT_EQ(put(r, "c\n"), Status::kOk);
}

// Producers with lengths that depend on the id, a small ring (many laps,
// full most of the time), one consumer: every record exactly once, whole,
// in id order, with the bytes its producer wrote for that id.
TEST(RecordRing, ManyProducersOneConsumer) {
  RecordRing r(512);
  constexpr int kThreads = 8;
  constexpr int kPer = 20000;
  std::atomic<int> done{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      std::string text;
      for (int i = 0; i < kPer; ++i) {
        RecordRing::Reservation res;
        size_t need;
        Status st;
        do {
          st = r.reserve(
              [&](uint64_t id) {
                text = std::to_string(id) + " " + std::to_string(t) + " " +
                       std::to_string(i) + std::string(i % 7, '.') + "\n";
                return text.size();
              },
              false, &res, &need);
          if (st == Status::kFull) std::this_thread::yield();
        } while (st != Status::kOk);
        r.copy(res, 0, text.substr(0, 3));  // in two parts
        r.copy(res, 3, text.substr(3));
        r.publish(res);
      }
      done.fetch_add(1);
    });
  }
  std::string pending;
  uint64_t expect_id = 1;
  std::vector<int> next_i(kThreads, 0);
  uint64_t total = 0;
  for (;;) {
    const bool last = done.load() == kThreads;
    uint64_t n = 0;
    pending += take(r, &n);
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      const std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      unsigned long long id;
      int t, i;
      ASSERT_EQ(std::sscanf(line.c_str(), "%llu %d %d", &id, &t, &i), 3) << line;
      ASSERT_EQ(id, expect_id);
      ASSERT_EQ(i, next_i[t]);  // each producer's records in its order
      ASSERT_EQ(line, std::to_string(id) + " " + std::to_string(t) + " " +
                          std::to_string(i) + std::string(i % 7, '.'));
      ++next_i[t];
      ++expect_id;
      ++total;
    }
    if (last && n == 0 && r.consumed_id() == r.next_id()) break;
    if (n == 0) std::this_thread::yield();
  }
  for (auto &t : ts) t.join();
  EXPECT_TRUE(pending.empty());
  EXPECT_EQ(total, uint64_t{kThreads} * kPer);
}
