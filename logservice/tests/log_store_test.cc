// LogStore behaviour through its public API: frontiers, reads of the gap-free
// prefix, duplicates, epochs and fences, truncation, release and segment
// deletion, concurrency. Crash and disk-full cases: log_store_crash_test.cc.
#include <algorithm>
#include <thread>

#include "disk_format.h"
#include "segment_journal.h"

#include "storage/fault_injection_file_system.h"
#include "storage/log_store.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;
const std::string kDir = "/node/redo";

std::string Concat(const std::vector<RedoRange>& ranges) {
  std::string out;
  for (const auto& r : ranges) out += r.bytes;
  return out;
}

class LogStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>(testing::TestSeed());
  testing::CapturingLog log;
  std::uint64_t segment_bytes = 1 << 20;
  Lsn initial_lsn = 1000;

  std::unique_ptr<LogStore> Open() {
    LogStoreOptions o;
    o.segment_bytes = segment_bytes;
    o.initial_lsn = initial_lsn;
    o.log = log.sink();
    auto store = LogStore::Open(fs, kDir, o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  void TearDown() override { log.VerifyNoUnexpected(); }
};

TEST_F(LogStoreTest, NewStoreStartsAtInitialLsn) {
  auto store = Open();
  LogFrontier f = store->frontier();
  EXPECT_EQ(f.released_lsn, 1000u);
  EXPECT_EQ(f.durable_lsn, 1000u);
  EXPECT_EQ(f.highest_lsn, 1000u);
  EXPECT_TRUE(store->Read(1000, 100)->empty());
  EXPECT_TRUE(store->Read(999, 100).status().is_not_found());
}

TEST_F(LogStoreTest, AppendIsNotReadableUntilSynced) {
  auto store = Open();
  auto t = store->Append(1000, 1, "hello");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(store->frontier().complete_lsn, 1005u);
  EXPECT_EQ(store->frontier().durable_lsn, 1000u);
  EXPECT_TRUE(store->Read(1000, 100)->empty()) << "reads never serve what a crash could take back";
  ASSERT_OK(store->SyncUpTo(*t));
  EXPECT_EQ(store->frontier().durable_lsn, 1005u);
  auto r = store->Read(1000, 100);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].start_lsn, 1000u);
  EXPECT_EQ((*r)[0].epoch, 1u);
  EXPECT_EQ((*r)[0].bytes, "hello");
}

TEST_F(LogStoreTest, ReadsReturnOnlyTheGapFreePrefix) {
  auto store = Open();
  ASSERT_TRUE(store->Append(1000, 1, "aaaa").ok());
  ASSERT_TRUE(store->Append(1008, 1, "cccc").ok());  // gap [1004, 1008)
  ASSERT_OK(store->Sync());
  LogFrontier f = store->frontier();
  EXPECT_EQ(f.durable_lsn, 1004u);
  EXPECT_EQ(f.complete_lsn, 1004u);
  EXPECT_EQ(f.highest_lsn, 1012u);
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "aaaa");
  EXPECT_TRUE(store->Read(1008, 100)->empty()) << "beyond the gap is not served";
  ASSERT_TRUE(store->Append(1004, 1, "bbbb").ok());  // the gap is filled
  ASSERT_OK(store->Sync());
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "aaaabbbbcccc");
  EXPECT_EQ(Concat(*store->Read(1002, 5)), "aabbb") << "reads start mid-record and stop at max_bytes";
}

TEST_F(LogStoreTest, DuplicatesAndOverlapsAreStoredOnce) {
  auto store = Open();
  ASSERT_TRUE(store->Append(1000, 1, "0123456789").ok());
  auto dup = store->Append(1000, 1, "0123456789");
  ASSERT_TRUE(dup.ok());
  EXPECT_EQ(dup->sequence, 0u) << "nothing new to wait for";
  ASSERT_TRUE(store->Append(1005, 1, "56789abcde").ok());
  ASSERT_OK(store->Sync());
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "0123456789abcde");
  EXPECT_EQ(store->stats().bytes_written, 15u);
}

