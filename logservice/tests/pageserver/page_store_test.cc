// PageStore behaviour, one rule per test: ingest, freeze and reads from
// memory and files, images, reopen, the manifest (orphans, missing or
// damaged files, every damage of the manifest itself), the image policy,
// GC and the below-horizon rule, and error paths of the file system.
#include <gtest/gtest.h>

#include <cerrno>

#include "format.h"
#include "store_model.h"
#include "storage/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::pageserver {
namespace {

using logservice::FaultInjectionFileSystem;
using logservice::StatusCode;
using testing::Delta;
using testing::Image;
using testing::ToyPage;
using FaultOp = FaultInjectionFileSystem::Op;

const std::string kDir = "/ps";
const PageId kA{1, 7};
const PageId kB{2, 3};

class PageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { fs_ = std::make_shared<FaultInjectionFileSystem>(logservice::testing::TestSeed(9)); }

  Result<std::unique_ptr<PageStore>> OpenStore(bool verify = false, OpenReport* report = nullptr) {
    StoreOptions o;
    o.fs = fs_;
    o.dir = kDir;
    o.initial_lsn = 100;
    o.verify_blocks_at_open = verify;
    o.log = log_.sink();
    return PageStore::Open(o, report);
  }
  std::unique_ptr<PageStore> MustOpen() {
    auto s = OpenStore();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(*s) : nullptr;
  }
  std::vector<std::string> Files() {
    auto names = fs_->ListDir(kDir);
    std::vector<std::string> v = names.ok() ? *names : std::vector<std::string>{};
    std::sort(v.begin(), v.end());
    return v;
  }

  std::shared_ptr<FaultInjectionFileSystem> fs_;
  logservice::testing::CapturingLog log_;
};

TEST_F(PageStoreTest, CreatesEmptyAtTheInitialLsn) {
  OpenReport report;
  auto s = OpenStore(false, &report);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(report.created);
  const StoreState st = (*s)->state();
  EXPECT_EQ(st.ingested_lsn, 100u);
  EXPECT_EQ(st.persisted_lsn, 100u);
  EXPECT_EQ(st.gc_horizon, 100u);
  EXPECT_EQ(Files(), std::vector<std::string>{"MANIFEST"});
  auto plan = (*s)->Select(kA, 100);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->image);
  EXPECT_TRUE(plan->records.empty());
}

TEST_F(PageStoreTest, ReadsFromMemoryThenFromTheDeltaFileThenAfterReopen) {
  auto store = MustOpen();
  // Two records of A in one mini-transaction keep their order; B in the next.
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 3), Delta(kA, 100, 150, 2, 3), Delta(kB, 100, 150, 3, 0)}, 150));
  ASSERT_OK(store->Ingest({Delta(kA, 150, 180, 4, 0)}, 200));
  auto check = [&](PageStore& s) {
    auto plan = s.Select(kA, 160);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_EQ(plan->records.size(), 2u);
    EXPECT_EQ(plan->records[0], Delta(kA, 100, 150, 1, 3));
    EXPECT_EQ(plan->records[1], Delta(kA, 100, 150, 2, 3));
    plan = s.Select(kA, 200);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->records.size(), 3u);
    plan = s.Select(kA, 149);
    ASSERT_TRUE(plan.ok());
    EXPECT_TRUE(plan->records.empty()) << "a request inside a mini-transaction sees none of it";
  };
  check(*store);
  EXPECT_EQ(store->state().memory_records, 4u);
  ASSERT_OK(store->Freeze(std::string("directory@200")));
  EXPECT_EQ(store->state().persisted_lsn, 200u);
  EXPECT_EQ(store->state().memory_records, 0u);
  EXPECT_EQ(store->state().delta_files, 1u);
  check(*store);
  store.reset();
  store = MustOpen();
  check(*store);
  EXPECT_EQ(store->directory_snapshot(), "directory@200");
  EXPECT_EQ(store->state().ingested_lsn, 200u);
  log_.VerifyNoUnexpected();
}

TEST_F(PageStoreTest, IngestRefusesWhatIsOutOfOrder) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  EXPECT_EQ(store->Ingest({Delta(kA, 140, 160, 2, 0)}, 160).code(), StatusCode::kInvalidArgument) << "starts below ingested";
  EXPECT_EQ(store->Ingest({Delta(kA, 150, 150, 2, 0)}, 160).code(), StatusCode::kInvalidArgument) << "ends at ingested";
  EXPECT_EQ(store->Ingest({Delta(kA, 150, 170, 2, 0)}, 160).code(), StatusCode::kInvalidArgument) << "beyond ingested_to";
  EXPECT_EQ(store->Ingest({Delta(kA, 150, 170, 2, 0), Delta(kB, 150, 160, 3, 0)}, 170).code(),
            StatusCode::kInvalidArgument) << "end LSNs going back";
  EXPECT_EQ(store->Ingest({Image(kA, 150, 160, {}, 1)}, 170).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->Ingest({}, 140).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->state().memory_records, 1u) << "nothing of a refused batch was added";
  EXPECT_EQ(store->Select(kA, 151).status().code(), StatusCode::kInvalidArgument) << "above ingested";
}

