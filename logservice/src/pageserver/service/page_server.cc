// PageServer: design comment in page_server.h.
#include "page_server.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "rpc.h"
#include "send_path.h"
#include "strata/logservice/follower.h"
#include "runtime/network.h"
#include "strata/rdma/rdma.h"

namespace strata::pageserver {

using svc::Frame;
using svc::PageResult;
using wire::Code;
using wire::MsgType;

namespace {

// ---- the tablespace directory, versioned by LSN (section 6) ----
// Each space id may have several incarnations (undo ids are reused), each
// [created, deleted) with its size changes. Snapshotted into the manifest
// at every freeze (PageStore::Freeze), so a restart resumes with it.
struct Incarnation {
  std::string name;
  Lsn created = 0, deleted = 0;  // deleted 0: live
  std::vector<std::pair<Lsn, std::uint32_t>> sizes;  // (lsn, pages), ascending
};

class SpaceDirectory {
 public:
  void Apply(const SpaceEvent& e) {
    auto& v = spaces_[e.space];
    switch (e.kind) {
      case SpaceEvent::Kind::kCreate: v.push_back(Incarnation{e.name, e.lsn, 0, {{e.lsn, e.size_pages}}}); break;
      case SpaceEvent::Kind::kExtend:
        if (!v.empty() && v.back().deleted == 0) v.back().sizes.emplace_back(e.lsn, e.size_pages);
        break;
      case SpaceEvent::Kind::kDelete:
        if (!v.empty() && v.back().deleted == 0) v.back().deleted = e.lsn;
        break;
      case SpaceEvent::Kind::kRename:
        if (!v.empty() && v.back().deleted == 0) v.back().name = e.name;
        break;
    }
  }
  // The incarnation of `space` at `lsn` (the newest created at or below it).
  const Incarnation* At(std::uint32_t space, Lsn lsn) const {
    auto it = spaces_.find(space);
    if (it == spaces_.end()) return nullptr;
    const Incarnation* found = nullptr;
    for (const auto& inc : it->second)
      if (inc.created <= lsn) found = &inc;
    return found;
  }
  static std::uint32_t SizeAt(const Incarnation& inc, Lsn lsn) {
    std::uint32_t size = 0;
    for (const auto& [at, pages] : inc.sizes)
      if (at <= lsn) size = pages;
    return size;
  }
  std::vector<svc::SpaceInfo> List(Lsn lsn) const {
    std::vector<svc::SpaceInfo> out;
    for (const auto& [id, v] : spaces_) {
      const Incarnation* inc = At(id, lsn);
      if (!inc || (inc->deleted != 0 && inc->deleted <= lsn)) continue;
      out.push_back(svc::SpaceInfo{id, inc->name, 0, SizeAt(*inc, lsn), inc->created, 0});
    }
    return out;
  }
  std::size_t size() const { return spaces_.size(); }

  std::string Encode() const {
    std::string o;
    auto put = [&](std::uint64_t v) { for (int i = 0; i < 8; ++i) o.push_back(static_cast<char>(v >> (8 * i))); };
    put(1);  // snapshot version
    put(spaces_.size());
    for (const auto& [id, v] : spaces_) {
      put(id);
      put(v.size());
      for (const auto& inc : v) {
        put(inc.name.size());
        o += inc.name;
        put(inc.created);
        put(inc.deleted);
        put(inc.sizes.size());
        for (const auto& [at, pages] : inc.sizes) { put(at); put(pages); }
      }
    }
    return o;
  }
  Status Decode(std::string_view in) {
    spaces_.clear();
    if (in.empty()) return Status::Ok();  // a store that never froze a directory
    std::size_t at = 0;
    bool ok = true;
    auto get = [&]() -> std::uint64_t {
      if (in.size() - at < 8) { ok = false; return 0; }
      std::uint64_t x = 0;
      for (int i = 0; i < 8; ++i) x |= std::uint64_t(static_cast<unsigned char>(in[at + i])) << (8 * i);
      at += 8;
      return x;
    };
    if (get() != 1) return Status::Corruption("tablespace directory snapshot: unknown version");
    const std::uint64_t n = get();
    for (std::uint64_t k = 0; ok && k < n && k < (1u << 20); ++k) {
      const auto id = static_cast<std::uint32_t>(get());
      const std::uint64_t m = get();
      auto& v = spaces_[id];
      for (std::uint64_t j = 0; ok && j < m && j < (1u << 16); ++j) {
        Incarnation inc;
        const std::uint64_t len = get();
        if (!ok || len > in.size() - at) { ok = false; break; }
        inc.name.assign(in.substr(at, len));
        at += len;
        inc.created = get();
        inc.deleted = get();
        const std::uint64_t s = get();
        for (std::uint64_t q = 0; ok && q < s && q < (1u << 20); ++q) {
          const Lsn l = get();
          inc.sizes.emplace_back(l, static_cast<std::uint32_t>(get()));
        }
        v.push_back(std::move(inc));
      }
    }
    if (!ok || at != in.size()) return Status::Corruption("tablespace directory snapshot: malformed");
    return Status::Ok();
  }

