// Crash consistency and disk-full behaviour of LogStore.
//
// The sweep test runs one workload (appends, group commits, a segment
// rollover, TruncateAfter, ReleaseBelow) and crashes it after every possible
// number of file-system mutations, in each crash mode, then reopens and
// checks: nothing acknowledged is lost, every byte served is exactly what was
// written at that LSN by that epoch, a completed TruncateAfter stays done,
// and the frontiers are ordered.
#include <cerrno>

#include "storage/fault_injection_file_system.h"
#include "storage/log_store.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;
const std::string kDir = "/node/redo";

char ByteAt(Lsn lsn, Epoch epoch) { return static_cast<char>('A' + (lsn * 7 + epoch * 13) % 26); }
std::string Redo(Lsn start, std::size_t n, Epoch epoch) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(ByteAt(start + i, epoch));
  return out;
}

LogStoreOptions Options(testing::CapturingLog& log, std::uint64_t segment_bytes = 300) {
  LogStoreOptions o;
  o.segment_bytes = segment_bytes;
  o.initial_lsn = 1000;
  o.log = log.sink();
  return o;
}

// What the workload got acknowledged before the crash.
struct Acked {
  Lsn durable = 1000;         // durable_lsn after the last successful Sync/TruncateAfter
  Lsn truncated_at = 0;       // a TruncateAfter that returned OK (0 = none)
  Lsn truncate_in_flight = 0; // a TruncateAfter that had started when the crash hit
};

// Runs until the first error (the crash point). Returns whether it finished.
bool RunWorkload(LogStore& store, Acked& acked) {
  Lsn lsn = 1000;
  auto append = [&](Epoch epoch, std::size_t n) {
    bool ok = store.Append(lsn, epoch, Redo(lsn, n, epoch)).ok();
    lsn += n;
    return ok;
  };
  auto sync = [&] {
    if (!store.Sync().ok()) return false;
    acked.durable = store.frontier().durable_lsn;
    return true;
  };
  for (int i = 0; i < 6; ++i) {
    if (!append(1, 40)) return false;
    if (i % 2 == 1 && !sync()) return false;
  }
  for (int i = 0; i < 3; ++i) {
    if (!append(1, 40)) return false;  // never synced by the workload itself
  }
  const Lsn cut = 1000 + 40 * 5;
  acked.truncate_in_flight = cut;
  if (!store.TruncateAfter(cut, 2).ok()) return false;
  acked.truncate_in_flight = 0;
  acked.truncated_at = cut;
  acked.durable = store.frontier().durable_lsn;
  lsn = cut;
  for (int i = 0; i < 4; ++i) {
    if (!append(2, 40)) return false;
  }
  if (!sync()) return false;
  if (!store.ReleaseBelow(1080).ok()) return false;
  for (int i = 0; i < 3; ++i) {
    if (!append(2, 40)) return false;
  }
  return sync();
}

void VerifyRecovered(LogStore& store, const Acked& acked, const std::string& where) {
  SCOPED_TRACE(where);
  LogFrontier f = store.frontier();
  EXPECT_LE(f.released_lsn, f.durable_lsn);
  EXPECT_LE(f.durable_lsn, f.complete_lsn);
  EXPECT_LE(f.complete_lsn, f.highest_lsn);
  EXPECT_EQ(f.durable_lsn, f.complete_lsn) << "after Open everything recovered is durable";
  Lsn must_have = acked.durable;
  if (acked.truncate_in_flight != 0) must_have = std::min(must_have, acked.truncate_in_flight);
  EXPECT_GE(f.durable_lsn, must_have) << "acknowledged redo was lost";
  auto read = store.Read(f.released_lsn, 1 << 20);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  Lsn at = f.released_lsn;
  for (const auto& range : *read) {
    ASSERT_EQ(range.start_lsn, at);
    for (std::size_t i = 0; i < range.bytes.size(); ++i)
      ASSERT_EQ(range.bytes[i], ByteAt(at + i, range.epoch)) << "wrong byte at LSN " << at + i;
    if (acked.truncated_at != 0 && range.epoch == 1) {
      EXPECT_LE(range.end_lsn(), acked.truncated_at) << "a completed TruncateAfter came undone";
    }
    at = range.end_lsn();
  }
  EXPECT_EQ(at, f.durable_lsn);
}