TEST_F(LogStoreTest, RejectsBadArguments) {
  auto store = Open();
  EXPECT_EQ(store->Append(1000, 1, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Append(1000, 1, std::string(kMaxRecordPayload + 1, 'x')).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Append(~0ull - 2, 1, "abcd").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->ReleaseBelow(2000).code(), StatusCode::kInvalidArgument) << "beyond complete";
  EXPECT_EQ(store->TruncateAfter(999, 1).code(), StatusCode::kInvalidArgument) << "below released";
}

TEST_F(LogStoreTest, WrongEpochIsRejected) {
  auto store = Open();
  ASSERT_TRUE(store->Append(1000, 5, "new-writer").ok());
  auto stale = store->Append(1010, 4, "old-writer");
  EXPECT_EQ(stale.status().code(), StatusCode::kStaleEpoch) << stale.status().ToString();
  auto overlap = store->Append(1005, 6, "overlapping");
  EXPECT_EQ(overlap.status().code(), StatusCode::kConflict) << overlap.status().ToString();
  ASSERT_OK(store->Sync());
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "new-writer");
  EXPECT_EQ(store->frontier().max_epoch, 5u);
}

TEST_F(LogStoreTest, TruncateAfterRemovesSuffixFencesAndSurvivesReopen) {
  {
    auto store = Open();
    ASSERT_TRUE(store->Append(1000, 1, "keep-this|").ok());
    ASSERT_TRUE(store->Append(1010, 1, "stale-suffix").ok());
    ASSERT_OK(store->Sync());
    ASSERT_OK(store->TruncateAfter(1010, 2));
    LogFrontier f = store->frontier();
    EXPECT_EQ(f.highest_lsn, 1010u);
    EXPECT_EQ(f.durable_lsn, 1010u);
    EXPECT_EQ(store->Append(1010, 1, "stale-again").status().code(), StatusCode::kStaleEpoch);
    ASSERT_TRUE(store->Append(1010, 2, "new-epoch").ok());
    ASSERT_OK(store->Sync());
  }
  fs->SimulateCrash();
  auto store = Open();
  ASSERT_NE(store, nullptr);
  auto r = store->Read(1000, 100);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].bytes, "keep-this|");
  EXPECT_EQ((*r)[1].bytes, "new-epoch");
  EXPECT_EQ((*r)[1].epoch, 2u);
  EXPECT_EQ(store->Append(1019, 1, "x").status().code(), StatusCode::kStaleEpoch) << "the fence survived";
}

TEST_F(LogStoreTest, TruncateInsideARecordKeepsItsPrefix) {
  auto store = Open();
  ASSERT_TRUE(store->Append(1000, 1, "abcdefghij").ok());
  ASSERT_OK(store->TruncateAfter(1004, 1));
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "abcd");
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(Concat(*store->Read(1000, 100)), "abcd");
}

TEST_F(LogStoreTest, SegmentRolloverKeepsEverythingReadable) {
  segment_bytes = 256;
  auto store = Open();
  std::string all;
  for (int i = 0; i < 50; ++i) {
    std::string chunk = testing::RandomBytes(i, 30 + i % 7);
    ASSERT_TRUE(store->Append(1000 + all.size(), 1, chunk).ok());
    all += chunk;
  }
  ASSERT_OK(store->Sync());
  EXPECT_GT(store->stats().segments, 10u);
  EXPECT_EQ(Concat(*store->Read(1000, 1 << 20)), all);
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(Concat(*store->Read(1000, 1 << 20)), all);
  EXPECT_EQ(store->frontier().durable_lsn, 1000 + all.size());
}

