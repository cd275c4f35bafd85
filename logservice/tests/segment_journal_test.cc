// SegmentJournal: recovery of every kind of damaged file, rollover/sealing,
// group commit, and the ENOSPC / EIO paths.
#include <cerrno>
#include <thread>

#include "segment_journal.h"
#include "storage/fault_injection_file_system.h"
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

  Result<std::unique_ptr<SegmentJournal>> Open(std::uint64_t segment_bytes = 1 << 20,
                                               std::optional<DamagedRecord> cut_damaged_tail = std::nullopt) {
    recorded = Recorder();
    report = RecoveryReport();
    return SegmentJournal::Open(
        fs, kDir,
        JournalOptions{SegmentKind::kRedo, segment_bytes, 0, log.sink(), std::move(cut_damaged_tail), std::nullopt},
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

TEST_F(SegmentJournalTest, ZerosAfterTheLastRecordAreATornTail) {
  log.Expect("cutting torn tail", "the test extends the file with zeros, as a crash before the data landed does");
  {
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "one").ok());
    ASSERT_TRUE(AppendRedo(**j, 3, "two").ok());
    ASSERT_OK((*j)->SyncAll());
  }
  std::string bytes = *fs->FileContents(SegPath(1));
  ASSERT_OK(fs->OverwriteFile(SegPath(1), bytes + std::string(100, '\0')));
  auto j = Open();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(recorded.payloads, (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(report.torn_tail_bytes_truncated, 100u);
  EXPECT_EQ(*fs->FileContents(SegPath(1)), bytes);
}

// Records "first" [0, 5) at offset 40, "second" [5, 11) at 81, "third"
// [11, 16) at 123, "fourth" [16, 22) at 164; the file ends at 206.
class DamagedNewestSegmentTest : public SegmentJournalTest {
 protected:
  void SetUp() override {
    log.Expect("refusing to open", "the test damages a record that had been synced");
    auto j = Open();
    ASSERT_TRUE(AppendRedo(**j, 0, "first").ok());
    ASSERT_TRUE(AppendRedo(**j, 5, "second").ok());
    ASSERT_TRUE(AppendRedo(**j, 11, "third").ok());
    ASSERT_TRUE(AppendRedo(**j, 16, "fourth").ok());
    ASSERT_OK((*j)->SyncAll());
  }
  // Opens the damaged journal, expecting a refusal that names the place and
  // leaves the file exactly as it was.
  Status OpenExpectingRefusal() {
    std::string before = *fs->FileContents(SegPath(1));
    auto j = Open();
    EXPECT_FALSE(j.ok()) << "damage was treated as a torn tail";
    if (j.ok()) return Status::Ok();
    EXPECT_TRUE(j.status().is_data_loss()) << j.status().ToString();
    EXPECT_NE(j.status().message().find(SegPath(1)), std::string::npos) << j.status().ToString();
    EXPECT_EQ(*fs->FileContents(SegPath(1)), before) << "nothing may be cut or rewritten";
    EXPECT_TRUE(log.Contains("refusing to open")) << "the refusal is logged";
    return j.status();
  }
};

TEST_F(DamagedNewestSegmentTest, BitRotBeforeValidRecordsIsCorruptionNotATornTail) {
  ASSERT_OK(fs->FlipBit(SegPath(1), 81 + kRecordHeaderSize + 2, 4));  // inside "second"
  Status s = OpenExpectingRefusal();
  EXPECT_NE(s.message().find("offset 81"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("[5, 11)"), std::string::npos) << "the damaged record's LSNs: " << s.ToString();
  EXPECT_NE(s.message().find("2 valid records"), std::string::npos) << s.ToString();
  ASSERT_TRUE(report.damage.has_value());
  EXPECT_EQ(report.damage->file, SegPath(1));
  EXPECT_EQ(report.damage->offset, 81u);
  EXPECT_FALSE(report.damage->sealed);
  EXPECT_EQ(report.damage->start_lsn, 5u);
  EXPECT_EQ(report.damage->end_lsn, 22u) << "a cut there would drop the valid records after it too";
  EXPECT_NE(report.damage->reason.find("CRC"), std::string::npos) << report.damage->reason;
}

TEST_F(DamagedNewestSegmentTest, BadCrcInTheCompleteLastRecordIsCorruption) {
  // The journal does not record how far it had synced, so a complete last
  // record that fails its CRC may have been acknowledged: not cut.
  ASSERT_OK(fs->FlipBit(SegPath(1), 205, 3));  // last byte of "fourth"
  Status s = OpenExpectingRefusal();
  EXPECT_NE(s.message().find("offset 164"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("[16, 22)"), std::string::npos) << s.ToString();
}

TEST_F(DamagedNewestSegmentTest, DamagedTailIsCutOnlyWhereTheNodeSaysSo) {
  log.Expect("cutting damaged tail", "the test plays the node that confirmed the LSNs with its peers");
  ASSERT_OK(fs->FlipBit(SegPath(1), 205, 3));
  (void)OpenExpectingRefusal();
  ASSERT_TRUE(report.damage.has_value());
  const DamagedRecord damage = *report.damage;
  EXPECT_EQ(damage.offset, 164u);
  EXPECT_EQ(damage.start_lsn, 16u);
  EXPECT_EQ(damage.end_lsn, 22u);

  DamagedRecord elsewhere = damage;
  elsewhere.offset = 81;
  const std::string before = *fs->FileContents(SegPath(1));
  EXPECT_TRUE(Open(1 << 20, elsewhere).status().is_data_loss()) << "permission is for one file and offset";
  EXPECT_EQ(*fs->FileContents(SegPath(1)), before);

  auto j = Open(1 << 20, damage);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_EQ(recorded.payloads, (std::vector<std::string>{"first", "second", "third"}));
  EXPECT_EQ(report.damaged_tail_bytes_cut, kRecordHeaderSize + 6);
  EXPECT_EQ(report.torn_tail_bytes_truncated, 0u);
  EXPECT_EQ(fs->FileContents(SegPath(1))->size(), 164u);
  ASSERT_TRUE(AppendRedo(**j, 16, "FOURTH").ok()) << "the node refills from its peers";
  ASSERT_OK((*j)->SyncAll());
  j->reset();
  ASSERT_TRUE(Open().ok()) << "healed: an ordinary open again";
  EXPECT_EQ(recorded.payloads.back(), "FOURTH");
}

TEST_F(DamagedNewestSegmentTest, LengthFieldThatSwallowsLaterRecordsIsCorruption) {
  ASSERT_OK(fs->FlipBit(SegPath(1), 81 + kRecPayloadLenOffset + 2, 0));  // "second" claims 64 KiB more
  Status s = OpenExpectingRefusal();
  EXPECT_NE(s.message().find("offset 81"), std::string::npos) << s.ToString();
}

TEST_F(DamagedNewestSegmentTest, LengthFieldOfTheLastRecordPointingPastEofIsCorruption) {
  // A page image's length is not tied to its LSNs, so a flipped length bit
  // makes a complete record look cut short by EOF, like a torn write.
  {
    auto j = Open();
    std::string payload = std::string(8, '\0') + "image";
    RecordHeader h{RecordType::kPageImage, static_cast<std::uint32_t>(payload.size()), 22, 22, 1};
    ASSERT_TRUE((*j)->Append({{h, payload}}).ok());
    ASSERT_OK((*j)->SyncAll());
  }
  ASSERT_OK(fs->FlipBit(SegPath(1), 206 + kRecPayloadLenOffset + 1, 0));  // 13 -> 269 bytes
  Status s = OpenExpectingRefusal();
  EXPECT_NE(s.message().find("offset 206"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("length"), std::string::npos) << s.ToString();
}

TEST_F(DamagedNewestSegmentTest, DamagedSegmentHeaderWithValidRecordsIsCorruption) {
  // Header and first record both damaged: the valid records further on prove
  // this is not a segment torn while being created.
  ASSERT_OK(fs->FlipBit(SegPath(1), 3, 1));
  ASSERT_OK(fs->FlipBit(SegPath(1), 40 + kRecordHeaderSize, 1));
  std::string before = *fs->FileContents(SegPath(1));
  auto j = Open();
  ASSERT_FALSE(j.ok()) << "a segment holding synced records was removed";
  EXPECT_TRUE(j.status().is_data_loss()) << j.status().ToString();
  EXPECT_EQ(*fs->FileContents(SegPath(1)), before);
}

TEST_F(SegmentJournalTest, RolloverSealsSegmentsAndDamageInASealedOneIsCorruption) {
  log.Expect("refusing to open", "the test damages a sealed segment");
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
  std::string before = *fs->FileContents(SegPath(2));
  ASSERT_OK(fs->FlipBit(SegPath(2), kSegmentHeaderSize + 10, 0));
  auto j = Open(200);
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(j.status().is_data_loss()) << j.status().ToString();
  EXPECT_NE(j.status().message().find("rebuild"), std::string::npos);
  ASSERT_TRUE(report.damage.has_value());
  EXPECT_EQ(report.damage->file, SegPath(2));
  EXPECT_EQ(report.damage->offset, kSegmentHeaderSize);
  EXPECT_TRUE(report.damage->sealed);
}

TEST_F(SegmentJournalTest, TornHeaderOfNewestSegmentIsRemovedOlderIsCorruption) {
  log.Expect("torn header", "the test tears a segment header");
  log.Expect("refusing to open", "the test then tears a sealed segment's header");
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
