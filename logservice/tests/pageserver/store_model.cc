// The page store's test model; see store_model.h.
#include "store_model.h"

#include <cstring>

#include "strata/rdma/little_endian.h"

namespace strata::pageserver::testing {

using rdma::GetFixed64;
using rdma::PutFixed64;

namespace {
std::uint64_t Mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
  return h * 0xBF58476D1CE4E5B9ull;
}
}  // namespace

ToyPage ApplyDelta(ToyPage p, const std::string& body) {
  p.count += 1;
  p.hash = Mix(p.hash, body.size() >= 8 ? GetFixed64(body.data()) : 0);
  return p;
}

std::string EncodeImage(const ToyPage& p, std::size_t padding) {
  std::string out(16 + padding, 'i');
  PutFixed64(out.data(), p.count);
  PutFixed64(out.data() + 8, p.hash);
  return out;
}

ToyPage DecodeImage(const std::string& body) {
  ToyPage p;
  if (body.size() < 16) return p;
  p.count = GetFixed64(body.data());
  p.hash = GetFixed64(body.data() + 8);
  return p;
}

ToyPage Reconstruct(const ReadPlan& plan) {
  ToyPage p = plan.image ? DecodeImage(plan.image->body) : ToyPage{};
  for (const PageRecord& r : plan.records) p = ApplyDelta(p, r.body);
  return p;
}

PageRecord Delta(PageId page, Lsn start, Lsn end, std::uint64_t id, std::size_t padding) {
  PageRecord r;
  r.page = page;
  r.start_lsn = start;
  r.end_lsn = end;
  r.kind = RecordKind::kDelta;
  r.body.assign(8 + padding, static_cast<char>('a' + id % 26));
  PutFixed64(r.body.data(), id);
  return r;
}

PageRecord Image(PageId page, Lsn page_lsn, Lsn version, const ToyPage& state, std::size_t padding) {
  PageRecord r;
  r.page = page;
  r.start_lsn = page_lsn;
  r.end_lsn = version;
  r.kind = RecordKind::kImage;
  r.body = EncodeImage(state, padding);
  return r;
}

void Model::AddGroup(Group g) {
  for (const PageRecord& r : g.records) records_[r.page].push_back(r);
  ingested_ = g.end;
  log_.push_back(std::move(g));
}

std::vector<PageId> Model::pages() const {
  std::set<PageId> s;
  for (const auto& [p, r] : records_) s.insert(p);
  for (const auto& [p, i] : images_) s.insert(p);
  return {s.begin(), s.end()};
}

std::optional<PageRecord> Model::NewestImageAtOrBelow(PageId page, Lsn lsn) const {
  auto it = images_.find(page);
  if (it == images_.end()) return std::nullopt;
  auto v = it->second.upper_bound(lsn);
  if (v == it->second.begin()) return std::nullopt;
  return std::prev(v)->second;
}

ToyPage Model::PageAt(PageId page, Lsn lsn) const {
  ToyPage p;
  Lsn from = 0;
  bool seeded = false;
  // The seed image (at the initial LSN) is the page's beginning, if any.
  if (auto it = images_.find(page); it != images_.end() && it->second.count(initial_)) {
    p = DecodeImage(it->second.at(initial_).body);
    from = initial_;
    seeded = true;
  }
  if (auto it = records_.find(page); it != records_.end())
    for (const PageRecord& r : it->second)
      if (r.end_lsn <= lsn && (!seeded || r.end_lsn > from)) p = ApplyDelta(p, r.body);
  return p;
}

Lsn Model::PageLsnAt(PageId page, Lsn lsn) const {
  Lsn out = 0;
  if (auto it = images_.find(page); it != images_.end() && it->second.count(initial_))
    out = it->second.at(initial_).start_lsn;
  if (auto it = records_.find(page); it != records_.end())
    for (const PageRecord& r : it->second)
      if (r.end_lsn <= lsn) out = std::max(out, r.end_lsn);
  return out;
}