 private:
  std::map<std::uint32_t, std::vector<Incarnation>> spaces_;
};

PageResult Error(Code c, std::string why, Lsn effective = 0) {
  PageResult r;
  r.code = c;
  r.error = std::move(why);
  r.effective_lsn = effective;
  return r;
}

}  // namespace

struct PageServer::Impl {
  PageServerOptions opt;
  std::shared_ptr<logservice::FileSystem> fs;
  std::unique_ptr<PageStore> store;
  std::unique_ptr<logservice::client::LogFollower> follower;
  std::shared_ptr<logservice::Network> network;
  std::unique_ptr<rdma::Listener> listener;
  std::string address;

  mutable std::mutex mu;  // directory, frontiers, the ingest error; waiters wait on cv
  std::condition_variable cv;
  SpaceDirectory dir;
  Lsn ingested = 0;
  std::string ingest_error;  // non-empty: ingest is stuck (reason)
  bool stopping = false;

  std::thread ingest_thread;
  std::vector<std::thread> workers;
  struct Work {
    std::shared_ptr<rdma::Connection> conn;
    Frame frame;
  };
  std::mutex q_mu;
  std::condition_variable q_cv;
  std::deque<Work> queue;

  std::atomic<std::uint64_t> builds{0}, helper_applies{0};
  std::atomic<std::uint64_t> getpage_requests{0}, getpage_errors{0}, ingest_waits{0}, records_ingested{0},
      bytes_followed{0}, freezes{0}, images_written{0}, pin_moves{0}, bad_messages{0}, gc_runs{0}, gc_files_removed{0};

  void Log(std::string_view level, const std::string& line) {
    if (opt.log) opt.log(level, "pageserver=" + opt.name + " " + line);
  }