// Reopens after a crash. A crash that tears the last sector of a record
// written in full length looks exactly like bit rot in a synced one, so Open
// may refuse it (the rule in segment_journal.cc). Then this plays the node:
// its peers would confirm those LSNs, so it reopens with permission to cut
// there. The caller's VerifyRecovered then proves the cut record had not
// been acknowledged.
Result<std::unique_ptr<LogStore>> OpenAfterCrash(std::shared_ptr<FaultFs> fs, testing::CapturingLog& log,
                                                 std::uint64_t segment_bytes) {
  RecoveryReport report;
  auto store = LogStore::Open(fs, kDir, Options(log, segment_bytes), &report);
  if (store.ok() || !store.status().is_data_loss()) return store;
  EXPECT_TRUE(report.damage.has_value()) << store.status().ToString();
  if (!report.damage) return store;
  EXPECT_FALSE(report.damage->sealed) << "a crash damaged a sealed segment: " << store.status().ToString();
  LogStoreOptions o = Options(log, segment_bytes);
  o.cut_damaged_tail = report.damage;
  RecoveryReport healed;
  store = LogStore::Open(fs, kDir, o, &healed);
  EXPECT_GT(healed.damaged_tail_bytes_cut, 0u);
  return store;
}

void AllowCrashLogLines(testing::CapturingLog& log) {
  log.Expect("cutting torn tail", "torn writes are the point of this test");
  log.Expect("refusing to open", "a torn last sector of a full-length record looks like bit rot (by design)");
  log.Expect("cutting damaged tail", "the test then plays the node that confirmed those LSNs with its peers");
}

TEST(LogStoreCrash, CrashAtEveryMutationPointKeepsAcknowledgedData) {
  const FaultFs::CrashMode modes[] = {FaultFs::CrashMode::kDropUnsynced, FaultFs::CrashMode::kTornUnsynced,
                                      FaultFs::CrashMode::kProcessOnly};
  const std::uint64_t seed = testing::TestSeed(3);
  for (const auto mode : modes) {
    int crash_points = 0;
    for (int n = 0;; ++n) {
      const std::string where = "crash after " + std::to_string(n) + " mutations, mode " +
                                std::to_string(static_cast<int>(mode));
      testing::CapturingLog log;
      AllowCrashLogLines(log);
      log.Expect("torn header", "a crash while creating a segment");
      log.Expect("journal stopped", "the simulated crash fails I/O calls");
      auto fs = std::make_shared<FaultFs>(seed + n);
      Acked acked;
      bool finished;
      {
        auto store = LogStore::Open(fs, kDir, Options(log));
        ASSERT_TRUE(store.ok()) << store.status().ToString();
        fs->CrashAfterMutations(n);
        finished = RunWorkload(**store, acked);
        EXPECT_EQ(finished, !fs->crash_point_reached()) << where;
      }
      fs->SimulateCrash(mode);
      auto store = OpenAfterCrash(fs, log, 300);
      ASSERT_TRUE(store.ok()) << where << ": " << store.status().ToString();
      VerifyRecovered(**store, acked, where);
      log.VerifyNoUnexpected();
      if (HasFatalFailure() || finished) break;
      ++crash_points;
    }
    EXPECT_GT(crash_points, 20) << "the workload should cross many mutation points";
  }
}

TEST(LogStoreCrash, CrashBetweenWriteAndSyncLosesOnlyUnsyncedData) {
  testing::CapturingLog log;
  AllowCrashLogLines(log);
  std::mt19937_64 rng(testing::TestSeed(4));
  auto fs = std::make_shared<FaultFs>(rng());
  Lsn lsn = 1000;
  Lsn acked = 1000;
  for (int round = 0; round < 30; ++round) {
    auto store = LogStore::Open(fs, kDir, Options(log, 4096));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_GE((*store)->frontier().durable_lsn, acked);
    lsn = (*store)->frontier().durable_lsn;
    for (int i = 0, n = 1 + rng() % 8; i < n; ++i) {
      std::size_t len = 1 + rng() % 300;
      ASSERT_TRUE((*store)->Append(lsn, 1, Redo(lsn, len, 1)).ok());
      lsn += len;
      if (rng() % 3 == 0) {
        ASSERT_OK((*store)->Sync());
        acked = lsn;
      }
    }
    store->reset();
    fs->SimulateCrash(rng() % 2 ? FaultFs::CrashMode::kTornUnsynced : FaultFs::CrashMode::kDropUnsynced);
    auto reopened = OpenAfterCrash(fs, log, 4096);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    VerifyRecovered(**reopened, Acked{acked, 0, 0}, "round " + std::to_string(round));
    if (HasFatalFailure()) return;
  }
  log.VerifyNoUnexpected();
}