TEST_F(PageStoreTest, ImagesCutTheChainAndCarryThePageLsn) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  ASSERT_OK(store->Ingest({Delta(kA, 150, 180, 2, 0)}, 200));
  ASSERT_OK(store->Freeze());
  ASSERT_OK(store->Ingest({Delta(kA, 200, 250, 3, 0)}, 250));
  EXPECT_EQ(store->WriteImages(260, {Image(kA, 180, 260, {}, 1)}).code(), StatusCode::kInvalidArgument) << "above ingested";
  EXPECT_EQ(store->WriteImages(190, {Image(kA, 195, 190, {}, 1)}).code(), StatusCode::kInvalidArgument) << "page LSN above version";
  EXPECT_EQ(store->WriteImages(190, {Image(kA, 180, 190, {}, 1), Image(kA, 180, 190, {}, 1)}).code(),
            StatusCode::kInvalidArgument) << "two images of one page";
  ASSERT_OK(store->WriteImages(190, {Image(kA, 180, 190, ToyPage{2, 5}, 1)}));
  auto plan = store->Select(kA, 250);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan->image);
  EXPECT_EQ(plan->image->end_lsn, 190u);
  EXPECT_EQ(plan->image->start_lsn, 180u);
  ASSERT_EQ(plan->records.size(), 1u);
  EXPECT_EQ(plan->records[0].end_lsn, 250u);
  plan = store->Select(kA, 185);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->image) << "an image newer than the request is not a base";
  EXPECT_EQ(plan->records.size(), 2u);
  // Images above persisted_lsn survive a reopen; their records come back by re-ingest.
  ASSERT_OK(store->WriteImages(250, {Image(kA, 250, 250, ToyPage{3, 6}, 1)}));
  store.reset();
  store = MustOpen();
  EXPECT_EQ(store->state().ingested_lsn, 200u);
  EXPECT_EQ(store->state().image_files, 2u);
  ASSERT_OK(store->Ingest({Delta(kA, 200, 250, 3, 0)}, 250));
  plan = store->Select(kA, 250);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->image->end_lsn, 250u);
  EXPECT_TRUE(plan->records.empty());
}

TEST_F(PageStoreTest, PolicyCountsRecordsSinceTheNewestImage) {
  auto store = MustOpen();
  Lsn lsn = 100;
  for (int i = 0; i < 10; ++i, lsn += 10) ASSERT_OK(store->Ingest({Delta(kA, lsn, lsn + 10, i + 1, 100)}, lsn + 10));
  ASSERT_OK(store->Ingest({Delta(kB, lsn, lsn + 10, 50, 5000)}, lsn + 10));
  lsn += 10;
  ASSERT_OK(store->Freeze());
  auto needs = store->PagesNeedingImages(ImagePolicy{5, 1u << 20});
  ASSERT_TRUE(needs.ok());
  ASSERT_EQ(needs->size(), 1u);
  EXPECT_EQ((*needs)[0].page, kA);
  EXPECT_EQ((*needs)[0].records, 10u);
  needs = store->PagesNeedingImages(ImagePolicy{100, 4000});
  ASSERT_TRUE(needs.ok());
  ASSERT_EQ(needs->size(), 1u);
  EXPECT_EQ((*needs)[0].page, kB);
  // An image inside the delta file's range: only the records after it count.
  ASSERT_OK(store->WriteImages(160, {Image(kA, 160, 160, {}, 1)}));
  ASSERT_OK(store->Ingest({Delta(kA, lsn, lsn + 10, 99, 0)}, lsn + 10));
  needs = store->PagesNeedingImages(ImagePolicy{1, 1u << 20});
  ASSERT_TRUE(needs.ok());
  ASSERT_EQ(needs->size(), 2u);
  EXPECT_EQ((*needs)[0].page, kA);
  EXPECT_EQ((*needs)[0].image_version, 160u);
  EXPECT_EQ((*needs)[0].records, 5u);  // 170, 180, 190, 200 from the file, one from memory
}

