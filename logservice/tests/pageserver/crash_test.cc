// Crash consistency of the page store through FaultInjectionFileSystem: one
// seeded script (create, seed images, ingest, freeze, policy images, GC
// with the images it asks for, more freezes and GC) is crashed after every
// possible number of file-system mutations, in each crash mode (unsynced
// data dropped, torn, or kept). After each crash the store must reopen and
// hold either the state before the interrupted commit or the one after it,
// never a mix: the manifest sequence is the old or the next one, the LSNs
// match that state, no file it does not list is left, every listed file
// verifies, and, once the log above persisted_lsn is ingested again, every
// page at every checked LSN is exactly what the model says (nothing below
// persisted_lsn lost). The reopened store must then keep working.
#include <gtest/gtest.h>

#include "store_model.h"
#include "storage/fault_injection_file_system.h"
#include "test_support.h"

namespace strata::pageserver {
namespace {

using logservice::FaultInjectionFileSystem;
using namespace testing;
using CrashMode = FaultInjectionFileSystem::CrashMode;

constexpr Lsn kInitial = 1000;
const std::string kDir = "/ps";

// What the script had acknowledged, and what it was doing when it died.
struct Acked {
  bool opened = false;
  std::uint64_t sequence = 0;
  Lsn persisted = kInitial;
  Lsn horizon = kInitial;
  std::vector<PageRecord> images;  // committed
  // The interrupted mutation's effect, should its manifest have made it.
  Lsn next_persisted = kInitial;
  Lsn next_horizon = kInitial;
  std::vector<PageRecord> next_images;
};

class CrashScript {
 public:
  explicit CrashScript(std::uint64_t seed) : seed_(seed) {
    GroupGenerator gen(seed, 2, 6);
    Lsn lsn = kInitial;
    for (int i = 0; i < 24; ++i) {
      groups_.push_back(gen.Next(lsn));
      lsn = groups_.back().end;
    }
  }

