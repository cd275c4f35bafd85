// LogIndex rules without any I/O: gaps, duplicates, epochs, fences,
// truncation, release, and the durable frontier; plus a randomized run that
// checks the invariants after every operation.
#include <random>

#include "log_index.h"
#include "test_support.h"

namespace strata::logservice::storage {
namespace {

// Inserts [start, end) the way LogStore does; returns the status of the plan.
Status Add(LogIndex& ix, Lsn start, Lsn end, Epoch epoch, std::uint64_t seq, std::uint64_t segment = 1) {
  std::vector<std::pair<Lsn, Lsn>> missing;
  Status s = ix.PlanAppend(start, end, epoch, &missing);
  if (!s.ok()) return s;
  for (auto [a, b] : missing) ix.Insert(Extent{a, b, epoch, RecordLocation{segment, a, 0}, a, seq});
  return Status::Ok();
}

TEST(LogIndex, GapFreePrefixIsTrackedSeparatelyFromHighest) {
  LogIndex ix;
  ASSERT_OK(Add(ix, 0, 100, 1, 1));
  ASSERT_OK(Add(ix, 200, 300, 1, 2));  // gap [100, 200)
  EXPECT_EQ(ix.complete(), 100u);
  EXPECT_EQ(ix.highest(), 300u);
  EXPECT_EQ(ix.durable(), 0u) << "nothing synced yet";
  ix.OnSynced(2);
  EXPECT_EQ(ix.durable(), 100u) << "durable stops at the gap";
  ASSERT_OK(Add(ix, 100, 200, 1, 3));  // the gap is filled, but not synced
  EXPECT_EQ(ix.complete(), 300u);
  EXPECT_EQ(ix.durable(), 100u) << "durable never passes unsynced data";
  ix.OnSynced(3);
  EXPECT_EQ(ix.durable(), 300u);
  auto run = ix.Covering(50, 300, 1000);
  ASSERT_EQ(run.size(), 3u);
  EXPECT_TRUE(ix.Covering(300, 300, 10).empty());
  EXPECT_EQ(ix.CheckInvariants(), "");
}

TEST(LogIndex, DuplicatesAndPartialOverlapsStoreOnlyNewBytes) {
  LogIndex ix;
  ASSERT_OK(Add(ix, 100, 200, 1, 1));
  std::vector<std::pair<Lsn, Lsn>> missing;
  ASSERT_OK(ix.PlanAppend(100, 200, 1, &missing));
  EXPECT_TRUE(missing.empty());
  ASSERT_OK(ix.PlanAppend(50, 250, 1, &missing));
  EXPECT_EQ(missing, (std::vector<std::pair<Lsn, Lsn>>{{50, 100}, {200, 250}}));
}

TEST(LogIndex, EpochRules) {
  LogIndex ix;
  ASSERT_OK(Add(ix, 0, 100, 2, 1));
  ASSERT_OK(Add(ix, 300, 400, 4, 2));
  // A stale writer appending after newer data, or overlapping it.
  EXPECT_EQ(Add(ix, 100, 150, 1, 3).code(), StatusCode::kStaleEpoch);
  EXPECT_EQ(Add(ix, 50, 150, 1, 3).code(), StatusCode::kStaleEpoch);
  // A newer epoch overlapping older data must truncate first.
  EXPECT_EQ(Add(ix, 50, 150, 3, 3).code(), StatusCode::kConflict);
  // A newer epoch below older data at a higher LSN: that data is a stale suffix.
  EXPECT_EQ(Add(ix, 400, 450, 3, 3).code(), StatusCode::kStaleEpoch);
  EXPECT_EQ(Add(ix, 200, 250, 5, 3).code(), StatusCode::kConflict);
  // In between and monotone: fine (gap filling with the original epoch).
  ASSERT_OK(Add(ix, 100, 300, 3, 3));
  EXPECT_EQ(ix.complete(), 400u);
  EXPECT_EQ(ix.max_epoch(), 4u);
  EXPECT_EQ(ix.CheckInvariants(), "");
}

TEST(LogIndex, TruncateAfterCutsAndFences) {
  LogIndex ix;
  ASSERT_OK(Add(ix, 0, 100, 1, 1, /*segment=*/1));
  ASSERT_OK(Add(ix, 100, 200, 1, 2, /*segment=*/2));
  ix.OnSynced(2);
  ASSERT_OK(ix.CheckTruncate(150, 2));
  ix.TruncateAfter(150, 2, /*segment=*/3);
  EXPECT_EQ(ix.complete(), 150u);
  EXPECT_EQ(ix.durable(), 150u);
  EXPECT_EQ(ix.highest(), 150u);
  EXPECT_TRUE(ix.SegmentInUse(3)) << "the fence pins its segment";
  // The fence rejects the old writer at and above 150, not below.
  EXPECT_EQ(Add(ix, 150, 160, 1, 3).code(), StatusCode::kStaleEpoch);
  EXPECT_EQ(Add(ix, 140, 160, 1, 3).code(), StatusCode::kStaleEpoch);
  ASSERT_OK(Add(ix, 150, 160, 2, 3));
  // Truncation rules.
  EXPECT_EQ(ix.CheckTruncate(155, 1).code(), StatusCode::kStaleEpoch) << "below an earlier fence epoch";
  ix.Release(50);
  EXPECT_EQ(ix.CheckTruncate(40, 3).code(), StatusCode::kInvalidArgument) << "below released";
  ASSERT_OK(ix.CheckTruncate(100, 3));
  EXPECT_EQ(ix.CheckInvariants(), "");
}

TEST(LogIndex, ReleaseTrimsAndFreesSegments) {
  LogIndex ix;
  ASSERT_OK(Add(ix, 0, 100, 1, 1, 1));
  ASSERT_OK(Add(ix, 100, 200, 1, 1, 2));
  ix.OnSynced(1);
  EXPECT_EQ(ix.CheckRelease(250).code(), StatusCode::kInvalidArgument);
  ASSERT_OK(ix.CheckRelease(150));
  ix.Release(150);
  EXPECT_EQ(ix.base(), 150u);
  EXPECT_FALSE(ix.SegmentInUse(1));
  EXPECT_TRUE(ix.SegmentInUse(2));
  auto run = ix.Covering(150, 200, 100);
  ASSERT_EQ(run.size(), 1u);
  EXPECT_EQ(run[0].start, 150u);
  EXPECT_EQ(run[0].record_start, 100u) << "trimmed extent still knows its record";
  std::vector<std::pair<Lsn, Lsn>> missing;
  ASSERT_OK(ix.PlanAppend(0, 120, 1, &missing));
  EXPECT_TRUE(missing.empty()) << "released bytes are not stored again";
  EXPECT_EQ(ix.CheckInvariants(), "");
}

TEST(LogIndex, RandomOperationsKeepInvariants) {
  std::mt19937_64 rng(testing::TestSeed(7));
  LogIndex ix;
  Epoch epoch = 1;
  std::uint64_t seq = 0;
  for (int step = 0; step < 5000; ++step) {
    int op = static_cast<int>(rng() % 10);
    Lsn a = ix.base() + rng() % 2000;
    if (op < 7) {
      ++seq;
      Add(ix, a, a + 1 + rng() % 200, epoch - (rng() % 3 == 0 ? 1 : 0), seq, 1 + seq / 50).IgnoreError();
    } else if (op == 7) {
      ix.OnSynced(seq - rng() % 3);
    } else if (op == 8) {
      if (ix.CheckTruncate(a, epoch + 1).ok()) ix.TruncateAfter(a, ++epoch, 1 + seq / 50);
    } else if (ix.CheckRelease(std::min(a, ix.complete())).ok()) {
      ix.Release(std::min(a, ix.complete()));
    }
    std::string broken = ix.CheckInvariants();
    ASSERT_EQ(broken, "") << "after step " << step;
  }
}

}  // namespace
}  // namespace strata::logservice::storage