TEST_F(PageStoreTest, GcWaitsForImagesThenDropsAndKeepsAnswers) {
  auto store = MustOpen();
  ASSERT_OK(store->WriteImages(100, {Image(kA, 90, 100, ToyPage{0, 1}, 1)}));
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0), Delta(kB, 100, 150, 2, 0)}, 150));
  ASSERT_OK(store->Freeze());
  ASSERT_OK(store->Ingest({Delta(kA, 150, 250, 3, 0)}, 300));
  ASSERT_OK(store->Freeze());
  const ToyPage a300 = testing::Reconstruct(*store->Select(kA, 300));
  auto r = store->CollectGarbage(200);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->delta_files_removed, 0u);
  EXPECT_EQ(r->pages_needing_images, (std::vector<PageId>{kA, kB}));
  EXPECT_EQ(store->state().gc_horizon, 200u);
  const ToyPage a200 = testing::Reconstruct(*store->Select(kA, 200));
  ASSERT_OK(store->WriteImages(200, {Image(kA, 150, 200, a200, 1),
                                     Image(kB, 150, 200, testing::Reconstruct(*store->Select(kB, 200)), 1)}));
  r = store->CollectGarbage(200);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->delta_files_removed, 1u);
  EXPECT_EQ(r->image_files_removed, 1u) << "the seed image is superseded below the horizon";
  EXPECT_TRUE(r->pages_needing_images.empty());
  EXPECT_EQ(Files().size(), 3u) << "MANIFEST, one delta file, one image file";
  EXPECT_EQ(testing::Reconstruct(*store->Select(kA, 300)), a300);
  // Below the horizon: the image at 200 has page LSN 150.
  auto below = store->Select(kA, 160);
  ASSERT_TRUE(below.ok());
  EXPECT_EQ(below->outcome, ReadPlan::Outcome::kReady);
  EXPECT_EQ(testing::Reconstruct(*below), a200);
  below = store->Select(kA, 120);
  ASSERT_TRUE(below.ok());
  EXPECT_EQ(below->outcome, ReadPlan::Outcome::kBelowHorizon);
  EXPECT_EQ(below->image_version, 200u);
  EXPECT_EQ(below->image_page_lsn, 150u);
  EXPECT_NE(below->reason.find("120"), std::string::npos);
  EXPECT_NE(below->reason.find("150"), std::string::npos);
  EXPECT_EQ(store->CollectGarbage(150).status().code(), StatusCode::kInvalidArgument) << "the horizon never goes back";
  EXPECT_EQ(store->CollectGarbage(301).status().code(), StatusCode::kInvalidArgument) << "not above persisted";
  store.reset();
  store = MustOpen();
  EXPECT_EQ(store->state().gc_horizon, 200u);
  EXPECT_EQ(testing::Reconstruct(*store->Select(kA, 300)), a300);
}

TEST_F(PageStoreTest, OpenRemovesOrphansAndLeavesUnknownFiles) {
  auto store = MustOpen();
  store.reset();
  ASSERT_OK(fs_->OverwriteFile(kDir + "/0000000000000001.delta", "half a file"));
  ASSERT_OK(fs_->OverwriteFile(kDir + "/0000000000000002.image.tmp", "x"));
  ASSERT_OK(fs_->OverwriteFile(kDir + "/MANIFEST.tmp", "x"));
  ASSERT_OK(fs_->OverwriteFile(kDir + "/notes.txt", "operator's"));
  log_.Expect("event=unknown_file name=notes.txt", "the test put a file the store does not own there");
  OpenReport report;
  auto s = OpenStore(false, &report);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(report.orphans_removed, 3u);
  EXPECT_EQ(Files(), (std::vector<std::string>{"MANIFEST", "notes.txt"}));
  log_.VerifyNoUnexpected();
}

TEST_F(PageStoreTest, ListedFileMissingOrDamagedIsCorruption) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  ASSERT_OK(store->Freeze());
  store.reset();
  const std::string path = kDir + "/0000000000000001.delta";
  const std::string good = *fs_->FileContents(path);
  // A damaged block: Open (footer and index only) succeeds, the read names file and offset.
  ASSERT_OK(fs_->FlipBit(path, format::kFileHeaderSize + format::kBlockHeaderSize + 3, 0));
  store = MustOpen();
  auto plan = store->Select(kA, 150);
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(plan.status().is_data_loss());
  EXPECT_NE(plan.status().message().find(path + " at offset 64"), std::string::npos) << plan.status().message();
  EXPECT_TRUE(store->VerifyFiles().is_data_loss());
  store.reset();
  EXPECT_TRUE(OpenStore(true).status().is_data_loss()) << "verify_blocks_at_open reads every block";
  // The footer: Open refuses.
  ASSERT_OK(fs_->OverwriteFile(path, good));
  ASSERT_OK(fs_->FlipBit(path, good.size() - 10, 2));
  EXPECT_TRUE(OpenStore().status().is_data_loss());
  // The listed name holding other bytes of the same size: refused by its checks.
  std::string other = good;
  other[format::kFileHeaderSize + format::kBlockHeaderSize] ^= 1;
  ASSERT_OK(fs_->OverwriteFile(path, other));
  EXPECT_TRUE(OpenStore(true).status().is_data_loss());
  ASSERT_OK(fs_->OverwriteFile(path, good));
  ASSERT_TRUE(OpenStore(true).ok());
  ASSERT_OK(fs_->Remove(path));
  auto missing = OpenStore();
  EXPECT_TRUE(missing.status().is_data_loss());
  EXPECT_NE(missing.status().message().find("listed in the manifest but missing"), std::string::npos);
}

