// The page service (issue 33 stage 3): the fake redo helper, the page
// service codec, and pageserverd's engine (PageServer) in one process with
// three log nodes and a writer (InProcessCluster over TCP). The writer
// appends groups of the fake helper's toy format; a model kept by the test
// says what every page must hold at every LSN, and GetPage answers are
// compared with it byte for byte, directly and over the wire.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <span>
#include <map>
#include <mutex>
#include <thread>

#include "page_codec.h"
#include "fake_redo.h"
#include "in_process_cluster.h"
#include "page_server.h"
#include "storage/fault_injection_file_system.h"
#include "strata/logservice/follower.h"
#include "strata/pageserver/client.h"
#include "strata/rdma/crc32c.h"

namespace strata::pageserver {
namespace {

using logservice::client::LogClient;
using logservice::testing::InProcessCluster;
using logservice::testing::TestTransport;
using std::chrono::milliseconds;
using W = FakeRedoHelper;

constexpr std::uint32_t kPage = 4096;

// ---- the fake helper ----

TEST(FakeRedo, ParsesWholeGroupsOnlyAndNamesBadBytes) {
  FakeRedoHelper h(kPage);
  const std::string g1 = W::Group({{W::kCreate, 1, 8, 0, "t1"}, {W::kWrite, 1, 3, 100, "abc"}});
  const std::string g2 = W::Group({{W::kWrite, 1, 3, 200, "xyz"}});
  const std::string log = g1 + g2;
  auto p = h.Parse(1000, log.substr(0, g1.size() + 5));  // the second group incomplete
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->parsed_to, 1000 + g1.size());
  ASSERT_EQ(p->records.size(), 1u);
  EXPECT_EQ(p->records[0].start_lsn, 1000u);
  EXPECT_EQ(p->records[0].end_lsn, 1000 + g1.size());
  ASSERT_EQ(p->events.size(), 1u);
  EXPECT_EQ(p->events[0].name, "t1");
  auto all = h.Parse(1000, log);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->parsed_to, 1000 + log.size());
  std::string bad = log;
  bad[g1.size() + 14] ^= 1;  // a body byte of the second group: its CRC fails
  auto b = h.Parse(1000, bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("LSN " + std::to_string(1000 + g1.size())), std::string::npos) << b.status().message();
  auto unknown = h.Parse(0, W::Group({{static_cast<W::Type>(9), 1, 1, 0, ""}}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown record type 9"), std::string::npos);
  // A record that does not fit the page is an error, never a page.
  auto big = h.Parse(0, W::Group({{W::kWrite, 1, 1, kPage - 2, "abcd"}}));
  ASSERT_TRUE(big.ok());
  EXPECT_FALSE(h.Apply(PageId{1, 1}, std::nullopt, big->records).ok());
  // A damaged base is refused.
  std::string base = h.MakeImage(PageId{1, 1}, 10, "payload");
  EXPECT_TRUE(h.CheckImage(PageId{1, 1}, base).ok());
  EXPECT_FALSE(h.CheckImage(PageId{1, 2}, base).ok());
  base[50] ^= 1;
  EXPECT_FALSE(h.Apply(PageId{1, 1}, base, {}).ok());
}

// ---- the codec ----

svc::Frame Populated(wire::MsgType t) {
  svc::Frame f;
  f.type = t;
  f.request_id = 77;
  if (wire::IsResponse(t)) f.error = "e";
  switch (t) {
    case wire::MsgType::kGetPageReq: f.lsn = 9; f.pages = {{1, 2, 3}}; break;
    case wire::MsgType::kGetPageResp: f.results = {{wire::Code::kOk, "", 9, 8, 0, std::string(kPage, 'p')}}; break;
    case wire::MsgType::kGetPagesReq: f.lsn = 9; f.pages = {{1, 2, 3}, {1, 3, 4}}; break;
    case wire::MsgType::kGetPagesResp:
      f.results = {{wire::Code::kOk, "", 9, 8, 0, "img"}, {wire::Code::kBeyondSize, "no", 9, 0, 0, ""}};
      break;
    case wire::MsgType::kSpaceListReq: f.lsn = 5; break;
    case wire::MsgType::kSpaceListResp: f.spaces = {{1, "t1", 0, 8, 100, 0}}; break;
    case wire::MsgType::kSpaceSizeReq:
    case wire::MsgType::kSpaceExistsReq: f.lsn = 5; f.spaces.resize(1); f.spaces[0].space = 3; break;
    case wire::MsgType::kSpaceSizeResp: f.spaces = {{0, "", 0, 8}}; break;
    case wire::MsgType::kSpaceExistsResp: f.exists = true; f.spaces = {{0, "", 0, 0, 100, 200}}; break;
    case wire::MsgType::kStatusResp: f.status = {{"ingested_lsn", 5}}; break;
    case wire::MsgType::kPutImagesReq: f.epoch = 2; f.lsn = 5; f.images = {{1, 2, "image"}}; break;
    default: break;
  }
  return f;
}

TEST(PageServiceCodec, EveryTypeRoundTripsAndEveryTruncationIsRejected) {
  for (std::uint8_t t = 1; t <= wire::kLastType; ++t) {
    if (t == 15) continue;  // no type 15
    const svc::Frame f = Populated(static_cast<wire::MsgType>(t));
    const std::string b = svc::Encode(f);
    svc::Frame g;
    ASSERT_TRUE(svc::Decode(b, &g).ok()) << svc::TypeName(f.type);
    EXPECT_EQ(svc::Encode(g), b) << svc::TypeName(f.type);
    for (std::size_t n = 0; n < b.size(); ++n) EXPECT_FALSE(svc::Decode(b.substr(0, n), &g).ok()) << int(t) << " " << n;
    EXPECT_FALSE(svc::Decode(b + "x", &g).ok());
  }
  // A page whose CRC does not match is refused (damage between server and compute).
  std::string b = svc::Encode(Populated(wire::MsgType::kGetPageResp));
  b[wire::kHeaderSize + 40] ^= 1;
  svc::Frame g;
  EXPECT_FALSE(svc::Decode(b, &g).ok());
}

// The bytes themselves, not only a round trip: the CRC32C of each type's
// encoding of Populated() (types 1..14, then 16), as the codec wrote them
// before its header code was shared with the replication protocol
// (replication/message_header.h). A difference is a wire format change.
TEST(PageServiceCodec, EveryTypeEncodesToTheRecordedBytes) {
  static constexpr std::uint32_t kCrcs[] = {
      0x0B15E5D5u, 0x654B351Fu, 0x252B6DBAu, 0x714CC600u, 0x31563F54u, 0x2E97BEE4u, 0x2411FCDDu, 0xB3A51607u,
      0xF9215679u, 0x6E7CDD07u, 0x84826A27u, 0xDA308EE4u, 0x8FDDF722u, 0xC876F87Bu, 0x3D923705u};
  std::size_t i = 0;
  for (std::uint8_t t = 1; t <= wire::kLastType; ++t) {
    if (t == 15) continue;  // no type 15
    ASSERT_LT(i, std::size(kCrcs));
    EXPECT_EQ(rdma::Crc32c(svc::Encode(Populated(static_cast<wire::MsgType>(t)))), kCrcs[i++])
        << svc::TypeName(static_cast<wire::MsgType>(t));
  }
  EXPECT_EQ(i, std::size(kCrcs));
}

// ---- the page server with a log ----

// What the test wrote: per page, (start, end, offset, bytes) in log order.
struct Model {
  struct Write { Lsn start, end; std::uint32_t off; std::string bytes; };
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<Write>> pages;
  std::string Expect(const FakeRedoHelper& h, std::uint32_t space, std::uint32_t page, Lsn at) const {
    std::string payload(kPage - W::kPageHeader, '\0');
    Lsn lsn = 0;
    auto it = pages.find({space, page});
    if (it != pages.end())
      for (const auto& w : it->second)
        if (w.end <= at) {
          std::memcpy(payload.data() + (w.off - W::kPageHeader), w.bytes.data(), w.bytes.size());
          lsn = w.end;
        }
    return h.MakeImage(PageId{space, page}, lsn, payload);
  }
};

class PageServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartAll());
    auto w = LogClient::Open(cluster_.Config());
    ASSERT_TRUE(w.ok()) << w.status().ToString();
    writer_ = std::move(*w);
    dir_ = cluster_.data_dir(0) + "-ps1";
  }
  void TearDown() override {
    if (ps_) ps_->Stop();
    // The page server's warn/error lines fail the test unless it provoked them.
    std::lock_guard<std::mutex> l(log_mu_);
    for (const auto& line : bad_lines_) {
      bool ok = false;
      for (const auto& a : allowed_) ok = ok || line.find(a) != std::string::npos;
      EXPECT_TRUE(ok) << "unexpected page server log line: " << line;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  PageServerOptions Options(std::shared_ptr<logservice::FileSystem> fs = nullptr) {
    PageServerOptions o;
    o.name = "ps1";
    o.data_dir = dir_;
    o.fs = std::move(fs);
    o.volume = cluster_.Config();
    o.cluster_id = cluster_.cluster_id();
    o.secret = cluster_.secret();
    o.helper = helper_;
    o.freeze_bytes = 1u << 20;
    o.freeze_interval = milliseconds(100);
    o.wait_timeout = milliseconds(400);
    o.gc_history_bytes = gc_history_bytes_;
    o.log = [this](std::string_view level, std::string_view line) {
      if (level != "warn" && level != "error") return;
      std::lock_guard<std::mutex> l(log_mu_);
      bad_lines_.push_back(std::string(level) + " " + std::string(line));
    };
    return o;
  }
  void StartServer(std::shared_ptr<logservice::FileSystem> fs = nullptr) {
    auto p = PageServer::Start(Options(std::move(fs)));
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    ps_ = std::move(*p);
  }
  // Appends one group, acknowledged; the model learns its writes.
  Lsn Append(const std::vector<W::Rec>& recs) {
    const std::string g = W::Group(recs);
    const Lsn at = writer_->stream_end();
    EXPECT_TRUE(writer_->Append(at, g).ok());
    EXPECT_TRUE(writer_->WaitDurable(at + g.size(), milliseconds(10000)).ok());
    for (const auto& r : recs)
      if (r.type == W::kWrite) model_.pages[{r.space, r.page}].push_back({at, at + g.size(), r.arg, r.bytes});
    return at + g.size();
  }
  bool WaitIngested(Lsn lsn, milliseconds t = milliseconds(10000)) {
    const auto deadline = std::chrono::steady_clock::now() + t;
    while (ps_->ingested_lsn() < lsn && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(5));
    return ps_->ingested_lsn() >= lsn;
  }
  std::uint64_t Stat(const std::string& k) {
    for (const auto& [kk, v] : ps_->GetStatus())
      if (kk == k) return v;
    return ~0ull;
  }

  InProcessCluster cluster_{3, TestTransport::kTcp, 33};
  std::unique_ptr<LogClient> writer_;
  std::shared_ptr<FakeRedoHelper> helper_ = std::make_shared<FakeRedoHelper>(kPage);
  std::unique_ptr<PageServer> ps_;
  std::string dir_;
  Model model_;
  std::mutex log_mu_;
  std::vector<std::string> bad_lines_;
  std::vector<std::string> allowed_;  // substrings a test provokes, each with its reason
  std::uint64_t gc_history_bytes_ = 0;
};

TEST_F(PageServerTest, GetPageAtEveryLsnIsTheModelsPage) {
  StartServer();
  std::vector<Lsn> ends = {Append({{W::kCreate, 1, 8, 0, "t1"}})};
  for (int i = 0; i < 40; ++i) {
    const std::uint32_t page = i % 5;
    ends.push_back(Append({{W::kWrite, 1, page, static_cast<std::uint32_t>(20 + 7 * i), "w" + std::to_string(i)},
                           {W::kWrite, 1, (page + 1) % 5, static_cast<std::uint32_t>(1000 + i), "x"}}));
  }
  ASSERT_TRUE(WaitIngested(ends.back()));
  for (Lsn at : ends) {
    for (std::uint32_t page = 0; page < 5; ++page) {
      const auto r = ps_->GetPage(1, page, at, 0);
      ASSERT_EQ(r.code, wire::Code::kOk) << r.error;
      EXPECT_EQ(r.effective_lsn, at);
      // Page `page` is first written by the group ending at ends[page + 1]:
      // before that it is a never-written page (zeros, flagged).
      if (r.flags == wire::kNeverWritten) {
        EXPECT_LT(at, ends[page + 1]) << "page " << page << " at " << at;
        EXPECT_TRUE(r.image == std::string(kPage, '\0'));
        continue;
      }
      EXPECT_TRUE(r.image == model_.Expect(*helper_, 1, page, at)) << "page " << page << " at " << at;
    }
  }
  // Page 5 is inside the space, never touched: zeros, flagged.
  const auto untouched = ps_->GetPage(1, 5, ends.back(), 0);
  ASSERT_EQ(untouched.code, wire::Code::kOk);
  EXPECT_EQ(untouched.flags, wire::kNeverWritten);
  EXPECT_TRUE(untouched.image == std::string(kPage, '\0'));
  // Persisted, and the pin on the log nodes followed it.
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while ((Stat("persisted_lsn") < ends.back() || Stat("pin_lsn") < ends.back()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(Stat("persisted_lsn"), ends.back());
  EXPECT_EQ(Stat("pin_lsn"), ends.back());
  auto f = logservice::client::LogFollower::Open(cluster_.Config());
  ASSERT_TRUE(f.ok());
  for (std::size_t i = 0; i < 3; ++i) {
    auto pins = (*f)->ListPins(i);
    ASSERT_TRUE(pins.ok());
    ASSERT_EQ(pins->size(), 1u);
    EXPECT_EQ((*pins)[0].name, "ps1");
    EXPECT_EQ((*pins)[0].lsn, ends.back());
  }
}

TEST_F(PageServerTest, NotModifiedSinceWaitsForIngestAndErrorsAreNamed) {
  StartServer();
  const Lsn created = Append({{W::kCreate, 1, 4, 0, "t1"}, {W::kCreate, 2, 4, 0, "t2"}});
  const Lsn w1 = Append({{W::kWrite, 1, 0, 30, "one"}});
  ASSERT_TRUE(WaitIngested(w1));
  // not_modified_since above what is ingested: the call waits for it.
  const Lsn next = w1 + W::Group({{W::kWrite, 1, 0, 30, "two"}}).size();
  std::thread later([&] {
    std::this_thread::sleep_for(milliseconds(100));
    Append({{W::kWrite, 1, 0, 30, "two"}});
  });
  const auto r = ps_->GetPage(1, 0, next + 1000, next);
  later.join();
  ASSERT_EQ(r.code, wire::Code::kOk) << r.error;
  EXPECT_GE(r.effective_lsn, next);
  EXPECT_TRUE(r.image == model_.Expect(*helper_, 1, 0, next));
  EXPECT_GE(Stat("ingest_waits"), 1u);
  // Never reached within the wait: unavailable, with both LSNs.
  const auto u = ps_->GetPage(1, 0, next + 5000, next + 5000);
  EXPECT_EQ(u.code, wire::Code::kUnavailable);
  EXPECT_NE(u.error.find("waiting for " + std::to_string(next + 5000)), std::string::npos) << u.error;
  EXPECT_TRUE(u.image.empty());
  const auto inv = ps_->GetPage(1, 0, 10, 20);
  EXPECT_EQ(inv.code, wire::Code::kInvalid);
  const auto unknown = ps_->GetPage(7, 0, next, 0);
  EXPECT_EQ(unknown.code, wire::Code::kSpaceUnknown);
  EXPECT_NE(unknown.error.find("space 7 is unknown"), std::string::npos);
  const auto beyond = ps_->GetPage(1, 4, next, 0);
  EXPECT_EQ(beyond.code, wire::Code::kBeyondSize);
  // Extend, then the page is inside; delete, then the space is gone after, not before.
  const Lsn ext = Append({{W::kExtend, 1, 8, 0, ""}});
  const Lsn del = Append({{W::kDelete, 2, 0, 0, ""}});
  ASSERT_TRUE(WaitIngested(del));
  EXPECT_EQ(ps_->GetPage(1, 4, ext, 0).code, wire::Code::kOk);
  EXPECT_EQ(ps_->GetPage(1, 4, ext - 1, 0).code, wire::Code::kBeyondSize);
  EXPECT_EQ(ps_->GetPage(2, 0, del - 1, 0).code, wire::Code::kOk);
  const auto gone = ps_->GetPage(2, 0, del, 0);
  EXPECT_EQ(gone.code, wire::Code::kSpaceDeleted);
  EXPECT_NE(gone.error.find(std::to_string(del)), std::string::npos);
  EXPECT_EQ(ps_->GetPage(2, 0, created - 1, 0).code, wire::Code::kSpaceUnknown);
}

TEST_F(PageServerTest, BeforeItsFirstLsnAPageServerHasNoHistoryNotNoSpace) {
  // A page server seeded at LSN S knows nothing before S: a compute in crash
  // recovery asking there for a page of a space created before S must hear
  // below_horizon (skipped), not space_unknown (which compare reports as a
  // page the page server lacks).
  const Lsn before = Append({{W::kCreate, 1, 4, 0, "t1"}, {W::kWrite, 1, 0, 30, "old"}});
  auto o = Options();
  o.initial_lsn = before;
  auto p = PageServer::Start(std::move(o));
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ps_ = std::move(*p);
  const Lsn created = Append({{W::kCreate, 2, 4, 0, "t2"}});
  ASSERT_TRUE(WaitIngested(created));
  const auto early = ps_->GetPage(1, 0, before - 1, before - 1);
  EXPECT_EQ(early.code, wire::Code::kBelowHorizon) << early.error;
  EXPECT_NE(early.error.find(std::to_string(before)), std::string::npos) << early.error;
  // At or after S the directory decides: space 7 never existed, space 2 did.
  EXPECT_EQ(ps_->GetPage(7, 0, created, 0).code, wire::Code::kSpaceUnknown);
  EXPECT_EQ(ps_->GetPage(2, 0, created, 0).code, wire::Code::kOk);
}

TEST_F(PageServerTest, AnImageWithNothingAfterItIsServedWithoutTheHelper) {
  // A page whose newest version is an image (seeded, or materialised) is
  // the image: no round trip to the helper. A record after it is applied.
  StartServer();
  const Lsn created = Append({{W::kCreate, 1, 4, 0, "t1"}});
  ASSERT_TRUE(WaitIngested(created));
  const std::string image = helper_->MakeImage(PageId{1, 2}, created, "seeded");
  svc::Frame put;
  put.type = wire::MsgType::kPutImagesReq;
  put.lsn = created;
  put.images = {{1, 2, image}};
  const svc::Frame done = ps_->Handle(put);
  ASSERT_EQ(done.code, wire::Code::kOk) << done.error;
  const auto applies = Stat("helper_applies");
  const auto served = ps_->GetPage(1, 2, created, created);
  ASSERT_EQ(served.code, wire::Code::kOk) << served.error;
  EXPECT_TRUE(served.image == image);
  EXPECT_EQ(Stat("helper_applies"), applies);
  const Lsn w = Append({{W::kWrite, 1, 2, 40, "after"}});
  ASSERT_TRUE(WaitIngested(w));
  const auto rebuilt = ps_->GetPage(1, 2, w, w);
  ASSERT_EQ(rebuilt.code, wire::Code::kOk) << rebuilt.error;
  EXPECT_NE(rebuilt.image.find("after"), std::string::npos);
  EXPECT_EQ(Stat("helper_applies"), applies + 1);
}

TEST_F(PageServerTest, OverTheWireAndAfterARestart) {
  StartServer();
  Append({{W::kCreate, 1, 8, 0, "t1"}});
  Lsn end = 0;
  for (int i = 0; i < 20; ++i) end = Append({{W::kWrite, 1, static_cast<std::uint32_t>(i % 3), static_cast<std::uint32_t>(40 + i), "r" + std::to_string(i)}});
  ASSERT_TRUE(WaitIngested(end));
  PageServiceConfig cfg{ps_->address(), cluster_.cluster_id(), cluster_.secret()};
  auto c = PageServiceClient::Connect(cfg);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto r = (*c)->GetPage(1, 1, end, end);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->code, PageCode::kOk) << r->error;
  EXPECT_TRUE(r->image == model_.Expect(*helper_, 1, 1, end));
  auto batch = (*c)->GetPages(end, {{1, 0, 0}, {1, 2, 0}, {1, 9, 0}, {5, 0, 0}});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->size(), 4u);
  EXPECT_TRUE((*batch)[0].image == model_.Expect(*helper_, 1, 0, end));
  EXPECT_TRUE((*batch)[1].image == model_.Expect(*helper_, 1, 2, end));
  EXPECT_EQ((*batch)[2].code, PageCode::kBeyondSize);
  EXPECT_EQ((*batch)[3].code, PageCode::kSpaceUnknown);
  auto spaces = (*c)->SpaceList(end);
  ASSERT_TRUE(spaces.ok());
  ASSERT_EQ(spaces->size(), 1u);
  EXPECT_EQ((*spaces)[0].name, "t1");
  EXPECT_EQ((*spaces)[0].size_pages, 8u);
  auto exists = (*c)->SpaceExists(1, end);
  ASSERT_TRUE(exists.ok());
  EXPECT_TRUE(exists->first);
  auto st = (*c)->GetStatus();
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->at(0).first, "ingested_lsn");
  EXPECT_EQ(st->at(0).second, end);

  // Restart (whatever was only in memory is re-ingested from the log, which
  // the pin kept): the same pages at the same LSNs, and the new ones.
  c->reset();
  ps_->Stop();
  ps_.reset();
  const Lsn more = Append({{W::kWrite, 1, 0, 500, "after-restart"}});
  StartServer();
  ASSERT_TRUE(WaitIngested(more));
  for (Lsn at : {end, more})
    for (std::uint32_t p = 0; p < 3; ++p) EXPECT_TRUE(ps_->GetPage(1, p, at, 0).image == model_.Expect(*helper_, 1, p, at)) << p << " at " << at;
}