TEST_F(LogStoreTest, ReleaseBelowDeletesWholeSegmentsAndBoundsDisk) {
  segment_bytes = 256;
  auto store = Open();
  Lsn lsn = 1000;
  std::uint64_t max_segments = 0;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 10; ++i) {
      ASSERT_TRUE(store->Append(lsn, 1, std::string(50, 'a' + round % 26)).ok());
      lsn += 50;
    }
    ASSERT_OK(store->Sync());
    ASSERT_OK(store->ReleaseBelow(lsn - 100));  // keep a little
    max_segments = std::max(max_segments, store->stats().segments);
  }
  EXPECT_LE(max_segments, 8u) << "disk use stays bounded";
  EXPECT_EQ(store->frontier().released_lsn, lsn - 100);
  EXPECT_TRUE(store->Read(lsn - 101, 10).status().is_not_found());
  EXPECT_EQ(Concat(*store->Read(lsn - 100, 1000)).size(), 100u);
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(store->frontier().released_lsn, lsn - 100);
  EXPECT_EQ(store->frontier().durable_lsn, lsn);
  EXPECT_EQ(Concat(*store->Read(lsn - 100, 1000)).size(), 100u);
  ASSERT_OK(store->ReleaseBelow(500));  // below: no-op
}

// Rebuilding from a peer: the log moves its start past what the store
// ever held (the peer released below there), keeps what it has above, and
// reopens there after a crash; appends before the new start are skipped.
TEST_F(LogStoreTest, StartAtMovesTheStartPastWhatTheStoreHolds) {
  auto store = Open();
  ASSERT_TRUE(store->Append(1000, 1, std::string(100, 'a')).ok());
  ASSERT_TRUE(store->Append(5000, 1, std::string(100, 'b')).ok());  // beyond a gap
  ASSERT_OK(store->Sync());
  EXPECT_EQ(store->frontier().durable_lsn, 1100u);
  EXPECT_EQ(store->ReleaseBelow(5000).code(), StatusCode::kInvalidArgument) << "ReleaseBelow stays bounded";
  ASSERT_OK(store->StartAt(5000));
  LogFrontier f = store->frontier();
  EXPECT_EQ(f.released_lsn, 5000u);
  EXPECT_EQ(f.durable_lsn, 5100u) << "the range held above the new start joins the gap-free prefix";
  EXPECT_TRUE(store->Read(4999, 10).status().is_not_found());
  EXPECT_EQ(Concat(*store->Read(5000, 1000)), std::string(100, 'b'));
  // A copy from a peer that starts lower: the released part is skipped, the
  // part already held is a duplicate, only [5100, 5150) is new.
  ASSERT_TRUE(store->Append(4900, 1, std::string(250, 'b')).ok());
  ASSERT_OK(store->Sync());
  ASSERT_OK(store->StartAt(4000));  // below: no-op
  store.reset();
  fs->SimulateCrash();
  store = Open();
  f = store->frontier();
  EXPECT_EQ(f.released_lsn, 5000u);
  EXPECT_EQ(f.durable_lsn, 5150u);
  EXPECT_EQ(Concat(*store->Read(5000, 1000)), std::string(150, 'b'));
}

// The tail register in the journal (docs/design/logservice-tail-in-journal.md):
// durable with the group commit, the last one written wins at replay, an
// unsynced one is lost with a crash as an unsynced append is, and a
// malformed one is refused.
TEST_F(LogStoreTest, TailRecordsAreDurableWithTheGroupCommitAndTheLastWins) {
  auto store = Open();
  EXPECT_FALSE(store->last_tail());
  const StoredTail first{1, 1000, 1100, std::string(512, 'x')};
  const StoredTail second{1, 1000, 1300, std::string(512, 'y')};
  ASSERT_TRUE(store->Append(1000, 1, std::string(100, 'a')).ok());
  ASSERT_TRUE(store->PutTail(first).ok());
  ASSERT_TRUE(store->PutTail(second).ok());
  EXPECT_EQ(store->last_tail(), second);
  ASSERT_OK(store->Sync());
  const StoredTail unsynced{2, 1024, 1030, std::string(512, 'z')};
  ASSERT_TRUE(store->PutTail(unsynced).ok());
  EXPECT_EQ(store->stats().tail_writes, 3u);
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(store->last_tail(), second) << "the synced one survives, the unsynced one is gone";
  EXPECT_EQ(store->frontier().durable_lsn, 1100u) << "tail records hold no redo";
  for (const StoredTail& bad : {StoredTail{1, 1000, 1000, std::string(512, 'x')},
                                StoredTail{1, 1000, 1600, std::string(512, 'x')}, StoredTail{1, 1000, 1001, ""}})
    EXPECT_EQ(store->PutTail(bad).status().code(), StatusCode::kInvalidArgument);
}

