// Reconstruction selection against the brute-force model (store_model.h):
// seeded random workloads of ingest, freeze, image writes driven by the
// policy query, GC at random horizons and reopens, with every Select
// compared to the exact plan the model computes, and GC checked to keep
// every answer at or above its horizon identical. Replay a failure with
// STRATA_TEST_SEED=<printed seed>.
#include <gtest/gtest.h>

#include "store_model.h"
#include "storage/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::pageserver {
namespace {

using logservice::FaultInjectionFileSystem;
using namespace testing;

constexpr Lsn kInitial = 10000;

class Driver {
 public:
  Driver(std::shared_ptr<logservice::FileSystem> fs, std::string dir, std::uint64_t seed)
      : fs_(std::move(fs)), dir_(std::move(dir)), gen_(seed, 3, 12), model_(kInitial) {}

  void Open() {
    StoreOptions o;
    o.fs = fs_;
    o.dir = dir_;
    o.initial_lsn = kInitial;
    o.log = log_.sink();
    store_.reset();
    auto s = PageStore::Open(o);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
  }

  void Reopen() {
    Open();
    ASSERT_OK(IngestGroups(*store_, model_.GroupsAbove(store_->state().persisted_lsn)));
  }

  void Check(PageId page, Lsn lsn) {
    auto got = store_->Select(page, lsn);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    const ReadPlan want = model_.ExpectedPlan(page, lsn);
    const std::string diff = DiffPlans(*got, want);
    ASSERT_EQ(diff, "") << "page " << page.space_id << ":" << page.page_no << " at " << lsn << " horizon "
                        << model_.horizon();
    if (got->outcome == ReadPlan::Outcome::kReady) {
      ASSERT_EQ(Reconstruct(*got), model_.PageAt(page, lsn)) << "page " << page.space_id << ":" << page.page_no
                                                            << " at " << lsn;
    }
  }

  Lsn RandomLsn(Lsn lo) {
    const Lsn hi = model_.ingested();
    return lo >= hi ? hi : lo + gen_.rng()() % (hi - lo + 1);
  }
  PageId RandomPage() {
    return PageId{static_cast<std::uint32_t>(gen_.rng()() % 3), static_cast<std::uint32_t>(gen_.rng()() % 12)};
  }

  void Gc() {
    const StoreState st = store_->state();
    const Lsn h = st.gc_horizon + gen_.rng()() % (st.persisted_lsn - st.gc_horizon + 1);
    // Answers at or above h before GC, to compare after.
    std::vector<std::tuple<PageId, Lsn, ToyPage>> before;
    for (int i = 0; i < 30; ++i) {
      const PageId p = RandomPage();
      const Lsn l = RandomLsn(h);
      auto plan = store_->Select(p, l);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      before.emplace_back(p, l, Reconstruct(*plan));
    }
    auto r = store_->CollectGarbage(h);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    model_.SetHorizon(h);
    if (!r->pages_needing_images.empty()) {
      std::vector<PageRecord> images;
      for (PageId p : r->pages_needing_images) images.push_back(model_.MakeImage(p, h));
      for (const auto& img : images) model_.AddImage(img);
      ASSERT_OK(store_->WriteImages(h, images));
      r = store_->CollectGarbage(h);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      ASSERT_TRUE(r->pages_needing_images.empty());
    }
    for (auto& [p, l, state] : before) {
      auto plan = store_->Select(p, l);
      ASSERT_TRUE(plan.ok()) << plan.status().ToString();
      ASSERT_EQ(plan->outcome, ReadPlan::Outcome::kReady);
      ASSERT_EQ(Reconstruct(*plan), state) << "GC changed page " << p.space_id << ":" << p.page_no << " at " << l;
    }
    gcs_ += 1;
  }

  void Step() {
    const int dice = static_cast<int>(gen_.rng()() % 100);
    if (dice < 55) {
      Group g = gen_.Next(model_.ingested());
      ASSERT_OK(store_->Ingest(g.records, g.end));
      model_.AddGroup(std::move(g));
    } else if (dice < 63) {
      ASSERT_OK(store_->Freeze(std::string("dir@") + std::to_string(model_.ingested())));
    } else if (dice < 68) {
      auto needs = store_->PagesNeedingImages(ImagePolicy{4, 400});
      ASSERT_TRUE(needs.ok()) << needs.status().ToString();
      const Lsn v = RandomLsn(model_.horizon());
      std::vector<PageRecord> images;
      for (const ImageNeed& n : *needs) images.push_back(model_.MakeImage(n.page, v));
      for (const auto& img : images) model_.AddImage(img);
      ASSERT_OK(store_->WriteImages(v, images));
    } else if (dice < 72) {
      Gc();
    } else if (dice < 74) {
      Reopen();
    } else {
      const PageId p = RandomPage();
      Check(p, RandomLsn(kInitial));
    }
  }

  void CheckEverything() {
    for (PageId p : model_.pages())
      for (int i = 0; i < 6; ++i) {
        Check(p, RandomLsn(kInitial));
        if (::testing::Test::HasFatalFailure()) return;
      }
  }

  void Run(int steps) {
    Open();
    auto seed = SeedImages(model_, 2, 12);  // space 2 has no seed: pages born from records
    ASSERT_OK(store_->WriteImages(kInitial, seed));
    for (int i = 0; i < steps; ++i) {
      Step();
      if (::testing::Test::HasFatalFailure()) return;
    }
    ASSERT_OK(store_->Freeze());
    CheckEverything();
    if (::testing::Test::HasFatalFailure()) return;
    ASSERT_OK(store_->VerifyFiles());
    Reopen();
    CheckEverything();
    EXPECT_GT(gcs_, 0);
    log_.VerifyNoUnexpected();
  }

  PageStore& store() { return *store_; }

 private:
  std::shared_ptr<logservice::FileSystem> fs_;
  std::string dir_;
  GroupGenerator gen_;
  Model model_;
  std::unique_ptr<PageStore> store_;
  logservice::testing::CapturingLog log_;
  int gcs_ = 0;
};

TEST(PageStoreSelection, RandomWorkloadsMatchTheModel) {
  for (std::uint64_t round = 0; round < 12; ++round) {
    const std::uint64_t seed = logservice::testing::TestSeed(round);
    SCOPED_TRACE("round " + std::to_string(round));
    auto fs = std::make_shared<FaultInjectionFileSystem>(seed);
    Driver d(fs, "/ps", seed);
    d.Run(1500);
    if (HasFatalFailure()) return;
  }
}

TEST(PageStoreSelection, RandomWorkloadOnTheRealDisk) {
  const std::uint64_t seed = logservice::testing::TestSeed(100);
  logservice::testing::ScratchDir dir;
  Driver d(logservice::PosixFileSystem(), dir.path() + "/ps", seed);
  d.Run(800);
}

}  // namespace
}  // namespace strata::pageserver
