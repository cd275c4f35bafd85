// SegmentJournal: recovery of every kind of damaged file, rollover/sealing,
// group commit, and the ENOSPC / EIO paths.
#include <cerrno>
#include <thread>

#include "segment_journal.h"
#include "strata/logservice/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::logservice::storage {
namespace {

using FaultFs = FaultInjectionFileSystem;
const std::string kDir = "/node/log";

class Recorder final : public ReplayHandler {
 public:
  Status OnSegment(const SegmentHeader& h) override {
    segments.push_back(h.sequence);
    return Status::Ok();
  }
  Status OnRecord(const RecordHeader& h, std::string_view payload, const RecordLocation&) override {
    starts.push_back(h.start_lsn);
    payloads.emplace_back(payload);
    return Status::Ok();
  }
  std::vector<std::uint64_t> segments;
  std::vector<Lsn> starts;
  std::vector<std::string> payloads;
};

class SegmentJournalTest : public ::testing::Test {
 protected:
  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>(testing::TestSeed());
  testing::CapturingLog log;
  Recorder recorded;
  RecoveryReport report;

  Result<std::unique_ptr<SegmentJournal>> Open(std::uint64_t segment_bytes = 1 << 20) {
    recorded = Recorder();
    report = RecoveryReport();
    return SegmentJournal::Open(fs, kDir, JournalOptions{SegmentKind::kRedo, segment_bytes, 0, log.sink()},
                                &recorded, &report);
  }
  static Result<SegmentJournal::Appended> AppendRedo(SegmentJournal& j, Lsn start, const std::string& bytes) {
    RecordHeader h{RecordType::kRedo, static_cast<std::uint32_t>(bytes.size()), start, start + bytes.size(), 1};
    return j.Append({{h, bytes}});
  }
  std::string SegPath(std::uint64_t seq) { return JoinPath(kDir, SegmentFileName(seq)); }
  void TearDown() override { log.VerifyNoUnexpected(); }
};

TEST_F(SegmentJournalTest, NewJournalAppendsSyncsAndReplays) {
  {
    auto j = Open();
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    for (int i = 0; i < 10; ++i) ASSERT_TRUE(AppendRedo(**j, i * 10, std::string(10, 'a' + i)).ok());
    ASSERT_OK((*j)->SyncAll());
    EXPECT_EQ((*j)->synced_sequence(), 10u);
  }
  fs->SimulateCrash();
  auto j = Open();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(recorded.starts.size(), 10u);
  EXPECT_EQ(recorded.payloads[3], std::string(10, 'd'));
}

TEST_F(SegmentJournalTest, CrashBeforeSyncLosesOnlyUnsyncedRecords) {
  {
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "durable").ok());
    ASSERT_OK((*j)->SyncAll());
    ASSERT_TRUE(AppendRedo(**j, 7, "volatile").ok());
  }
  fs->SimulateCrash();
  auto j = Open();
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(recorded.payloads, std::vector<std::string>{"durable"});
}

TEST_F(SegmentJournalTest, TornTailOfNewestSegmentIsCutAndLogged) {
  log.Expect("cutting torn tail", "this test tears the tail on purpose");
  std::uint64_t full_size;
  {
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "one").ok());
    ASSERT_TRUE(AppendRedo(**j, 3, "two").ok());
    ASSERT_OK((*j)->SyncAll());
    full_size = fs->FileContents(SegPath(1))->size();
  }
  std::string bytes = *fs->FileContents(SegPath(1));
  ASSERT_OK(fs->OverwriteFile(SegPath(1), bytes.substr(0, bytes.size() - 2)));  // half-written last record
  auto j = Open();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(recorded.payloads, std::vector<std::string>{"one"});
  EXPECT_EQ(report.torn_tail_bytes_truncated, kRecordHeaderSize + 3 - 2);
  EXPECT_EQ(fs->FileContents(SegPath(1))->size(), full_size - (kRecordHeaderSize + 3));
  // Appends continue at the cut.
  ASSERT_TRUE(AppendRedo(**j, 3, "TWO").ok());
  ASSERT_OK((*j)->SyncAll());
  j->reset();
  auto again = Open();
  EXPECT_EQ(recorded.payloads, (std::vector<std::string>{"one", "TWO"}));
}