// An idle writer's register can sit in an old segment; releasing the log
// deletes old segments. The register is written again first, so it
// survives the release and a crash right after it.
TEST_F(LogStoreTest, ReleasingTheLogKeepsTheTailRecord) {
  segment_bytes = 256;
  auto store = Open();
  Lsn lsn = 1000;
  ASSERT_TRUE(store->Append(lsn, 1, std::string(50, 'a')).ok());
  lsn += 50;
  const StoredTail tail{1, 1040, 1050, std::string(64, 't')};
  ASSERT_TRUE(store->PutTail(tail).ok());
  for (int i = 0; i < 30; ++i, lsn += 50) ASSERT_TRUE(store->Append(lsn, 1, std::string(50, 'b')).ok());
  ASSERT_OK(store->Sync());
  const auto before = store->stats().segments;
  ASSERT_OK(store->ReleaseBelow(lsn - 50));
  EXPECT_LT(store->stats().segments, before) << "old segments went";
  EXPECT_EQ(store->last_tail(), tail);
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(store->last_tail(), tail) << "the register outlived the segment it was first written in";
  EXPECT_EQ(store->frontier().released_lsn, lsn - 50);
}

TEST_F(LogStoreTest, ConcurrentAppendersSyncerAndReaders) {
  segment_bytes = 4096;  // rollovers race with syncs and reads too
  auto store = Open();
  constexpr int kWriters = 4, kChunks = 200, kChunk = 16;
  std::atomic<Lsn> next{1000};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&] {
      for (int i = 0; i < kChunks; ++i) {
        Lsn at = next.fetch_add(kChunk);
        std::string chunk(kChunk, static_cast<char>('a' + at % 26));
        auto t = store->Append(at, 1, chunk);  // may arrive out of order: gaps
        ASSERT_TRUE(t.ok()) << t.status().ToString();
        if (i % 10 == 0) ASSERT_OK(store->SyncUpTo(*t));
      }
    });
  }
  threads.emplace_back([&] {  // the daemon's group-commit thread
    while (!done) ASSERT_OK(store->Sync());
  });
  threads.emplace_back([&] {  // a reader: whatever it sees is durable and correct
    while (!done) {
      auto r = store->Read(1000, 1 << 20);
      ASSERT_TRUE(r.ok());
      std::string bytes = Concat(*r);
      ASSERT_LE(1000 + bytes.size(), store->frontier().durable_lsn);
      for (std::size_t i = 0; i < bytes.size(); ++i)
        ASSERT_EQ(bytes[i], static_cast<char>('a' + (1000 + i / kChunk * kChunk) % 26));
    }
  });
  for (int w = 0; w < kWriters; ++w) threads[w].join();
  done = true;
  for (std::size_t i = kWriters; i < threads.size(); ++i) threads[i].join();
  ASSERT_OK(store->Sync());
  EXPECT_EQ(store->frontier().durable_lsn, 1000u + kWriters * kChunks * kChunk);
}

