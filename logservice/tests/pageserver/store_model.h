// Test support for the page store: a toy page format, a brute-force model
// of what Select must return, and a seeded workload that drives a store and
// the model side by side.
//
// Toy format (this layer never parses records; the toy only makes answers
// checkable): a delta body starts with the record's 8-byte id; a page is
// (count, hash) folded over the ids of the records applied to it; an image
// body is that pair plus padding. The model keeps every record ever
// ingested (the "log") and every image written, and computes the exact
// plan a correct store returns: the newest image at or below L (below the
// GC horizon: the section 7.4 rule) plus the records in (its version, L].
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "pageserver/store.h"

namespace strata::pageserver::testing {

struct ToyPage {
  std::uint64_t count = 0;
  std::uint64_t hash = 0;
  bool operator==(const ToyPage&) const = default;
};

ToyPage ApplyDelta(ToyPage p, const std::string& body);
std::string EncodeImage(const ToyPage& p, std::size_t padding);
ToyPage DecodeImage(const std::string& body);
// The page a plan builds (kReady plans only).
ToyPage Reconstruct(const ReadPlan& plan);

PageRecord Delta(PageId page, Lsn start, Lsn end, std::uint64_t id, std::size_t padding);
PageRecord Image(PageId page, Lsn page_lsn, Lsn version, const ToyPage& state, std::size_t padding = 8);

// One mini-transaction: its records, all with the group's [start, end).
struct Group {
  Lsn start = 0;
  Lsn end = 0;
  std::vector<PageRecord> records;
};

class Model {
 public:
  explicit Model(Lsn initial_lsn) : initial_(initial_lsn), ingested_(initial_lsn) {}

  void AddGroup(Group g);
  Lsn ingested() const { return ingested_; }
  Lsn initial() const { return initial_; }
  const std::vector<Group>& log() const { return log_; }
  std::vector<PageId> pages() const;

  // Images: what the store holds (newest <= horizon never dropped).
  void AddImage(const PageRecord& image) { images_[image.page][image.end_lsn] = image; }
  std::optional<PageRecord> NewestImageAtOrBelow(PageId page, Lsn lsn) const;
  void SetHorizon(Lsn h) { horizon_ = h; }
  Lsn horizon() const { return horizon_; }

  ToyPage PageAt(PageId page, Lsn lsn) const;     // from seed image (if any) and records
  Lsn PageLsnAt(PageId page, Lsn lsn) const;      // last change at or below lsn
  PageRecord MakeImage(PageId page, Lsn version) const;
  // The plan a correct store returns for (page, lsn).
  ReadPlan ExpectedPlan(PageId page, Lsn lsn) const;
  // Groups ending above `lsn`, for re-ingest after a reopen.
  std::vector<Group> GroupsAbove(Lsn lsn) const;

 private:
  Lsn initial_;
  Lsn ingested_;
  Lsn horizon_ = initial_;
  std::vector<Group> log_;
  std::map<PageId, std::vector<PageRecord>> records_;
  std::map<PageId, std::map<Lsn, PageRecord>> images_;
};

// Compares a store's plan with the model's; returns "" or what differs.
std::string DiffPlans(const ReadPlan& got, const ReadPlan& want);

// Random groups over a small page set, seeded.
class GroupGenerator {
 public:
  GroupGenerator(std::uint64_t seed, std::uint32_t spaces, std::uint32_t pages_per_space)
      : rng_(seed), spaces_(spaces), pages_(pages_per_space) {}
  Group Next(Lsn start);
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
  std::uint32_t spaces_, pages_;
  std::uint64_t next_id_ = 1;
};

// Seed images at the store's initial LSN for every page of the generator's set.
std::vector<PageRecord> SeedImages(Model& model, std::uint32_t spaces, std::uint32_t pages_per_space);

// Ingests `groups` into the store (one Ingest per group).
Status IngestGroups(PageStore& store, const std::vector<Group>& groups);

}  // namespace strata::pageserver::testing