// Its own node down: ingest goes on from the others. And enough records on
// one page make the image policy write an image (materialized_lsn follows),
// after which the page still reads the same at every LSN.
TEST_F(PageServerTest, IngestGoesOnWithoutItsNodeAndImagesKeepPagesExact) {
  StartServer();
  std::vector<Lsn> ends = {Append({{W::kCreate, 1, 4, 0, "t1"}})};
  for (int i = 0; i < 10; ++i)
    ends.push_back(Append({{W::kWrite, 1, 0, static_cast<std::uint32_t>(20 + 3 * i), "a" + std::to_string(i)}}));
  ASSERT_TRUE(WaitIngested(ends.back()));
  cluster_.Stop(0);  // the page server's first node
  for (int i = 0; i < 40; ++i)
    ends.push_back(Append({{W::kWrite, 1, 0, static_cast<std::uint32_t>(400 + 5 * i), "b" + std::to_string(i)}}));
  ASSERT_TRUE(WaitIngested(ends.back())) << "ingested " << ps_->ingested_lsn() << " of " << ends.back();
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while ((Stat("images_written") == 0 || Stat("materialized_lsn") < ends.back()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  EXPECT_GE(Stat("images_written"), 1u);
  EXPECT_GE(Stat("image_files"), 1u);
  EXPECT_EQ(Stat("materialized_lsn"), ends.back());
  for (Lsn at : ends) {
    const auto r = ps_->GetPage(1, 0, at, 0);
    ASSERT_EQ(r.code, wire::Code::kOk) << r.error;
    if (at < ends[1]) continue;  // not written yet
    EXPECT_TRUE(r.image == model_.Expect(*helper_, 1, 0, at)) << "at " << at;
  }
}

// Crash consistency (design note 7.2, 12): the page server's disk dies at
// its k-th mutation (a layer file, the manifest, its rename, ...), the
// machine loses what was not synced, and the page server restarts on what
// is left: it resumes from the persisted LSN the manifest says (the pin kept
// the log from there) and every page at every LSN is the model's again.
TEST_F(PageServerTest, ACrashAtEveryMutationOfAFreezeLosesNothing) {
  // Provoked: the dying disk fails the page server's writes until the crash.
  allowed_ = {"event=freeze_failed", "event=ingest_failed", "event=store", "event=pin_record_failed",
              "event=images_failed", "event=materialized_failed"};
  std::vector<Lsn> ends = {Append({{W::kCreate, 1, 4, 0, "t1"}})};
  int crashes = 0;
  for (int k = 0; k < 30; ++k) {
    auto fi = std::make_shared<logservice::FaultInjectionFileSystem>(1000 + k);
    // Round 1 on an empty disk: everything so far, persisted in pieces.
    StartServer(fi);
    fi->CrashAfterMutations(k);
    for (int i = 0; i < 3; ++i)
      ends.push_back(Append({{W::kWrite, 1, static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(30 + k * 8 + i),
                              "k" + std::to_string(k)}}));
    const auto deadline = std::chrono::steady_clock::now() + milliseconds(3000);
    while (!fi->crash_point_reached() && Stat("persisted_lsn") < ends.back() &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(milliseconds(5));
    ps_->Stop();
    ps_.reset();
    if (fi->crash_point_reached()) ++crashes;
    fi->SimulateCrash(k % 2 ? logservice::FaultInjectionFileSystem::CrashMode::kTornUnsynced
                            : logservice::FaultInjectionFileSystem::CrashMode::kDropUnsynced);
    fi->CrashAfterMutations(-1);
    // Round 2 on what survived.
    StartServer(fi);
    ASSERT_TRUE(WaitIngested(ends.back())) << "k=" << k;
    for (Lsn at : {ends[ends.size() - 4], ends[ends.size() - 2], ends.back()})
      for (std::uint32_t p = 0; p < 3; ++p) {
        const auto r = ps_->GetPage(1, p, at, 0);
        ASSERT_EQ(r.code, wire::Code::kOk) << r.error << " k=" << k;
        if (r.flags == wire::kNeverWritten) continue;
        EXPECT_TRUE(r.image == model_.Expect(*helper_, 1, p, at)) << "k=" << k << " page " << p << " at " << at;
      }
    ps_->Stop();
    ps_.reset();
  }
  EXPECT_GE(crashes, 10) << "the crash points were not reached: the test proves little";
}

// GC (section 7.4) driven by the daemon: the horizon follows the persisted
// LSN; below it a page that changed since is below_horizon (named, never an
// old guess), a page unchanged since is still served, and at and above the
// horizon every page is exact.
TEST_F(PageServerTest, GcBelowTheHorizonNamesChangedPagesAndServesUnchangedOnes) {
  gc_history_bytes_ = 600;
  StartServer();
  std::vector<Lsn> ends = {Append({{W::kCreate, 1, 4, 0, "t1"}})};
  ends.push_back(Append({{W::kWrite, 1, 2, 50, "never-again"}}));  // page 2: written once
  const Lsn page2_written = ends.back();
  for (int i = 0; i < 30; ++i) {
    ends.push_back(Append({{W::kWrite, 1, 0, static_cast<std::uint32_t>(60 + i), "c" + std::to_string(i)}}));
    if (i % 5 == 4) std::this_thread::sleep_for(milliseconds(150));  // several freezes, several delta files
  }
  ASSERT_TRUE(WaitIngested(ends.back()));
  const auto deadline = std::chrono::steady_clock::now() + milliseconds(5000);
  while (Stat("gc_horizon_lsn") < ends.back() - 600 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  const Lsn horizon = Stat("gc_horizon_lsn");
  ASSERT_EQ(horizon, ends.back() - 600);
  EXPECT_GE(Stat("gc_runs"), 1u);
  EXPECT_GE(Stat("gc_files_removed"), 1u);
  // Page 0 changed after page2_written: below the horizon it is gone.
  const auto old0 = ps_->GetPage(1, 0, page2_written, 0);
  EXPECT_EQ(old0.code, wire::Code::kBelowHorizon) << old0.error;
  EXPECT_TRUE(old0.image.empty());
  // Page 2 did not change since: served below the horizon.
  const auto old2 = ps_->GetPage(1, 2, page2_written, 0);
  ASSERT_EQ(old2.code, wire::Code::kOk) << old2.error;
  EXPECT_TRUE(old2.image == model_.Expect(*helper_, 1, 2, page2_written));
  for (Lsn at : ends) {
    if (at < horizon) continue;
    for (std::uint32_t p : {0u, 2u}) {
      const auto r = ps_->GetPage(1, p, at, 0);
      ASSERT_EQ(r.code, wire::Code::kOk) << r.error;
      EXPECT_TRUE(r.image == model_.Expect(*helper_, 1, p, at)) << p << " at " << at;
    }
  }
}

// A message that does not decode gets an error naming the problem, and the
// server goes on serving others.
TEST_F(PageServerTest, AMalformedMessageGetsANamedError) {
  allowed_ = {"event=bad_message"};  // provoked: the truncated frame below
  StartServer();
  auto net = cluster_.NewNetwork();
  ASSERT_TRUE(net);
  std::mutex mu;
  std::condition_variable cv;
  std::string got;
  rdma::ConnectionHandlers h;
  h.on_message = [&](rdma::Connection&, const rdma::Message& m) {
    const auto p = m.payload();
    std::lock_guard<std::mutex> l(mu);
    got.assign(reinterpret_cast<const char*>(p.data()), p.size());
    cv.notify_all();
  };
  h.on_close = [](rdma::Connection&, const rdma::Status&) {};
  auto conn = net->Connect(ps_->address(), h);
  ASSERT_TRUE(conn.ok());
  std::string bad = svc::Encode(Populated(wire::MsgType::kGetPageReq));
  bad.resize(bad.size() - 3);  // truncated body (the header's length no longer matches)
  ASSERT_TRUE((*conn)->Send(std::as_bytes(std::span(bad.data(), bad.size())), {}, milliseconds(1000)).ok());
  {
    std::unique_lock<std::mutex> l(mu);
    ASSERT_TRUE(cv.wait_for(l, milliseconds(5000), [&] { return !got.empty(); }));
  }
  svc::Frame f;
  ASSERT_TRUE(svc::Decode(got, &f).ok());
  EXPECT_EQ(f.type, wire::MsgType::kErrorResp);
  EXPECT_EQ(f.code, wire::Code::kInvalid);
  EXPECT_NE(f.error.find("body length"), std::string::npos) << f.error;
  EXPECT_EQ(Stat("bad_messages"), 1u);
  // Others are still served.
  auto c = PageServiceClient::Connect(PageServiceConfig{ps_->address(), cluster_.cluster_id(), cluster_.secret()});
  ASSERT_TRUE(c.ok());
  auto st = (*c)->GetStatus();
  EXPECT_TRUE(st.ok()) << st.status().ToString();
}

// The page server's pin holds the writer's release above what it persisted,
// so a restarted page server can re-ingest what it only had in memory.
TEST_F(PageServerTest, ThePinHoldsTheWritersReleaseAtPersisted) {
  StartServer();
  Lsn end = Append({{W::kCreate, 1, 8, 0, "t1"}});
  for (int i = 0; i < 10; ++i) end = Append({{W::kWrite, 1, 0, static_cast<std::uint32_t>(40 + i), "a"}});
  ASSERT_TRUE(WaitIngested(end));
  // Stop it before it persists everything? It persists within 100 ms; stop
  // it, write more (not persisted by anyone), and release it all.
  ps_->Stop();
  const Lsn persisted = ps_->persisted_lsn();
  ps_.reset();
  for (int i = 0; i < 10; ++i) end = Append({{W::kWrite, 1, 1, static_cast<std::uint32_t>(40 + i), "b"}});
  ASSERT_TRUE(writer_->WriteCheckpoint(end, "m").ok());
  ASSERT_TRUE(writer_->Release(end).ok());
  for (int i = 0; i < 3; ++i) EXPECT_LE(cluster_.node(i).State().released, persisted);
  StartServer();
  ASSERT_TRUE(WaitIngested(end));
  EXPECT_TRUE(ps_->GetPage(1, 1, end, 0).image == model_.Expect(*helper_, 1, 1, end));
}

}  // namespace
}  // namespace strata::pageserver