// Five synced 10-byte appends at LSN 1000: records of 46 bytes from offset
// 40; the third, [1020, 1030), starts at offset 132.
TEST_F(LogStoreTest, BitRotInTheNewestSegmentFailsOpenAndLeavesTheFileAlone) {
  log.Expect("refusing to open", "the test flips a bit in an acknowledged record");
  {
    auto store = Open();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(store->Append(1000 + i * 10, 1, std::string(10, 'a' + i)).ok());
    ASSERT_OK(store->Sync());
    EXPECT_EQ(store->frontier().durable_lsn, 1050u);
  }
  const std::string seg = kDir + "/" + storage::SegmentFileName(1);
  ASSERT_OK(fs->FlipBit(seg, 132 + storage::kRecordHeaderSize + 4, 6));
  const std::string before = *fs->FileContents(seg);
  LogStoreOptions o;
  o.initial_lsn = initial_lsn;
  o.log = log.sink();
  RecoveryReport report;
  auto store = LogStore::Open(fs, kDir, o, &report);
  ASSERT_FALSE(store.ok()) << "acknowledged records after the damage would have been cut";
  EXPECT_TRUE(store.status().is_data_loss()) << store.status().ToString();
  const std::string& m = store.status().message();
  EXPECT_NE(m.find(seg), std::string::npos) << m;
  EXPECT_NE(m.find("offset 132"), std::string::npos) << m;
  EXPECT_NE(m.find("[1020, 1030)"), std::string::npos) << m;
  EXPECT_EQ(*fs->FileContents(seg), before) << "not one byte cut or rewritten";
  ASSERT_TRUE(report.damage.has_value());
  EXPECT_EQ(report.damage->file, seg);
  EXPECT_EQ(report.damage->offset, 132u);
  EXPECT_FALSE(report.damage->sealed);
  EXPECT_EQ(report.damage->start_lsn, 1020u);
  EXPECT_EQ(report.damage->end_lsn, 1050u) << "up to the end of the valid records after it";
}

// 30-byte appends at LSN 1000 into 256-byte segments: three 66-byte records
// per segment; the second record of segment 1, [1030, 1060), is at offset 106.
TEST_F(LogStoreTest, BitRotInASealedSegmentIsCorruptionOnReadNeverASkip) {
  segment_bytes = 256;
  auto store = Open();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(store->Append(1000 + i * 30, 1, std::string(30, 'a' + i)).ok());
  ASSERT_OK(store->Sync());
  ASSERT_GE(store->stats().segments, 4u);
  const std::string seg = kDir + "/" + storage::SegmentFileName(1);
  ASSERT_OK(fs->FlipBit(seg, 106 + storage::kRecordHeaderSize + 7, 2));

  auto r = store->Read(1000, 1 << 20);
  ASSERT_FALSE(r.ok()) << "damaged bytes were served or skipped";
  EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << r.status().ToString();
  EXPECT_FALSE(r.status().is_not_found());
  const std::string& m = r.status().message();
  EXPECT_NE(m.find(seg), std::string::npos) << m;
  EXPECT_NE(m.find("offset 106"), std::string::npos) << m;
  EXPECT_NE(m.find("[1030, 1060)"), std::string::npos) << "the LSNs this node lost: " << m;
  EXPECT_EQ(Concat(*store->Read(1000, 30)), std::string(30, 'a')) << "the record before is intact";
  EXPECT_EQ(Concat(*store->Read(1060, 30)), std::string(30, 'c')) << "so is the one after";
  EXPECT_EQ(store->Read(1040, 10).status().code(), StatusCode::kCorruption) << "a read inside it fails too";
  auto damaged = store->damaged();
  ASSERT_EQ(damaged.size(), 1u) << "listed once, however often it is read";
  EXPECT_EQ(damaged[0].file, seg);
  EXPECT_EQ(damaged[0].offset, 106u);
  EXPECT_TRUE(damaged[0].sealed);
  EXPECT_EQ(damaged[0].start_lsn, 1030u);
  EXPECT_EQ(damaged[0].end_lsn, 1060u);

  // The file is left as it is, so the next Open refuses the same record.
  log.Expect("refusing to open", "the test reopens a store with a damaged sealed segment");
  store.reset();
  LogStoreOptions o;
  o.segment_bytes = segment_bytes;
  o.log = log.sink();
  RecoveryReport report;
  auto reopened = LogStore::Open(fs, kDir, o, &report);
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(reopened.status().is_data_loss());
  ASSERT_TRUE(report.damage.has_value());
  EXPECT_TRUE(report.damage->sealed);
  EXPECT_EQ(report.damage->offset, 106u);
  EXPECT_EQ(report.damage->start_lsn, 1030u);
  o.cut_damaged_tail = report.damage;
  EXPECT_TRUE(LogStore::Open(fs, kDir, o).status().is_data_loss()) << "a sealed segment is never cut";
}