PageRecord Model::MakeImage(PageId page, Lsn version) const {
  return Image(page, PageLsnAt(page, version), version, PageAt(page, version));
}

ReadPlan Model::ExpectedPlan(PageId page, Lsn lsn) const {
  ReadPlan plan;
  plan.request_lsn = lsn;
  plan.horizon = horizon_;
  if (lsn < horizon_) {
    auto img = NewestImageAtOrBelow(page, horizon_);
    if (img && img->end_lsn > lsn) {
      plan.image_version = img->end_lsn;
      plan.image_page_lsn = img->start_lsn;
      if (img->start_lsn <= lsn) {
        plan.image = *img;
      } else {
        plan.outcome = ReadPlan::Outcome::kBelowHorizon;
      }
      return plan;
    }
  }
  plan.image = NewestImageAtOrBelow(page, lsn);
  if (auto it = records_.find(page); it != records_.end())
    for (const PageRecord& r : it->second)
      if (r.end_lsn <= lsn && (!plan.image || r.end_lsn > plan.image->end_lsn)) plan.records.push_back(r);
  return plan;
}

std::vector<Group> Model::GroupsAbove(Lsn lsn) const {
  std::vector<Group> out;
  for (const Group& g : log_)
    if (g.end > lsn) out.push_back(g);
  return out;
}

std::string DiffPlans(const ReadPlan& got, const ReadPlan& want) {
  if (got.outcome != want.outcome)
    return std::string("outcome ") + (got.outcome == ReadPlan::Outcome::kReady ? "ready" : "below_horizon") +
           " want " + (want.outcome == ReadPlan::Outcome::kReady ? "ready" : "below_horizon") + " (" + got.reason + ")";
  if (got.outcome == ReadPlan::Outcome::kBelowHorizon) {
    if (got.image_version != want.image_version || got.image_page_lsn != want.image_page_lsn)
      return "below_horizon with image " + std::to_string(got.image_version) + " want " +
             std::to_string(want.image_version);
    return "";
  }
  if (got.image.has_value() != want.image.has_value()) return "image presence differs";
  if (got.image && !(*got.image == *want.image))
    return "image differs: version " + std::to_string(got.image->end_lsn) + " want " + std::to_string(want.image->end_lsn);
  if (got.records.size() != want.records.size())
    return "record count " + std::to_string(got.records.size()) + " want " + std::to_string(want.records.size());
  for (std::size_t i = 0; i < got.records.size(); ++i)
    if (!(got.records[i] == want.records[i])) return "record " + std::to_string(i) + " differs";
  return "";
}

Group GroupGenerator::Next(Lsn start) {
  Group g;
  g.start = start;
  g.end = start + 1 + rng_() % 300;
  const int n = 1 + static_cast<int>(rng_() % 4);
  for (int i = 0; i < n; ++i) {
    PageId page{static_cast<std::uint32_t>(rng_() % spaces_), static_cast<std::uint32_t>(rng_() % pages_)};
    g.records.push_back(Delta(page, g.start, g.end, next_id_++, rng_() % 100));
  }
  return g;
}

std::vector<PageRecord> SeedImages(Model& model, std::uint32_t spaces, std::uint32_t pages_per_space) {
  std::vector<PageRecord> out;
  for (std::uint32_t s = 0; s < spaces; ++s) {
    for (std::uint32_t p = 0; p < pages_per_space; ++p) {
      ToyPage t{0, Mix(s, p)};
      PageRecord img = Image(PageId{s, p}, model.initial() - 1, model.initial(), t, 40);
      model.AddImage(img);
      out.push_back(img);
    }
  }
  return out;
}

Status IngestGroups(PageStore& store, const std::vector<Group>& groups) {
  for (const Group& g : groups) STRATA_RETURN_IF_ERROR(store.Ingest(g.records, g.end));
  return Status::Ok();
}

}  // namespace strata::pageserver::testing