TEST(LogStoreCrash, DiskFullIsRetryableAndChangesNothing) {
  testing::CapturingLog log;
  auto fs = std::make_shared<FaultFs>(testing::TestSeed(5));
  auto opened = LogStore::Open(fs, kDir, Options(log, 1024));
  ASSERT_TRUE(opened.ok());
  LogStore& store = **opened;
  Lsn lsn = 1000;
  for (int i = 0; i < 20; ++i, lsn += 100) ASSERT_TRUE(store.Append(lsn, 1, Redo(lsn, 100, 1)).ok());
  ASSERT_OK(store.Sync());
  const LogFrontier before = store.frontier();
  fs->SetSpaceLimit(fs->used_bytes() + 50);  // the disk is (almost) full

  auto full = store.Append(lsn, 1, Redo(lsn, 100, 1));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kNoSpace) << full.status().ToString();
  EXPECT_TRUE(full.status().retryable());
  const LogFrontier after = store.frontier();
  EXPECT_EQ(after.highest_lsn, before.highest_lsn) << "nothing half-visible";
  EXPECT_EQ(after.complete_lsn, before.complete_lsn);
  EXPECT_EQ(after.durable_lsn, before.durable_lsn);
  ASSERT_OK(store.Sync());
  EXPECT_EQ(store.frontier().durable_lsn, before.durable_lsn) << "the frontier does not move";

  // Releasing old redo frees whole segments; the retry then succeeds.
  ASSERT_OK(store.ReleaseBelow(lsn - 100));
  auto retried = store.Append(lsn, 1, Redo(lsn, 100, 1));
  ASSERT_TRUE(retried.ok()) << retried.status().ToString();
  ASSERT_OK(store.SyncUpTo(*retried));
  EXPECT_EQ(store.frontier().durable_lsn, lsn + 100);
  opened->reset();
  fs->SimulateCrash();
  auto reopened = LogStore::Open(fs, kDir, Options(log, 1024));
  ASSERT_TRUE(reopened.ok());
  VerifyRecovered(**reopened, Acked{lsn + 100, 0, 0}, "after disk full");
  log.VerifyNoUnexpected();
}

TEST(LogStoreCrash, FailedFdatasyncStopsTheStoreAndReopenRecovers) {
  testing::CapturingLog log;
  log.Expect("journal stopped", "the test injects an fdatasync EIO");
  auto fs = std::make_shared<FaultFs>(testing::TestSeed(6));
  {
    auto store = LogStore::Open(fs, kDir, Options(log));
    ASSERT_TRUE((*store)->Append(1000, 1, Redo(1000, 10, 1)).ok());
    ASSERT_OK((*store)->Sync());
    ASSERT_TRUE((*store)->Append(1010, 1, Redo(1010, 10, 1)).ok());
    fs->FailOp(FaultFs::Op::kSync, EIO);
    EXPECT_EQ((*store)->Sync().code(), StatusCode::kNeedsRecovery);
    EXPECT_EQ((*store)->frontier().durable_lsn, 1010u) << "the frontier did not move";
    EXPECT_EQ((*store)->Append(1020, 1, "x").status().code(), StatusCode::kNeedsRecovery);
  }
  fs->SimulateCrash();
  auto store = LogStore::Open(fs, kDir, Options(log));
  ASSERT_TRUE(store.ok());
  VerifyRecovered(**store, Acked{1010, 0, 0}, "after EIO");
  log.VerifyNoUnexpected();
}

TEST(LogStoreCrash, TruncateAfterThatDidNotCompleteLeavesTheOldState) {
  testing::CapturingLog log;
  log.Expect("journal stopped", "the test injects an fdatasync EIO");
  auto fs = std::make_shared<FaultFs>(testing::TestSeed(7));
  {
    auto store = LogStore::Open(fs, kDir, Options(log));
    ASSERT_TRUE((*store)->Append(1000, 1, Redo(1000, 100, 1)).ok());
    ASSERT_OK((*store)->Sync());
    fs->FailOp(FaultFs::Op::kSync, EIO);
    EXPECT_FALSE((*store)->TruncateAfter(1050, 2).ok());
  }
  fs->SimulateCrash();
  auto store = LogStore::Open(fs, kDir, Options(log));
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->frontier().durable_lsn, 1100u) << "the truncation record never reached the disk";
  ASSERT_OK((*store)->TruncateAfter(1050, 2));  // quorum recovery retries
  (*store).reset();
  fs->SimulateCrash();
  store = LogStore::Open(fs, kDir, Options(log));
  EXPECT_EQ((*store)->frontier().durable_lsn, 1050u);
  EXPECT_EQ((*store)->frontier().max_epoch, 2u);
  log.VerifyNoUnexpected();
}

}  // namespace
}  // namespace strata::logservice