  // ---- ingest ----
  void IngestLoop() {
    // A block format (InnoDB) parses whole blocks from the one holding
    // parsed_to: follow from that block's start and keep it in buf.
    const Lsn block = opt.helper->parse_block_size();
    Lsn parsed_to = store->state().ingested_lsn;
    Lsn stable_end = block > 0 ? parsed_to / block * block : parsed_to;  // next LSN to follow
    Lsn buf_start = stable_end;  // block > 0: buf holds [buf_start, stable_end)
    std::string buf;  // block == 0: bytes [parsed_to, stable_end) when parsed_to <= stable_end
    Lsn tail_seen = 0;
    auto last_freeze = std::chrono::steady_clock::now();
    std::string last_error;
    for (;;) {
      {
        std::lock_guard<std::mutex> l(mu);
        if (stopping) return;
      }
      auto b = follower->Follow(stable_end, 1u << 20, std::chrono::milliseconds(100), tail_seen);
      if (!b.ok()) {
        const std::string why = b.status().ToString();
        if (why != last_error) Log("warn", "event=follow_failed at=" + std::to_string(stable_end) + " reason=\"" + why + "\"");
        last_error = why;
        SetError(b.status().code() == logservice::client::Code::kNotFound
                     ? "the log no longer holds LSN " + std::to_string(stable_end) + " (" + why + ")"
                     : std::string());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      last_error.clear();
      if (!b->bytes.empty()) {
        bytes_followed += b->bytes.size();
        if (block == 0 && parsed_to > stable_end) {
          const std::size_t skip = std::min<std::uint64_t>(parsed_to - stable_end, b->bytes.size());
          buf.append(b->bytes, skip, std::string::npos);
        } else {
          buf += b->bytes;
        }
        stable_end += b->bytes.size();
      }
      // What to parse: the immutable bytes after parsed_to, then the
      // acknowledged tail's bytes (parsed again as the block grows).
      std::string work = buf;
      Lsn work_from = parsed_to;
      if (block > 0) {
        // Whole blocks from the one holding parsed_to, the tail as its image.
        if (b->tail_data_end > 0 && b->tail_block == stable_end) {
          tail_seen = b->tail_data_end;
          if (b->tail_data_end > parsed_to) work += b->tail_image;
        } else if (b->bytes.empty()) {
          MaybeFreeze(&last_freeze);
          continue;
        }
      } else if (b->tail_data_end > 0 && b->tail_block == stable_end) {
        tail_seen = b->tail_data_end;
        const Lsn from = std::max(parsed_to, b->tail_block);
        if (from < b->tail_data_end && parsed_to <= stable_end)
          work.append(b->tail_image, from - b->tail_block, b->tail_data_end - from);
        else if (from < b->tail_data_end)
          work.assign(b->tail_image, from - b->tail_block, b->tail_data_end - from);
      } else if (b->bytes.empty()) {
        MaybeFreeze(&last_freeze);
        continue;
      }
      if (block == 0 && parsed_to > stable_end) work_from = parsed_to;
      auto p = opt.helper->Parse(work_from, work);
      if (!p.ok()) {
        tail_seen = 0;  // the tail must come again: it was not ingested
        const std::string why = "parse at " + std::to_string(work_from) + ": " + p.status().message();
        if (why != last_error) Log("error", "event=ingest_failed reason=\"" + why + "\"");
        last_error = why;
        SetError(why);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (p->parsed_to > parsed_to) {
        const std::size_t nrec = p->records.size();
        Status s = store->Ingest(std::move(p->records), p->parsed_to);
        if (!s.ok()) {
          Log("error", "event=ingest_failed reason=\"" + s.message() + "\"");
          SetError("ingest: " + s.message());
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          continue;
        }
        records_ingested += nrec;
        if (block > 0) {
          const Lsn keep_from = std::min<Lsn>(p->parsed_to / block * block, stable_end);
          buf.erase(0, static_cast<std::size_t>(keep_from - buf_start));
          buf_start = keep_from;
        } else {
          const std::size_t consumed = static_cast<std::size_t>(p->parsed_to - parsed_to);
          buf.erase(0, std::min(consumed, buf.size()));
        }
        parsed_to = p->parsed_to;
        {
          std::lock_guard<std::mutex> l(mu);
          for (const auto& e : p->events) dir.Apply(e);
          ingested = parsed_to;
          ingest_error.clear();
        }
        cv.notify_all();
      }
      MaybeFreeze(&last_freeze);
    }
  }

  void SetError(const std::string& why) {
    std::lock_guard<std::mutex> l(mu);
    ingest_error = why;
  }

  // Persist what was ingested (one delta file + the directory snapshot, one
  // manifest commit), then move the pin on the log nodes, then record it.
  void MaybeFreeze(std::chrono::steady_clock::time_point* last) {
    const StoreState st = store->state();
    const auto now = std::chrono::steady_clock::now();
    if (st.ingested_lsn == st.persisted_lsn) return;
    if (st.memory_bytes < opt.freeze_bytes && now - *last < opt.freeze_interval) return;
    *last = now;
    std::string snapshot;
    {
      std::lock_guard<std::mutex> l(mu);
      snapshot = dir.Encode();
    }
    Status s = store->Freeze(snapshot);
    if (!s.ok()) {
      Log("error", "event=freeze_failed reason=\"" + s.message() + "\"");
      return;
    }
    ++freezes;
    const Lsn persisted = store->state().persisted_lsn;
    MovePin(persisted);
    MakeImages();
    Collect();
  }

  // GC at persisted - gc_history_bytes: the store drops what no answer at or
  // above the horizon needs; the pages that hold files back get images at
  // the horizon and the store is asked again.
  void Collect() {
    const StoreState st = store->state();
    if (opt.gc_history_bytes == 0 || st.persisted_lsn <= opt.gc_history_bytes) return;
    const Lsn h = st.persisted_lsn - opt.gc_history_bytes;
    if (h <= st.gc_horizon) return;
    auto r = store->CollectGarbage(h);
    if (r.ok() && !r->pages_needing_images.empty()) {
      std::vector<PageRecord> images;
      for (const PageId& page : r->pages_needing_images) {
        auto plan = store->Select(page, h);
        if (!plan.ok() || plan->outcome != ReadPlan::Outcome::kReady) continue;
        auto img = Build(page, *plan);
        auto page_lsn = img.ok() ? opt.helper->CheckImage(page, *img) : Result<Lsn>(img.status());
        if (page_lsn.ok() && *page_lsn <= h) images.push_back(PageRecord{page, *page_lsn, h, RecordKind::kImage, std::move(*img)});
      }
      const std::size_t count = images.size();
      Status s = images.empty() ? Status::Ok() : store->WriteImages(h, std::move(images));
      if (s.ok()) {
        images_written += count;
        r = store->CollectGarbage(h);
      } else {
        Log("warn", "event=gc_images_failed horizon=" + std::to_string(h) + " reason=\"" + s.message() + "\"");
      }
    }
    if (!r.ok()) {
      Log("warn", "event=gc_failed horizon=" + std::to_string(h) + " reason=\"" + r.status().message() + "\"");
      return;
    }
    ++gc_runs;
    gc_files_removed += r->delta_files_removed + r->image_files_removed;
    Log("info", "event=gc horizon=" + std::to_string(h) + " delta_files_removed=" +
                    std::to_string(r->delta_files_removed) + " image_files_removed=" +
                    std::to_string(r->image_files_removed) + " pages_holding_back=" +
                    std::to_string(r->pages_needing_images.size()));
  }

  void MovePin(Lsn persisted) {
    auto s = follower->SetPin(opt.name, persisted);
    if (!s.ok()) {
      // The old pin holds more than needed: safe; tried again at the next freeze.
      Log("warn", "event=pin_failed lsn=" + std::to_string(persisted) + " reason=\"" + s.ToString() + "\"");
      return;
    }
    ++pin_moves;
    Status ss = store->SetPinLsn(persisted);
    if (!ss.ok()) Log("warn", "event=pin_record_failed reason=\"" + ss.message() + "\"");
    Log("info", "event=pin_moved lsn=" + std::to_string(persisted));
  }

  // Images at the ingested LSN for the pages the policy names (section 7.3);
  // when every page that needed one got it, materialized_lsn moves to the
  // persisted LSN (every delta file up to it has the images it asked for).
  void MakeImages() {
    auto needs = store->PagesNeedingImages(opt.image_policy);
    if (!needs.ok()) return;
    const StoreState st = store->state();
    const Lsn at = st.ingested_lsn;
    std::vector<PageRecord> images;
    bool all = true;
    for (const auto& n : *needs) {
      auto plan = store->Select(n.page, at);
      Result<std::string> img = plan.ok() && plan->outcome == ReadPlan::Outcome::kReady
                                    ? Build(n.page, *plan)
                                    : Result<std::string>(Status::Corruption("no plan"));
      Result<Lsn> page_lsn = img.ok() ? opt.helper->CheckImage(n.page, *img) : Result<Lsn>(img.status());
      if (!page_lsn.ok() || *page_lsn > at) {
        all = false;  // GetPage names the failure when the page is asked for
        continue;
      }
      images.push_back(PageRecord{n.page, *page_lsn, at, RecordKind::kImage, std::move(*img)});
    }
    if (!images.empty()) {
      const std::size_t count = images.size();
      Status s = store->WriteImages(at, std::move(images));
      if (s.ok()) {
        images_written += count;
      } else {
        all = false;
        Log("warn", "event=images_failed reason=\"" + s.message() + "\"");
      }
    }
    if (all && st.persisted_lsn > st.materialized_lsn) {
      Status s = store->SetMaterializedLsn(st.persisted_lsn);
      if (!s.ok()) Log("warn", "event=materialized_failed reason=\"" + s.message() + "\"");
    }
  }

  Result<std::string> Build(PageId page, const ReadPlan& plan) {
    // An image with no record after it is the answer as it is: it passed
    // CheckImage, and the helper would only hand it back (a round trip to
    // another process per GetPage: most of a read of an unchanged page).
    ++builds;
    if (plan.image && plan.records.empty()) return plan.image->body;
    ++helper_applies;
    std::optional<std::string> base;
    if (plan.image) base = plan.image->body;
    return opt.helper->Apply(page, base, plan.records);
  }

  // ---- GetPage (section 8) ----
  PageResult GetPage(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn nms) {
    ++getpage_requests;
    PageResult r = GetPageImpl(space, page, request_lsn, nms);
    if (r.code != Code::kOk) ++getpage_errors;
    return r;
  }
  PageResult GetPageImpl(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn nms) {
    if (nms > request_lsn)
      return Error(Code::kInvalid, "not_modified_since " + std::to_string(nms) + " is above request_lsn " +
                                       std::to_string(request_lsn));
    Lsn eff;
    svc::SpaceInfo info;
    const Incarnation* inc = nullptr;
    std::uint32_t size = 0;
    {
      std::unique_lock<std::mutex> l(mu);
      if (ingested < nms) {
        ++ingest_waits;
        cv.wait_for(l, opt.wait_timeout, [&] { return ingested >= nms || stopping; });
      }
      if (ingested < nms)
        return Error(Code::kUnavailable, "ingested " + std::to_string(ingested) + ", waiting for " + std::to_string(nms) +
                                             (ingest_error.empty() ? "" : " (ingest: " + ingest_error + ")"));
      eff = std::min(request_lsn, ingested);
      // Before the LSN this page server was seeded at it has no history at
      // all: not "no such space" (the compute may well have had it), but
      // below what is kept.
      if (eff < opt.initial_lsn)
        return Error(Code::kBelowHorizon, "below_horizon: LSN " + std::to_string(eff) + " is before LSN " +
                                              std::to_string(opt.initial_lsn) + ", where this page server's history begins",
                     eff);
      inc = dir.At(space, eff);
      if (inc) size = SpaceDirectory::SizeAt(*inc, eff);
      if (!inc)
        return Error(Code::kSpaceUnknown, "space " + std::to_string(space) + " is unknown at LSN " + std::to_string(eff), eff);
      if (inc->deleted != 0 && inc->deleted <= eff)
        return Error(Code::kSpaceDeleted, "space " + std::to_string(space) + " was deleted at LSN " +
                                              std::to_string(inc->deleted), eff);
    }
    if (page >= size)
      return Error(Code::kBeyondSize, "page " + std::to_string(page) + " is beyond space " + std::to_string(space) +
                                          "'s size of " + std::to_string(size) + " pages at LSN " + std::to_string(eff), eff);
    const PageId id{space, page};
    auto plan = store->Select(id, eff);
    if (!plan.ok()) return Error(Code::kCorrupt, plan.status().message(), eff);
    if (plan->outcome == ReadPlan::Outcome::kBelowHorizon) return Error(Code::kBelowHorizon, plan->reason, eff);
    PageResult r;
    r.effective_lsn = eff;
    if (!plan->image && plan->records.empty()) {
      r.flags = wire::kNeverWritten;
      r.image.assign(opt.helper->physical_page_size(space), '\0');
      return r;
    }
    if (plan->image) {
      auto base_lsn = opt.helper->CheckImage(id, plan->image->body);
      if (!base_lsn.ok()) return Error(Code::kCorrupt, "stored image at " + std::to_string(plan->image->end_lsn) + ": " +
                                                           base_lsn.status().message(), eff);
    }
    auto img = Build(id, *plan);
    if (!img.ok()) {
      Log("error", "event=apply_failed space=" + std::to_string(space) + " page=" + std::to_string(page) +
                       " lsn=" + std::to_string(eff) + " reason=\"" + img.status().message() + "\"");
      return Error(Code::kApplyFailed, img.status().message(), eff);
    }
    auto page_lsn = opt.helper->CheckImage(id, *img);
    if (!page_lsn.ok()) return Error(Code::kApplyFailed, "built page fails its checks: " + page_lsn.status().message(), eff);
    if (*page_lsn > eff)
      return Error(Code::kApplyFailed, "built page has LSN " + std::to_string(*page_lsn) + " above " + std::to_string(eff), eff);
    r.page_lsn = *page_lsn;
    r.image = std::move(*img);
    return r;
  }

  // ---- PutImages (seeding) ----
  Frame PutImages(const Frame& req) {
    Frame rep;
    const StoreState st = store->state();
    if (req.lsn > st.ingested_lsn || req.lsn < st.gc_horizon) {
      rep.code = Code::kInvalid;
      rep.error = "images at " + std::to_string(req.lsn) + " outside [gc horizon " + std::to_string(st.gc_horizon) +
                  ", ingested " + std::to_string(st.ingested_lsn) + "]";
      return rep;
    }
    std::vector<PageRecord> images;
    for (const auto& i : req.images) {
      const PageId id{i.space, i.page};
      auto page_lsn = opt.helper->CheckImage(id, i.image);
      if (!page_lsn.ok() || *page_lsn > req.lsn) {
        rep.code = Code::kCorrupt;
        rep.error = page_lsn.ok() ? "image of " + std::to_string(i.space) + ":" + std::to_string(i.page) +
                                        " has page LSN " + std::to_string(*page_lsn) + " above " + std::to_string(req.lsn)
                                  : page_lsn.status().message();
        return rep;
      }
      images.push_back(PageRecord{id, *page_lsn, req.lsn, RecordKind::kImage, i.image});
    }
    Status s = store->WriteImages(req.lsn, std::move(images));
    if (!s.ok()) {
      rep.code = s.code() == logservice::StatusCode::kInvalidArgument ? Code::kInvalid : Code::kUnavailable;
      rep.error = s.message();
    } else {
      images_written += req.images.size();
      // A seeded tablespace enters the directory with the image that
      // describes it (InnoDB: its page 0), unless the log created it.
      std::lock_guard<std::mutex> l(mu);
      for (const auto& i : req.images) {
        auto created = opt.helper->SeedSpace(PageId{i.space, i.page}, i.image);
        const Incarnation* inc = created ? dir.At(i.space, req.lsn) : nullptr;
        if (created && (inc == nullptr || (inc->deleted != 0 && inc->deleted <= req.lsn))) {
          created->lsn = req.lsn;
          dir.Apply(*created);
        }
      }
    }
    return rep;
  }

  std::vector<std::pair<std::string, std::uint64_t>> StatusList() const {
    const StoreState st = store->state();
    std::size_t spaces;
    bool stuck;
    {
      std::lock_guard<std::mutex> l(mu);
      spaces = dir.size();
      stuck = !ingest_error.empty();
    }
    return {{"ingested_lsn", st.ingested_lsn},
            {"persisted_lsn", st.persisted_lsn},
            {"materialized_lsn", st.materialized_lsn},
            {"gc_horizon_lsn", st.gc_horizon},
            {"pin_lsn", st.pin_lsn},
            {"ingest_stuck", stuck ? 1u : 0u},
            {"delta_files", st.delta_files},
            {"image_files", st.image_files},
            {"disk_bytes", st.disk_bytes},
            {"memory_records", st.memory_records},
            {"pages", st.pages},
            {"spaces", spaces},
            {"getpage_requests", getpage_requests.load()},
            {"getpage_errors", getpage_errors.load()},
            {"pages_built", builds.load()},
            {"helper_applies", helper_applies.load()},
            {"ingest_waits", ingest_waits.load()},
            {"records_ingested", records_ingested.load()},
            {"bytes_followed", bytes_followed.load()},
            {"freezes", freezes.load()},
            {"images_written", images_written.load()},
            {"pin_moves", pin_moves.load()},
            {"gc_runs", gc_runs.load()},
            {"gc_files_removed", gc_files_removed.load()},
            {"bad_messages", bad_messages.load()}};
  }

  Frame Handle(const Frame& req) {
    Frame rep;
    rep.request_id = req.request_id;
    rep.type = static_cast<MsgType>(static_cast<std::uint8_t>(req.type) + 1);
    switch (req.type) {
      case MsgType::kGetPageReq: {
        const auto& p = req.pages.at(0);
        rep.results = {GetPage(p.space, p.page, req.lsn, p.not_modified_since)};
        break;
      }
      case MsgType::kGetPagesReq:
        for (const auto& p : req.pages) rep.results.push_back(GetPage(p.space, p.page, req.lsn, p.not_modified_since));
        break;
      case MsgType::kSpaceListReq: {
        std::lock_guard<std::mutex> l(mu);
        rep.spaces = dir.List(std::min(req.lsn, ingested));
        if (rep.spaces.size() > wire::kMaxSpaces) rep.spaces.resize(wire::kMaxSpaces);
        break;
      }
      case MsgType::kSpaceSizeReq:
      case MsgType::kSpaceExistsReq: {
        std::lock_guard<std::mutex> l(mu);
        const Lsn at = std::min(req.lsn, ingested);
        const std::uint32_t id = req.spaces.at(0).space;
        const Incarnation* inc = dir.At(id, at);
        svc::SpaceInfo info;
        info.space = id;
        if (inc) {
          info.created_lsn = inc->created;
          info.deleted_lsn = inc->deleted;
          info.size_pages = SpaceDirectory::SizeAt(*inc, at);
        }
        const bool live = inc && (inc->deleted == 0 || inc->deleted > at);
        if (req.type == MsgType::kSpaceExistsReq) {
          rep.exists = live;
          rep.spaces = {info};
        } else if (!inc) {
          rep.code = Code::kSpaceUnknown;
          rep.error = "space " + std::to_string(id) + " is unknown at LSN " + std::to_string(at);
        } else if (!live) {
          rep.code = Code::kSpaceDeleted;
          rep.error = "space " + std::to_string(id) + " was deleted at LSN " + std::to_string(inc->deleted);
        } else {
          rep.spaces = {info};
        }
        break;
      }
      case MsgType::kStatusReq: rep.status = StatusList(); break;
      case MsgType::kPutImagesReq: {
        Frame r = PutImages(req);
        rep.code = r.code;
        rep.error = r.error;
        break;
      }
      default:
        rep.type = MsgType::kErrorResp;
        rep.code = Code::kInvalid;
        rep.error = "not a request: " + std::string(svc::TypeName(req.type));
        break;
    }
    return rep;
  }

  // ---- network ----
  rdma::ConnectionHandlers Accept(const std::shared_ptr<rdma::Connection>& c) {
    std::weak_ptr<rdma::Connection> weak = c;
    rdma::ConnectionHandlers h;
    h.on_message = [this, weak](rdma::Connection& conn, const rdma::Message& m) {
      Frame f;
      const auto payload = m.payload();
      Status s = svc::Decode(std::string_view(reinterpret_cast<const char*>(payload.data()), payload.size()), &f);
      if (s.ok() && wire::IsResponse(f.type)) s = Status::InvalidArgument("a reply sent to the page server");
      if (!s.ok()) {
        ++bad_messages;
        Log("warn", "event=bad_message peer=" + conn.peer_address() + " reason=\"" + s.message() + "\"");
        Frame err;
        err.type = MsgType::kErrorResp;
        err.code = Code::kInvalid;
        err.error = s.message();
        (void)logservice::repl::SendMessage(conn, svc::Encode(err), std::chrono::milliseconds(100));
        conn.Close();
        return;
      }
      auto sp = weak.lock();
      if (!sp) return;
      std::lock_guard<std::mutex> l(q_mu);
      queue.push_back(Work{std::move(sp), std::move(f)});
      q_cv.notify_one();
    };
    h.on_close = [](rdma::Connection&, const rdma::Status&) {};
    return h;
  }

  void WorkerLoop() {
    for (;;) {
      Work w;
      {
        std::unique_lock<std::mutex> l(q_mu);
        q_cv.wait(l, [&] { return stopping_workers || !queue.empty(); });
        if (queue.empty()) return;
        w = std::move(queue.front());
        queue.pop_front();
      }
      const Frame rep = Handle(w.frame);
      rdma::Status s = logservice::repl::SendMessage(*w.conn, svc::Encode(rep), std::chrono::milliseconds(2000));
      if (!s.ok() && s.code() != rdma::StatusCode::kClosed)
        Log("info", "event=reply_dropped peer=" + w.conn->peer_address() + " reason=\"" + s.message() + "\"");
    }
  }
  bool stopping_workers = false;
};

Result<std::unique_ptr<PageServer>> PageServer::Start(PageServerOptions options) {
  auto impl = std::make_unique<Impl>();
  Impl& p = *impl;
  p.opt = std::move(options);
  if (!p.opt.helper) return Status::InvalidArgument("a redo-apply helper is required");
  if (p.opt.name.empty() || p.opt.name.size() > 64) return Status::InvalidArgument("the page server's name has 1..64 bytes");
  p.fs = p.opt.fs ? p.opt.fs : logservice::PosixFileSystem();
  StoreOptions so;
  so.fs = p.fs;
  so.dir = p.opt.data_dir;
  so.initial_lsn = p.opt.initial_lsn;
  so.log = [&p](logservice::LogLevel l, std::string_view line) {
    p.Log(l >= logservice::LogLevel::kWarning ? "warn" : "info", "event=store msg=\"" + std::string(line) + "\"");
  };
  auto store = PageStore::Open(so);
  if (!store.ok()) return store.status();
  p.store = std::move(*store);
  STRATA_RETURN_IF_ERROR(p.dir.Decode(p.store->directory_snapshot()));
  const StoreState st = p.store->state();
  p.ingested = st.ingested_lsn;
  auto follower = logservice::client::LogFollower::Open(p.opt.volume);
  if (!follower.ok()) return Status::InvalidArgument("log: " + follower.status().ToString());
  p.follower = std::move(*follower);
  // The pin first: the log must keep everything from persisted_lsn, which
  // is where ingest resumes (a restart re-ingests what was in memory).
  auto pin = p.follower->SetPin(p.opt.name, st.persisted_lsn);
  if (!pin.ok()) {
    if (pin.code() == logservice::client::Code::kInvalidArgument)
      return Status::Corruption("the log no longer holds the page server's persisted LSN " +
                                std::to_string(st.persisted_lsn) + ": " + pin.message() +
                                " (rebuild this page server from a peer)");
    p.Log("warn", "event=pin_failed lsn=" + std::to_string(st.persisted_lsn) + " reason=\"" + pin.ToString() + "\"");
  }
  auto net = logservice::TransportNetwork(logservice::repl::ReplicationTransportOptions(p.opt.cluster_id, p.opt.secret));
  if (!net.ok()) return Status::InvalidArgument("transport: " + net.status().message());
  p.network = std::move(net.value());
  auto l = p.network->Listen(p.opt.listen, [&p](const std::shared_ptr<rdma::Connection>& c) { return p.Accept(c); });
  if (!l.ok()) return Status::IoError("listen " + p.opt.listen + ": " + l.status().message());
  p.listener = std::move(l.value());
  p.address = p.listener->endpoint().ToString();
  p.Log("info", "event=started listen=" + p.address + " data_dir=" + p.opt.data_dir +
                    " persisted=" + std::to_string(st.persisted_lsn) + " spaces=" + std::to_string(p.dir.size()));
  for (std::size_t i = 0; i < std::max<std::size_t>(1, p.opt.workers); ++i)
    p.workers.emplace_back([&p] { p.WorkerLoop(); });
  p.ingest_thread = std::thread([&p] { p.IngestLoop(); });
  return std::unique_ptr<PageServer>(new PageServer(std::move(impl)));
}

PageServer::PageServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PageServer::~PageServer() { Stop(); }

void PageServer::Stop() {
  Impl& p = *impl_;
  if (!p.network) return;
  p.listener.reset();
  {
    std::lock_guard<std::mutex> l(p.mu);
    p.stopping = true;
  }
  p.cv.notify_all();
  if (p.ingest_thread.joinable()) p.ingest_thread.join();
  {
    std::lock_guard<std::mutex> l(p.q_mu);
    p.stopping_workers = true;
  }
  p.q_cv.notify_all();
  for (auto& t : p.workers) t.join();
  p.workers.clear();
  p.network.reset();  // closes every connection
  p.follower.reset();
  p.Log("info", "event=stopped");
}

std::string PageServer::address() const { return impl_->address; }
PageResult PageServer::GetPage(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn nms) {
  return impl_->GetPage(space, page, request_lsn, nms);
}
Frame PageServer::Handle(const Frame& request) { return impl_->Handle(request); }
std::vector<std::pair<std::string, std::uint64_t>> PageServer::GetStatus() const { return impl_->StatusList(); }
Lsn PageServer::ingested_lsn() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->ingested;
}
Lsn PageServer::persisted_lsn() const { return impl_->store->state().persisted_lsn; }

}  // namespace strata::pageserver
