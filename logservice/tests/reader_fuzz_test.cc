// Fuzz-style tests for every reader of on-disk bytes. Random damage (bit
// flips, overwritten spans, truncation, appended junk) must never crash a
// reader and must never make it return a record that fails its CRC or that
// was not written. Seeded: STRATA_TEST_SEED reproduces a failure.
#include <random>
#include <set>

#include "disk_format.h"
#include "segment_journal.h"
#include "storage/checkpoint_store.h"
#include "storage/fault_injection_file_system.h"
#include "storage/log_store.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;

std::string Damage(std::string bytes, std::mt19937_64& rng, std::size_t protect_prefix = 0) {
  if (bytes.size() <= protect_prefix) return bytes;
  std::uniform_int_distribution<std::size_t> pos(protect_prefix, bytes.size() - 1);
  switch (rng() % 5) {
    case 0:  // a few bit flips
      for (int i = 0, n = 1 + rng() % 4; i < n; ++i) bytes[pos(rng)] ^= static_cast<char>(1 << (rng() % 8));
      break;
    case 1: {  // an overwritten span (a misdirected write)
      std::size_t at = pos(rng), n = std::min<std::size_t>(1 + rng() % 64, bytes.size() - at);
      for (std::size_t i = 0; i < n; ++i) bytes[at + i] = static_cast<char>(rng());
      break;
    }
    case 2:  // truncated (torn)
      bytes.resize(pos(rng));
      break;
    case 3:  // a zeroed span (a lost page)
      {
        std::size_t at = pos(rng), n = std::min<std::size_t>(1 + rng() % 512, bytes.size() - at);
        std::fill_n(bytes.begin() + static_cast<std::ptrdiff_t>(at), n, '\0');
      }
      break;
    default:  // junk appended
      for (int i = 0, n = 1 + rng() % 100; i < n; ++i) bytes.push_back(static_cast<char>(rng()));
  }
  return bytes;
}

TEST(ReaderFuzz, ParseRecordNeverAcceptsDamage) {
  std::mt19937_64 rng(testing::TestSeed(11));
  for (int iter = 0; iter < 20000; ++iter) {
    std::string payload = testing::RandomBytes(rng(), 1 + rng() % 200);
    storage::RecordHeader h{storage::RecordType::kRedo, static_cast<std::uint32_t>(payload.size()), rng() % 1000000,
                            0, rng() % 10};
    h.end_lsn = h.start_lsn + payload.size();
    std::string good;
    storage::EncodeRecord(h, payload, &good);
    std::string bad = Damage(good, rng);
    storage::RecordHeader out;
    std::string_view body;
    std::string why;
    if (storage::ParseRecord(bad, &out, &body, &why) == storage::ParseResult::kOk) {
      // Only acceptable if the damage left the record itself intact (junk appended).
      ASSERT_EQ(std::string(bad.substr(0, storage::kRecordHeaderSize + body.size())), good) << "iteration " << iter;
    }
  }
}

TEST(ReaderFuzz, ParseRecordOnRandomBytes) {
  std::mt19937_64 rng(testing::TestSeed(12));
  for (int iter = 0; iter < 50000; ++iter) {
    std::string junk = testing::RandomBytes(rng(), rng() % 128);
    storage::RecordHeader out;
    std::string_view body;
    std::string why;
    ASSERT_NE(storage::ParseRecord(junk, &out, &body, &why), storage::ParseResult::kOk);
  }
}

// A whole store on disk, randomly damaged, reopened: Open either refuses with
// kCorruption or recovers a store whose every served byte is one that was
// written at that LSN.
TEST(ReaderFuzz, DamagedSegmentsNeverYieldWrongRedo) {
  std::mt19937_64 rng(testing::TestSeed(13));
  auto byte_at = [](Lsn lsn) { return static_cast<char>('a' + (lsn * 31) % 26); };
  int opened = 0, refused = 0;
  for (int iter = 0; iter < 300; ++iter) {
    auto fs = std::make_shared<FaultFs>(rng());
    testing::CapturingLog log;
    LogStoreOptions o;
    o.segment_bytes = 512;
    o.log = log.sink();
    {
      auto store = LogStore::Open(fs, "/r", o);
      ASSERT_TRUE(store.ok());
      Lsn lsn = 0;
      for (int i = 0, n = 5 + rng() % 30; i < n; ++i) {
        std::size_t len = 1 + rng() % 120;
        std::string bytes;
        for (std::size_t k = 0; k < len; ++k) bytes.push_back(byte_at(lsn + k));
        ASSERT_TRUE((*store)->Append(lsn, 1, bytes).ok());
        lsn += len;
      }
      ASSERT_OK((*store)->Sync());
    }
    auto names = *fs->ListDir("/r");
    const std::string victim = "/r/" + names[rng() % names.size()];
    ASSERT_OK(fs->OverwriteFile(victim, Damage(*fs->FileContents(victim), rng)));
    auto store = LogStore::Open(fs, "/r", o);
    if (!store.ok()) {
      ++refused;
      ASSERT_TRUE(store.status().is_data_loss()) << store.status().ToString();
      continue;
    }
    ++opened;
    auto read = (*store)->Read(0, 1 << 20);
    if (!read.ok()) {
      ASSERT_TRUE(read.status().is_data_loss()) << read.status().ToString();
      continue;
    }
    Lsn at = 0;
    for (const auto& r : *read) {
      ASSERT_EQ(r.start_lsn, at);
      for (std::size_t k = 0; k < r.bytes.size(); ++k) ASSERT_EQ(r.bytes[k], byte_at(at + k)) << "iter " << iter;
      at = r.end_lsn();
    }
  }
  EXPECT_GT(opened, 0);
  EXPECT_GT(refused, 0);
}

TEST(ReaderFuzz, DamagedCheckpointIsNeverMisread) {
  std::mt19937_64 rng(testing::TestSeed(14));
  for (int iter = 0; iter < 3000; ++iter) {
    auto fs = std::make_shared<FaultFs>(rng());
    ASSERT_OK(fs->CreateDirs("/n"));
    CheckpointStore store(fs, "/n");
    Checkpoint cp{rng(), rng() % 100, testing::RandomBytes(rng(), rng() % 300)};
    ASSERT_OK(store.Write(cp));
    std::string good = *fs->FileContents("/n/checkpoint");
    std::string bad = Damage(good, rng);
    ASSERT_OK(fs->OverwriteFile("/n/checkpoint", bad));
    auto got = store.Read();
    if (got.ok()) ASSERT_EQ(bad, good) << "iteration " << iter;
    else ASSERT_TRUE(got.status().is_data_loss());
  }
}

TEST(ReaderFuzz, SegmentHeaderDecoderOnRandomBytes) {
  std::mt19937_64 rng(testing::TestSeed(15));
  for (int iter = 0; iter < 50000; ++iter) {
    storage::SegmentHeader out;
    EXPECT_FALSE(storage::DecodeSegmentHeader(testing::RandomBytes(rng(), rng() % 64), &out).ok());
  }
}

}  // namespace
}  // namespace strata::logservice
