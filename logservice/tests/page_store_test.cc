// PageStore stage 1: versions by LSN, durability, truncation, recovery.
#include <cerrno>

#include "strata/logservice/fault_injection_file_system.h"
#include "strata/logservice/page_store.h"
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

}  // namespace
}  // namespace strata::logservice
