// PageStore stage 1: versions by LSN, durability, truncation, recovery.
#include <cerrno>

#include "storage/fault_injection_file_system.h"
#include "storage/page_store.h"
#include "disk_format.h"
#include "test_support.h"

namespace strata::logservice {
namespace {

using FaultFs = FaultInjectionFileSystem;
const std::string kDir = "/node/pages";

class PageStoreTest : public ::testing::Test {
 protected:
  std::shared_ptr<FaultFs> fs = std::make_shared<FaultFs>(testing::TestSeed());
  testing::CapturingLog log;
  std::unique_ptr<PageStore> Open(std::uint64_t segment_bytes = 1 << 20) {
    PageStoreOptions o;
    o.segment_bytes = segment_bytes;
    o.log = log.sink();
    auto store = PageStore::Open(fs, kDir, o);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }
  void TearDown() override { log.VerifyNoUnexpected(); }
};

std::string Image(PageId id, Lsn lsn) {
  return std::string(100, static_cast<char>('a' + (id.space_id + id.page_no + lsn) % 26)) + std::to_string(lsn);
}

TEST_F(PageStoreTest, GetReturnsNewestVersionAtOrBelowLsn) {
  auto store = Open();
  const PageId p{1, 7}, q{2, 7};
  for (Lsn lsn : {100, 200, 300}) ASSERT_TRUE(store->PutPage(p, lsn, Image(p, lsn)).ok());
  ASSERT_TRUE(store->PutPage(q, 150, Image(q, 150)).ok());
  ASSERT_OK(store->Sync());
  EXPECT_TRUE(store->GetPage(p, 99).status().is_not_found());
  EXPECT_EQ(store->GetPage(p, 100)->lsn, 100u);
  EXPECT_EQ(store->GetPage(p, 250)->lsn, 200u);
  EXPECT_EQ(store->GetPage(p, 250)->image, Image(p, 200));
  EXPECT_EQ(store->GetPage(p, 1000)->lsn, 300u);
  EXPECT_EQ(store->GetPage(q, 1000)->image, Image(q, 150));
  EXPECT_TRUE(store->GetPage(PageId{1, 8}, 1000).status().is_not_found());
  EXPECT_EQ(store->stats().versions, 4u);
}

TEST_F(PageStoreTest, UnsyncedVersionsAreNotServedAndLostInACrash) {
  const PageId p{0, 3};
  {
    auto store = Open();
    ASSERT_TRUE(store->PutPage(p, 10, Image(p, 10)).ok());
    ASSERT_OK(store->Sync());
    ASSERT_TRUE(store->PutPage(p, 20, Image(p, 20)).ok());
    EXPECT_EQ(store->GetPage(p, 30)->lsn, 10u) << "version 20 is not durable yet";
  }
  fs->SimulateCrash();
  auto store = Open();
  EXPECT_EQ(store->GetPage(p, 30)->lsn, 10u);
}

TEST_F(PageStoreTest, RewriteOfSameVersionReplacesIt) {
  auto store = Open();
  const PageId p{0, 1};
  ASSERT_TRUE(store->PutPage(p, 10, "first").ok());
  ASSERT_TRUE(store->PutPage(p, 10, "second").ok());
  ASSERT_OK(store->Sync());
  EXPECT_EQ(store->GetPage(p, 10)->image, "second");
  store.reset();
  fs->SimulateCrash();
  store = Open();
  EXPECT_EQ(store->GetPage(p, 10)->image, "second") << "replay keeps file order";
}

TEST_F(PageStoreTest, TruncateAfterDropsNewerVersionsDurably) {
  const PageId p{5, 5};
  {
    auto store = Open(/*segment_bytes=*/400);  // also crosses segments
    for (Lsn lsn = 10; lsn <= 100; lsn += 10) ASSERT_TRUE(store->PutPage(p, lsn, Image(p, lsn)).ok());
    ASSERT_OK(store->Sync());
    ASSERT_OK(store->TruncateAfter(50));
    EXPECT_EQ(store->GetPage(p, 1000)->lsn, 50u) << "an image at the cut LSN stays";
    ASSERT_TRUE(store->PutPage(p, 70, "new epoch").ok());
    ASSERT_OK(store->Sync());
  }
  fs->SimulateCrash();
  auto store = Open(400);
  EXPECT_EQ(store->GetPage(p, 65)->lsn, 50u);
  EXPECT_EQ(store->GetPage(p, 1000)->image, "new epoch");
  EXPECT_EQ(store->stats().versions, 6u);
}

TEST_F(PageStoreTest, ErrorsAndCorruption) {
  auto store = Open();
  EXPECT_EQ(store->PutPage({0, 0}, 1, "").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutPage({0, 0}, 1, std::string(kMaxPageImage + 1, 'x')).status().code(),
            StatusCode::kInvalidArgument);
  fs->SetSpaceLimit(fs->used_bytes() + 10);
  EXPECT_EQ(store->PutPage({0, 0}, 1, "image").status().code(), StatusCode::kNoSpace);
  EXPECT_TRUE(store->GetPage({0, 0}, 1).status().is_not_found());
  fs->SetSpaceLimit(std::nullopt);
  ASSERT_TRUE(store->PutPage({0, 0}, 1, "image").ok());
  ASSERT_OK(store->Sync());
  const std::string seg = kDir + "/0000000000000001.seg";
  ASSERT_OK(fs->FlipBit(seg, fs->FileContents(seg)->size() - 1, 0));
  EXPECT_TRUE(store->GetPage({0, 0}, 1).status().is_data_loss()) << "a damaged image is never served";
}

// A store of page p with images at 10..50, then TruncateAfter(30) as a
// seal does; the truncation record ends the file. Recovery damage is opened
// with OpenDamaged, which expects the refusal or the rewrite it is told to.
class DamagedPageStoreTest : public PageStoreTest {
 protected:
  const PageId p{3, 9};
  const std::string seg = kDir + "/0000000000000001.seg";
  std::uint64_t truncation_at = 0;  // offset of the truncation record
  void SetUp() override {
    auto store = Open();
    for (Lsn lsn = 10; lsn <= 50; lsn += 10) ASSERT_TRUE(store->PutPage(p, lsn, Image(p, lsn)).ok());
    ASSERT_OK(store->Sync());
    truncation_at = fs->FileContents(seg)->size();
    ASSERT_OK(store->TruncateAfter(30));
  }
  Result<std::unique_ptr<PageStore>> OpenDamaged(std::optional<Lsn> last_truncation, RecoveryReport* report) {
    PageStoreOptions o;
    o.log = log.sink();
    o.last_truncation = last_truncation;
    return PageStore::Open(fs, kDir, o, report);
  }
};

TEST_F(DamagedPageStoreTest, TornTruncationAtTheEndIsWrittenAgain) {
  // A crash kept the whole truncation record but tore its last byte: a
  // complete record with a bad CRC. The node names it from node_meta.
  log.Expect("rewriting the damaged last record", "the test tears the truncation the owner vouches for");
  const std::string intact = *fs->FileContents(seg);
  ASSERT_EQ(intact.size(), truncation_at + storage::kRecordHeaderSize);
  ASSERT_OK(fs->FlipBit(seg, intact.size() - 1, 5));
  RecoveryReport report;
  auto store = OpenDamaged(30, &report);
  ASSERT_TRUE(store.ok()) << "the store refused its own torn truncation: " << store.status().ToString();
  EXPECT_EQ(report.damaged_records_rewritten, 1u);
  EXPECT_EQ(*fs->FileContents(seg), intact) << "the truncation is back, intact, in its place";
  EXPECT_EQ((*store)->GetPage(p, 1000)->lsn, 30u) << "versions above the truncation stay dropped";
  EXPECT_EQ((*store)->stats().versions, 3u);
  store->reset();
  fs->SimulateCrash();
  auto again = OpenDamaged(30, &report);
  ASSERT_TRUE(again.ok()) << "the rewrite was synced: " << again.status().ToString();
  EXPECT_EQ((*again)->GetPage(p, 1000)->lsn, 30u);
}

TEST_F(DamagedPageStoreTest, TornTruncationIsRefusedUnlessTheOwnerNamesIt) {
  log.Expect("refusing to open", "the test damages the truncation record");
  ASSERT_OK(fs->FlipBit(seg, fs->FileContents(seg)->size() - 1, 5));
  const std::string before = *fs->FileContents(seg);
  for (std::optional<Lsn> named : {std::optional<Lsn>(), std::optional<Lsn>(40)}) {
    RecoveryReport report;
    auto store = OpenDamaged(named, &report);
    ASSERT_FALSE(store.ok()) << "cut a truncation nobody vouched for";
    EXPECT_TRUE(store.status().is_data_loss()) << store.status().ToString();
    ASSERT_TRUE(report.damage.has_value());
    EXPECT_EQ(report.damage->offset, truncation_at);
    EXPECT_EQ(*fs->FileContents(seg), before) << "nothing may be cut or rewritten";
  }
}

TEST_F(DamagedPageStoreTest, DamagedRecordFollowedByAValidOneIsRefused) {
  // Rot in the second image: the images after it prove it was written and
  // synced, so this is damage, never a torn tail, truncation named or not.
  log.Expect("refusing to open", "the test damages a synced page image");
  const std::uint64_t second = storage::kSegmentHeaderSize + storage::kRecordHeaderSize + storage::kPageKeySize +
                               Image(p, 10).size();
  ASSERT_OK(fs->FlipBit(seg, second + storage::kRecordHeaderSize + 20, 2));
  const std::string before = *fs->FileContents(seg);
  RecoveryReport report;
  auto store = OpenDamaged(30, &report);
  ASSERT_FALSE(store.ok()) << "damage before valid records was cut";
  EXPECT_TRUE(store.status().is_data_loss()) << store.status().ToString();
  const std::string why = store.status().message();
  EXPECT_NE(why.find(seg + " offset " + std::to_string(second)), std::string::npos) << why;
  EXPECT_NE(why.find("valid records follow"), std::string::npos) << why;
  EXPECT_NE(why.find("Nothing was cut"), std::string::npos) << why;
  EXPECT_EQ(*fs->FileContents(seg), before);
}

TEST_F(DamagedPageStoreTest, DamagedLastPageImageIsRefusedEvenWithATruncationNamed) {
  // A complete image with a bad CRC at the end may have been acknowledged;
  // only the named truncation is rewritten.
  log.Expect("refusing to open", "the test damages the last page image");
  {
    auto store = OpenDamaged(30, nullptr);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE((*store)->PutPage(p, 40, Image(p, 40)).ok());
    ASSERT_OK((*store)->Sync());
  }
  ASSERT_OK(fs->FlipBit(seg, fs->FileContents(seg)->size() - 1, 5));
  RecoveryReport report;
  auto store = OpenDamaged(30, &report);
  ASSERT_FALSE(store.ok()) << "an image that may have been acknowledged was cut";
  EXPECT_TRUE(store.status().is_data_loss()) << store.status().ToString();
  EXPECT_EQ(report.damaged_records_rewritten, 0u);
}

}  // namespace
}  // namespace strata::logservice