TEST(LogStoreOnDisk, RealFilesSurviveReopenAndATornTail) {
  testing::ScratchDir scratch;
  testing::CapturingLog log;
  log.Expect("cutting torn tail", "the test cuts the file mid-record");
  const std::string dir = scratch.path() + "/redo";
  LogStoreOptions o;
  o.segment_bytes = 1024;
  o.preallocate_bytes = 0;  // the file ends where the records end (with it: the tests below)
  o.log = log.sink();
  std::string all;
  {
    auto store = LogStore::Open(PosixFileSystem(), dir, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int i = 0; i < 30; ++i) {
      std::string chunk = testing::RandomBytes(100 + i, 97);
      ASSERT_TRUE((*store)->Append(all.size(), 3, chunk).ok());
      all += chunk;
    }
    ASSERT_OK((*store)->Sync());
    EXPECT_GT((*store)->stats().segments, 2u);
  }
  // Tear the newest segment's last record, as a crash mid-write would.
  auto names = *PosixFileSystem()->ListDir(dir);
  std::sort(names.begin(), names.end());
  const std::string newest = dir + "/" + names.back();
  {
    auto w = PosixFileSystem()->OpenWritable(newest, OpenMode::kOpenExisting);
    ASSERT_TRUE(w.ok());
    ASSERT_OK((*w)->Truncate((*w)->Size() - 10));
  }
  RecoveryReport report;
  auto store = LogStore::Open(PosixFileSystem(), dir, o, &report);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(report.torn_tail_bytes_truncated, storage::kRecordHeaderSize + 97 - 10);
  EXPECT_EQ(Concat(*(*store)->Read(0, 1 << 20)), all.substr(0, all.size() - 97));
  log.VerifyNoUnexpected();
}

// ---- preallocated segments (LogStoreOptions::preallocate_bytes) ----

std::uint64_t FileSize(const std::string& path) {
  auto f = PosixFileSystem()->OpenReadable(path);
  if (!f.ok()) return 0;
  auto size = (*f)->Size();
  return size.ok() ? *size : 0;
}

std::string NewestSegment(const std::string& dir) {
  auto names = *PosixFileSystem()->ListDir(dir);
  std::sort(names.begin(), names.end());
  return dir + "/" + names.back();
}

// Where the records of a segment file end: before the fill pattern that
// follows them (the test's own scan, from the header it reads back).
std::uint64_t RecordsEnd(const std::string& path) {
  auto f = std::move(PosixFileSystem()->OpenReadable(path)).value();
  std::string bytes;
  EXPECT_OK(f->ReadAt(0, *f->Size(), &bytes));
  storage::SegmentHeader h;
  EXPECT_OK(storage::DecodeSegmentHeader(bytes, &h));
  const std::string pattern = storage::FillPattern(h);
  std::size_t end = bytes.size();
  while (end > storage::kSegmentHeaderSize && bytes[end - 1] == pattern[(end - 1) % pattern.size()]) --end;
  return end;
}

class PreallocatedSegments : public ::testing::Test {
 protected:
  testing::ScratchDir scratch;
  testing::CapturingLog log;
  const std::string dir = scratch.path() + "/redo";
  LogStoreOptions o;
  std::string all;
  PreallocatedSegments() {
    o.segment_bytes = 4096;
    o.preallocate_bytes = 2048;
    o.log = log.sink();
  }
  // Appends `n` records of 97 bytes and syncs them.
  void Write(LogStore& store, int n) {
    for (int i = 0; i < n; ++i) {
      std::string chunk = testing::RandomBytes(all.size() + 1, 97);
      ASSERT_TRUE(store.Append(all.size(), 3, chunk).ok());
      all += chunk;
    }
    ASSERT_OK(store.Sync());
  }
};