TEST_F(SegmentJournalTest, BadCrcInNewestSegmentIsCutNeverServed) {
  log.Expect("cutting torn tail", "the test flips a bit in the last record");
  {
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "first").ok());
    ASSERT_TRUE(AppendRedo(**j, 5, "second").ok());
    ASSERT_OK((*j)->SyncAll());
  }
  std::uint64_t size = fs->FileContents(SegPath(1))->size();
  ASSERT_OK(fs->FlipBit(SegPath(1), size - 1, 3));
  auto j = Open();
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(recorded.payloads, std::vector<std::string>{"first"});
  EXPECT_TRUE(log.Contains("CRC mismatch"));
}

TEST_F(SegmentJournalTest, RolloverSealsSegmentsAndDamageInASealedOneIsCorruption) {
  {
    auto j = Open(/*segment_bytes=*/200);
    for (int i = 0; i < 12; ++i) ASSERT_TRUE(AppendRedo(**j, i * 40, std::string(40, 'x')).ok());
    EXPECT_GT((*j)->segment_count(), 3u);
    EXPECT_GE((*j)->fdatasync_count(), (*j)->segment_count() - 1) << "each full segment is sealed";
    ASSERT_OK((*j)->SyncAll());
  }
  fs->SimulateCrash();
  {
    auto j = Open(200);
    ASSERT_TRUE(j.ok());
    EXPECT_EQ(recorded.starts.size(), 12u);
    EXPECT_EQ(recorded.segments.front(), 1u);
  }
  ASSERT_OK(fs->FlipBit(SegPath(2), kSegmentHeaderSize + 10, 0));
  auto j = Open(200);
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(j.status().is_data_loss()) << j.status().ToString();
  EXPECT_NE(j.status().message().find("rebuild"), std::string::npos);
}

TEST_F(SegmentJournalTest, TornHeaderOfNewestSegmentIsRemovedOlderIsCorruption) {
  log.Expect("torn header", "the test tears a segment header");
  {
    auto j = Open(200);
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(AppendRedo(**j, i * 40, std::string(40, 'x')).ok());
    ASSERT_OK((*j)->SyncAll());
  }
  auto count = (*fs->ListDir(kDir)).size();
  std::string newest = SegPath(count);
  ASSERT_OK(fs->OverwriteFile(newest, fs->FileContents(newest)->substr(0, 17)));
  {
    auto j = Open(200);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    EXPECT_EQ(report.torn_segments_removed, 1u);
    EXPECT_FALSE(*fs->Exists(newest));
  }
  ASSERT_OK(fs->OverwriteFile(SegPath(1), fs->FileContents(SegPath(1))->substr(0, 17)));
  auto j = Open(200);
  EXPECT_TRUE(j.status().is_data_loss()) << j.status().ToString();
}

TEST_F(SegmentJournalTest, MissingMiddleSegmentIsCorruption) {
  {
    auto j = Open(200);
    for (int i = 0; i < 12; ++i) ASSERT_TRUE(AppendRedo(**j, i * 40, std::string(40, 'x')).ok());
    ASSERT_OK((*j)->SyncAll());
  }
  ASSERT_OK(fs->Remove(SegPath(2)));
  auto j = Open(200);
  EXPECT_TRUE(j.status().is_data_loss());
  EXPECT_NE(j.status().message().find("missing"), std::string::npos);
}