TEST_F(PageStoreTest, EveryTruncationAndBitFlipOfTheManifestIsRefused) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  ASSERT_OK(store->Freeze(std::string("dir")));
  ASSERT_OK(store->WriteImages(150, {Image(kA, 150, 150, {}, 1)}));
  store.reset();
  const std::string path = kDir + "/MANIFEST";
  const std::string good = *fs_->FileContents(path);
  for (std::size_t n = 0; n < good.size(); ++n) {
    ASSERT_OK(fs_->OverwriteFile(path, good.substr(0, n)));
    auto s = OpenStore();
    ASSERT_TRUE(s.status().is_data_loss()) << "truncation to " << n << ": " << s.status().ToString();
  }
  for (std::size_t off = 0; off < good.size(); ++off)
    for (int bit = 0; bit < 8; ++bit) {
      ASSERT_OK(fs_->OverwriteFile(path, good));
      ASSERT_OK(fs_->FlipBit(path, off, bit));
      ASSERT_TRUE(OpenStore().status().is_data_loss()) << "flip of bit " << bit << " at " << off;
    }
  ASSERT_OK(fs_->OverwriteFile(path, good));
  ASSERT_TRUE(OpenStore().ok());
}

TEST_F(PageStoreTest, FailedLayerWriteLeavesTheStoreAsItWas) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  fs_->FailOp(FaultOp::kAppend, ENOSPC);
  const Status s = store->Freeze();
  EXPECT_EQ(s.code(), StatusCode::kNoSpace) << s.ToString();
  EXPECT_TRUE(s.retryable());
  EXPECT_EQ(store->state().memory_records, 1u);
  EXPECT_EQ(store->state().persisted_lsn, 100u);
  ASSERT_OK(store->Ingest({Delta(kA, 150, 160, 2, 0)}, 160));
  auto plan = store->Select(kA, 160);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->records.size(), 2u) << "records are back, in order";
  EXPECT_EQ(Files(), std::vector<std::string>{"MANIFEST"}) << "the temporary file was removed";
  ASSERT_OK(store->Freeze());
  EXPECT_EQ(store->state().persisted_lsn, 160u);
  fs_->FailOp(FaultOp::kSync, EIO);
  EXPECT_FALSE(store->WriteImages(160, {Image(kA, 160, 160, {}, 1)}).ok());
  ASSERT_OK(store->WriteImages(160, {Image(kA, 160, 160, {}, 1)}));
}

TEST_F(PageStoreTest, FailedManifestWriteNeedsAReopen) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  // The layer file's rename succeeds; the manifest's rename (the second) fails.
  fs_->FailOp(FaultOp::kRename, EIO, 1);
  EXPECT_EQ(store->Freeze().code(), StatusCode::kNeedsRecovery);
  EXPECT_EQ(store->Freeze().code(), StatusCode::kNeedsRecovery);
  EXPECT_EQ(store->CollectGarbage(100).status().code(), StatusCode::kNeedsRecovery);
  auto plan = store->Select(kA, 150);
  ASSERT_TRUE(plan.ok()) << "reads go on from memory";
  EXPECT_EQ(plan->records.size(), 1u);
  store.reset();
  store = MustOpen();
  EXPECT_EQ(store->state().persisted_lsn, 100u);
  EXPECT_EQ(Files(), std::vector<std::string>{"MANIFEST"}) << "the unlisted delta file was an orphan";
}

TEST_F(PageStoreTest, ManifestFieldsPersist) {
  auto store = MustOpen();
  ASSERT_OK(store->Ingest({Delta(kA, 100, 150, 1, 0)}, 150));
  ASSERT_OK(store->Freeze());
  ASSERT_OK(store->SetMaterializedLsn(150));
  EXPECT_EQ(store->SetMaterializedLsn(151).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->SetMaterializedLsn(120).code(), StatusCode::kInvalidArgument);
  ASSERT_OK(store->SetPinLsn(140));
  const std::uint64_t seq = store->state().manifest_sequence;
  store.reset();
  store = MustOpen();
  EXPECT_EQ(store->state().materialized_lsn, 150u);
  EXPECT_EQ(store->state().pin_lsn, 140u);
  EXPECT_EQ(store->state().manifest_sequence, seq);
}

}  // namespace
}  // namespace strata::pageserver