// Appends overwrite the fill; a sealed segment ends at its last record (Open
// refuses anything after the records of an older segment as damage); Open
// cuts the fill of the newest one without a warning; appends after a reopen
// fill again.
TEST_F(PreallocatedSegments, AreOverwrittenCutBackWhenSealedAndCutQuietlyAtOpen) {
  std::uint64_t newest_size = 0, newest_records = 0;
  {
    auto store = LogStore::Open(PosixFileSystem(), dir, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Write(**store, 100);
    EXPECT_GT((*store)->stats().segments, 2u);
    const std::string newest = NewestSegment(dir);
    newest_size = FileSize(newest);
    newest_records = RecordsEnd(newest);
    EXPECT_GT(newest_size, newest_records) << "the newest segment is filled ahead of its records";
    auto names = *PosixFileSystem()->ListDir(dir);
    for (const auto& n : names) {
      const std::string path = dir + "/" + n;
      if (path == newest) continue;
      EXPECT_EQ(FileSize(path), RecordsEnd(path)) << path << ": a sealed segment ends at its last record";
    }
  }
  {
    RecoveryReport report;
    auto store = LogStore::Open(PosixFileSystem(), dir, o, &report);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ(Concat(*(*store)->Read(0, 1 << 20)), all);
    EXPECT_EQ(report.torn_tail_bytes_truncated, newest_size - newest_records);
    EXPECT_EQ(FileSize(NewestSegment(dir)), newest_records);
    Write(**store, 50);
  }
  auto store = LogStore::Open(PosixFileSystem(), dir, o);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(Concat(*(*store)->Read(0, 1 << 20)), all);
  log.VerifyNoUnexpected();  // cutting the fill is not a warning
}

// A crash that tore the last record inside filled space (its last sectors
// never written: they still hold the fill) is a torn tail, as one cut short
// by the end of the file is: the record is dropped, with a warning.
TEST_F(PreallocatedSegments, AWriteTornInsideTheFillIsATornTail) {
  log.Expect("cutting torn tail", "the test tears the last record");
  {
    auto store = LogStore::Open(PosixFileSystem(), dir, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Write(**store, 10);
  }
  const std::string newest = NewestSegment(dir);
  const std::uint64_t end = RecordsEnd(newest);
  {
    // The last 40 bytes of the last record read as the fill again.
    auto f = std::move(PosixFileSystem()->OpenReadable(newest)).value();
    std::string bytes;
    ASSERT_OK(f->ReadAt(0, *f->Size(), &bytes));
    storage::SegmentHeader h;
    ASSERT_OK(storage::DecodeSegmentHeader(bytes, &h));
    const std::string pattern = storage::FillPattern(h);
    for (std::uint64_t o = end - 40; o < end; ++o) bytes[o] = pattern[o % pattern.size()];
    auto w = std::move(PosixFileSystem()->OpenWritable(newest, OpenMode::kCreateOrTruncate)).value();
    ASSERT_OK(w->Append(bytes));
  }
  RecoveryReport report;
  auto store = LogStore::Open(PosixFileSystem(), dir, o, &report);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ(Concat(*(*store)->Read(0, 1 << 20)), all.substr(0, all.size() - 97));
  log.VerifyNoUnexpected();
}

// Rot in the last record is still damage with filled space after it: Open
// refuses, nothing is cut.
TEST_F(PreallocatedSegments, RotInTheLastRecordIsStillDamage) {
  {
    auto store = LogStore::Open(PosixFileSystem(), dir, o);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Write(**store, 10);
  }
  const std::string newest = NewestSegment(dir);
  const std::uint64_t end = RecordsEnd(newest), size = FileSize(newest);
  {
    auto f = std::move(PosixFileSystem()->OpenReadable(newest)).value();
    std::string bytes;
    ASSERT_OK(f->ReadAt(0, size, &bytes));
    bytes[end - 50] ^= 0x20;  // inside the last record's payload
    auto w = std::move(PosixFileSystem()->OpenWritable(newest, OpenMode::kCreateOrTruncate)).value();
    ASSERT_OK(w->Append(bytes));
  }
  log.Expect("refusing to open", "the test damages the last record");
  RecoveryReport report;
  auto store = LogStore::Open(PosixFileSystem(), dir, o, &report);
  EXPECT_EQ(store.status().code(), StatusCode::kCorruption) << store.status().ToString();
  EXPECT_EQ(FileSize(newest), size) << "nothing is cut";
}

}  // namespace
}  // namespace strata::logservice