TEST_F(SegmentJournalTest, NoSpaceIsRetryableAndLeavesNothingBehind) {
  auto j = Open();
  ASSERT_TRUE(AppendRedo(**j, 0, "before").ok());
  std::uint64_t size = fs->FileContents(SegPath(1))->size();
  fs->SetSpaceLimit(fs->used_bytes() + 20);  // room for half a record
  auto r = AppendRedo(**j, 6, std::string(100, 'z'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNoSpace);
  EXPECT_TRUE(r.status().retryable());
  EXPECT_EQ(fs->FileContents(SegPath(1))->size(), size) << "the partial write was undone";
  fs->SetSpaceLimit(std::nullopt);
  ASSERT_TRUE(AppendRedo(**j, 6, std::string(100, 'z')).ok());
  ASSERT_OK((*j)->SyncAll());
  j->reset();
  fs->SimulateCrash();
  auto again = Open();
  EXPECT_EQ(recorded.starts, (std::vector<Lsn>{0, 6}));
}

TEST_F(SegmentJournalTest, NoSpaceDuringRolloverIsRetryable) {
  auto j = Open(200);  // room for two 76-byte records per segment
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(AppendRedo(**j, i * 40, std::string(40, 'x')).ok());
  fs->FailOp(FaultFs::Op::kAppend, ENOSPC);  // the new segment's header
  auto r = AppendRedo(**j, 80, std::string(40, 'x'));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNoSpace) << r.status().ToString();
  EXPECT_EQ((*j)->segment_count(), 1u) << "the half-made segment was removed";
  ASSERT_TRUE(AppendRedo(**j, 80, std::string(40, 'x')).ok());
  EXPECT_EQ((*j)->segment_count(), 2u);
}

TEST_F(SegmentJournalTest, FailedSyncIsStickyUntilReopen) {
  log.Expect("journal stopped", "the test injects an fdatasync EIO");
  {
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "a").ok());
    fs->FailOp(FaultFs::Op::kSync, EIO);
    Status s = (*j)->SyncAll();
    EXPECT_EQ(s.code(), StatusCode::kNeedsRecovery) << s.ToString();
    EXPECT_EQ((*j)->synced_sequence(), 0u);
    EXPECT_EQ(AppendRedo(**j, 1, "b").status().code(), StatusCode::kNeedsRecovery);
    EXPECT_EQ((*j)->SyncAll().code(), StatusCode::kNeedsRecovery) << "a retried fdatasync cannot be trusted";
  }
  fs->SimulateCrash();
  auto j = Open();
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE(recorded.starts.empty());
}

TEST_F(SegmentJournalTest, WriteErrorOtherThanNoSpaceIsSticky) {
  log.Expect("journal stopped", "the test injects a write EIO");
  auto j = Open();
  fs->FailOp(FaultFs::Op::kAppend, EIO);
  EXPECT_EQ(AppendRedo(**j, 0, "a").status().code(), StatusCode::kNeedsRecovery);
  EXPECT_EQ(AppendRedo(**j, 0, "a").status().code(), StatusCode::kNeedsRecovery);
}

TEST_F(SegmentJournalTest, GroupCommitSharesFdatasyncs) {
  auto j = Open();
  std::uint64_t before = (*j)->fdatasync_count();
  constexpr int kThreads = 8, kPerThread = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto a = AppendRedo(**j, (t * kPerThread + i) * 8, "12345678");
        ASSERT_TRUE(a.ok());
        ASSERT_OK((*j)->SyncUpTo(a->sequence));
        ASSERT_GE((*j)->synced_sequence(), a->sequence);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::uint64_t syncs = (*j)->fdatasync_count() - before;
  EXPECT_LE(syncs, static_cast<std::uint64_t>(kThreads * kPerThread));
  EXPECT_EQ((*j)->synced_sequence(), static_cast<std::uint64_t>(kThreads * kPerThread));
  // Nothing pending: no fdatasync at all.
  ASSERT_OK((*j)->SyncAll());
  EXPECT_EQ((*j)->fdatasync_count() - before, syncs);
}

TEST_F(SegmentJournalTest, ReadChecksTheRecord) {
  auto j = Open();
  auto a = AppendRedo(**j, 100, "payload");
  ASSERT_TRUE(a.ok());
  RecordHeader h;
  std::string payload;
  ASSERT_OK((*j)->Read(a->where[0], &h, &payload));
  EXPECT_EQ(payload, "payload");
  ASSERT_OK(fs->FlipBit(SegPath(1), a->where[0].offset + kRecordHeaderSize + 2, 1));
  EXPECT_TRUE((*j)->Read(a->where[0], &h, &payload).is_data_loss());
  EXPECT_TRUE((*j)->Read(RecordLocation{99, 0, 1}, &h, &payload).is_not_found());
}

}  // namespace
}  // namespace strata::logservice::storage