  std::unique_ptr<PageStore> Open(std::shared_ptr<logservice::FileSystem> fs, Status* status) {
    StoreOptions o;
    o.fs = std::move(fs);
    o.dir = kDir;
    o.initial_lsn = kInitial;
    o.log = [](logservice::LogLevel, std::string_view) {};
    auto s = PageStore::Open(o);
    *status = s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // The model of everything committed (plus the interrupted mutation if it made it).
  Model ModelFor(const Acked& a, bool next) const {
    Model m(kInitial);
    for (const Group& g : groups_) m.AddGroup(g);
    for (const auto& img : a.images) m.AddImage(img);
    if (next)
      for (const auto& img : a.next_images) m.AddImage(img);
    m.SetHorizon(next ? a.next_horizon : a.horizon);
    return m;
  }

  // Runs until the first failure (the crash point). True if it finished.
  bool Run(std::shared_ptr<logservice::FileSystem> fs, Acked& a, std::unique_ptr<PageStore>* out) {
    Status st;
    auto store = Open(fs, &st);
    if (!store) return false;
    a.opened = true;
    auto ack = [&] {
      const StoreState s = store->state();
      a.sequence = s.manifest_sequence;
      a.persisted = a.next_persisted = s.persisted_lsn;
      a.horizon = a.next_horizon = s.gc_horizon;
      a.images.insert(a.images.end(), a.next_images.begin(), a.next_images.end());
      a.next_images.clear();
      return true;
    };
    ack();
    Model full(kInitial);
    for (const Group& g : groups_) full.AddGroup(g);
    auto images = [&](Lsn v, const std::vector<PageId>& pages) {
      a.next_images.clear();
      for (PageId p : pages) a.next_images.push_back(full.MakeImage(p, v));
      if (!store->WriteImages(v, a.next_images).ok()) return false;
      return ack();
    };
    auto freeze = [&] {
      a.next_persisted = store->state().ingested_lsn;
      if (!store->Freeze(std::string("dir@") + std::to_string(a.next_persisted)).ok()) return false;
      return ack();
    };
    auto gc = [&](Lsn h) {
      a.next_horizon = h;
      auto r = store->CollectGarbage(h);
      if (!r.ok()) return false;
      ack();
      if (r->pages_needing_images.empty()) return true;
      if (!images(h, r->pages_needing_images)) return false;
      a.next_horizon = h;
      return store->CollectGarbage(h).ok() && ack();
    };
    auto ingest = [&](int from, int to) {
      for (int i = from; i < to; ++i)
        if (!store->Ingest(groups_[i].records, groups_[i].end).ok()) return false;
      return true;
    };
    std::vector<PageId> all;
    for (std::uint32_t s = 0; s < 2; ++s)
      for (std::uint32_t p = 0; p < 6; ++p) all.push_back(PageId{s, p});
    std::vector<PageRecord> seed;
    for (PageId p : all) seed.push_back(Image(p, kInitial - 1, kInitial, ToyPage{p.page_no, p.space_id}, 30));
    a.next_images = seed;
    if (!store->WriteImages(kInitial, seed).ok()) return false;
    ack();
    for (const auto& img : seed) full.AddImage(img);
    bool ok = ingest(0, 8) && freeze() && ingest(8, 14);
    if (!ok) return false;
    auto needs = store->PagesNeedingImages(ImagePolicy{2, 1u << 20});
    if (!needs.ok()) return false;
    std::vector<PageId> pages;
    for (const auto& n : *needs) pages.push_back(n.page);
    const Lsn mid = groups_[11].end;
    ok = images(mid, pages) && freeze() && gc(groups_[6].end) && ingest(14, 24) && freeze() && gc(groups_[16].end) &&
         store->SetMaterializedLsn(groups_[16].end).ok() && ack();
    if (ok && out) *out = std::move(store);
    return ok;
  }

  // After a crash: reopen and check old-or-new, then use the store again.
  void CheckRecovered(std::shared_ptr<FaultInjectionFileSystem> fs, const Acked& a) {
    Status st;
    auto store = Open(fs, &st);
    ASSERT_TRUE(store) << "reopen failed: " << st.ToString();
    const StoreState s = store->state();
    bool next = false;
    if (a.opened) {
      ASSERT_TRUE(s.manifest_sequence == a.sequence || s.manifest_sequence == a.sequence + 1)
          << "sequence " << s.manifest_sequence << " acked " << a.sequence;
      next = s.manifest_sequence == a.sequence + 1;
      ASSERT_EQ(s.persisted_lsn, next ? a.next_persisted : a.persisted);
      ASSERT_EQ(s.gc_horizon, next ? a.next_horizon : a.horizon);
    }
    auto names = fs->ListDir(kDir);
    ASSERT_TRUE(names.ok());
    ASSERT_EQ(names->size(), 1 + s.delta_files + s.image_files) << "a file the manifest does not list survived Open";
    ASSERT_OK(store->VerifyFiles());
    Model m = ModelFor(a, next);
    ASSERT_OK(IngestGroups(*store, m.GroupsAbove(s.persisted_lsn)));
    CheckAll(*store, m);
    if (::testing::Test::HasFatalFailure()) return;
    // Still a working store: freeze what was re-ingested, GC a bit further.
    ASSERT_OK(store->Freeze());
    auto r = store->CollectGarbage(std::max(s.gc_horizon, groups_[8].end));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    m.SetHorizon(store->state().gc_horizon);
    CheckAll(*store, m);
  }

  void CheckAll(const PageStore& store, const Model& m) {
    for (std::uint32_t sp = 0; sp < 2; ++sp)
      for (std::uint32_t pg = 0; pg < 6; ++pg)
        for (std::size_t i = 0; i < groups_.size(); i += 3) {
          const PageId p{sp, pg};
          for (Lsn l : {groups_[i].end, groups_[i].end - 1}) {
            auto got = store.Select(p, l);
            ASSERT_TRUE(got.ok()) << got.status().ToString();
            ASSERT_EQ(DiffPlans(*got, m.ExpectedPlan(p, l)), "") << "page " << sp << ":" << pg << " at " << l;
            if (got->outcome == ReadPlan::Outcome::kReady) {
              ASSERT_EQ(Reconstruct(*got), m.PageAt(p, l));
            }
          }
        }
  }

 private:
  std::uint64_t seed_;
  std::vector<Group> groups_;
};

class PageStoreCrash : public ::testing::TestWithParam<CrashMode> {};

TEST_P(PageStoreCrash, EveryMutationPointLeavesOldOrNew) {
  const std::uint64_t seed = logservice::testing::TestSeed(33);
  CrashScript script(seed);
  int points = 0;
  for (int n = 0;; ++n) {
    auto fs = std::make_shared<FaultInjectionFileSystem>(seed + n);
    fs->CrashAfterMutations(n);
    Acked acked;
    const bool finished = script.Run(fs, acked, nullptr);
    if (finished && !fs->crash_point_reached()) break;
    fs->SimulateCrash(GetParam());
    SCOPED_TRACE("crash after " + std::to_string(n) + " mutations");
    script.CheckRecovered(fs, acked);
    if (HasFatalFailure()) return;
    ++points;
    ASSERT_LT(n, 5000) << "the script never finishes";
  }
  EXPECT_GT(points, 40);
  std::printf("[ crash    ] %d crash points checked\n", points);
}

INSTANTIATE_TEST_SUITE_P(Modes, PageStoreCrash,
                         ::testing::Values(CrashMode::kDropUnsynced, CrashMode::kTornUnsynced, CrashMode::kProcessOnly),
                         [](const auto& info) {
                           switch (info.param) {
                             case CrashMode::kDropUnsynced: return std::string("DropUnsynced");
                             case CrashMode::kTornUnsynced: return std::string("TornUnsynced");
                             default: return std::string("ProcessOnly");
                           }
                         });

TEST(PageStoreCrashFinal, TheScriptFinishesAndChecksOut) {
  const std::uint64_t seed = logservice::testing::TestSeed(34);
  CrashScript script(seed);
  auto fs = std::make_shared<FaultInjectionFileSystem>(seed);
  Acked acked;
  std::unique_ptr<PageStore> store;
  ASSERT_TRUE(script.Run(fs, acked, &store));
  store.reset();
  script.CheckRecovered(fs, acked);
}

}  // namespace
}  // namespace strata::pageserver
