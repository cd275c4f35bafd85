// InnoDbRedoHelper and HelperProcess against a stand-in child
// (fake_helper_main.cc): the request encodings, restarts after a death, a
// hang or a broken frame, refusals, and the image checks that keep a wrong
// page from ever leaving. The real child, mysqld --strata-page-apply, is
// tested against InnoDB's own pages by scripts/tests/page_apply_check.py.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "helper/helper_protocol.h"
#include "helper/innodb_page.h"
#include "helper/innodb_redo_helper.h"

namespace strata::pageserver::helper {
namespace {

using logservice::StatusCode;

// The fake takes its options after argv[0]; the helper adds
// --strata-page-apply and --seccomp=..., which the fake ignores. A wrapper
// script passes the test's options on.
std::string Wrapper(const std::string& dir, const std::string& options) {
  const std::string path = dir + "/fake-helper.sh";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fprintf(f, "#!/bin/sh\nexec %s %s \"$@\"\n", FAKE_HELPER_PATH, options.c_str());
  std::fclose(f);
  chmod(path.c_str(), 0755);
  return path;
}

class InnoDbHelperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("innodb-helper-" + std::to_string(getpid()) + "-" +
                                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<InnoDbRedoHelper> Make(const std::string& options, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    InnoDbRedoHelper::Options o;
    o.mysqld = Wrapper(dir_.string(), options);
    o.apply_helpers = 1;
    o.timeout = timeout;
    o.log = [this](logservice::LogLevel, std::string_view line) { log_ += std::string(line) + "\n"; };
    return std::make_unique<InnoDbRedoHelper>(o);
  }
  std::vector<PageRecord> Records(PageId page, int n) {
    std::vector<PageRecord> recs;
    for (int i = 0; i < n; ++i) recs.push_back(PageRecord{page, Lsn(1000 + 10 * i), Lsn(1005 + 10 * i), RecordKind::kDelta, std::string("\x07xy", 3)});
    return recs;
  }

  std::filesystem::path dir_;
  std::string log_;
};

TEST_F(InnoDbHelperTest, ParseReturnsRecordsWithTheirTypeByteInLogOrder) {
  auto h = Make("");
  std::string blocks(3 * 512, 'b');
  auto p = h->Parse(1024 + 40, blocks);  // `from` inside the block at 1024
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->parsed_to, 1024u + 3 * 512);
  ASSERT_EQ(p->records.size(), 3u);
  EXPECT_EQ(p->records[0].start_lsn, 1064u);
  EXPECT_EQ(p->records[0].body.substr(0, 1), "\x07");
  EXPECT_EQ(p->records[0].body.substr(1), "bbbbbbbb");
  for (std::size_t i = 1; i < p->records.size(); ++i) EXPECT_LE(p->records[i - 1].end_lsn, p->records[i].end_lsn);
  ASSERT_EQ(p->events.size(), 2u);
  EXPECT_EQ(p->events[0].kind, SpaceEvent::Kind::kCreate);
  EXPECT_EQ(p->events[0].flags, 0x21u);
  EXPECT_EQ(p->events[0].name, "./fake/t.ibd");
  EXPECT_EQ(p->events[1].kind, SpaceEvent::Kind::kExtend);
  EXPECT_EQ(p->events[1].size_pages, 7u);
  // Less than a block: nothing yet, given again later.
  auto none = h->Parse(2048, std::string(100, 'b'));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->parsed_to, 2048u);
  EXPECT_TRUE(none->records.empty());
}

TEST_F(InnoDbHelperTest, AScanThatStopsBeforeTheLastBlockIsDamageNotAnEnd) {
  auto h = Make("--bad-block");
  auto p = h->Parse(1024, std::string(3 * 512, 'b'));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("failed InnoDB's block checks"), std::string::npos) << p.status().message();
  // One block (the tail may end the log there): no verdict, parsed so far.
  EXPECT_TRUE(h->Parse(1024, std::string(512, 'b')).ok());
}

TEST_F(InnoDbHelperTest, ApplyReturnsACheckedImageAtTheLastRecordsLsn) {
  auto h = Make("");
  const PageId page{5, 9};
  auto img = h->Apply(page, std::nullopt, Records(page, 3));
  ASSERT_TRUE(img.ok()) << img.status().message();
  auto lsn = h->CheckImage(page, *img);
  ASSERT_TRUE(lsn.ok());
  EXPECT_EQ(*lsn, 1025u);
  // A record of another page, or not a delta, is refused before any child sees it.
  auto other = Records(PageId{5, 10}, 1);
  EXPECT_EQ(h->Apply(page, std::nullopt, other).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(InnoDbHelperTest, AChildThatDiesIsRestartedAndTheCallRetriedOnce) {
  auto h = Make("--die-once=" + (dir_ / "died").string());
  const PageId page{1, 2};
  auto img = h->Apply(page, std::nullopt, Records(page, 1));
  ASSERT_TRUE(img.ok()) << img.status().message();
  EXPECT_TRUE(std::filesystem::exists(dir_ / "died"));  // it really died once
  EXPECT_EQ(h->starts(), 2u);  // the applier once, again after the death (the parser never started)
  EXPECT_NE(log_.find("event=helper_restart"), std::string::npos) << log_;
}

TEST_F(InnoDbHelperTest, AHangingChildIsKilledAtTheTimeoutAndTheCallFails) {
  auto h = Make("--hang-on-apply", std::chrono::milliseconds(300));
  const PageId page{1, 2};
  const auto t0 = std::chrono::steady_clock::now();
  auto img = h->Apply(page, std::nullopt, Records(page, 1));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("no reply from the helper"), std::string::npos) << img.status().message();
  EXPECT_LT(took, std::chrono::seconds(5));
  EXPECT_EQ(h->starts(), 2u);  // tried, killed, tried once more, killed
}

TEST_F(InnoDbHelperTest, ABrokenReplyFrameKillsTheChild) {
  auto h = Make("--garble-once=" + (dir_ / "garbled").string());
  const PageId page{1, 2};
  auto img = h->Apply(page, std::nullopt, Records(page, 1));
  ASSERT_TRUE(img.ok()) << img.status().message();  // the retry on a fresh child
  EXPECT_NE(log_.find("failed its CRC"), std::string::npos) << log_;
  EXPECT_EQ(h->starts(), 2u);
}

TEST_F(InnoDbHelperTest, ARefusedPageIsAnErrorWithTheHelpersReasonAndNoRestart) {
  auto h = Make("--refuse-apply");
  const PageId page{1, 2};
  auto img = h->Apply(page, std::string(16384, '\0'), Records(page, 1));
  ASSERT_FALSE(img.ok());
  EXPECT_EQ(img.status().code(), StatusCode::kCorruption);
  EXPECT_NE(img.status().message().find("read checks"), std::string::npos) << img.status().message();
  EXPECT_EQ(h->starts(), 1u);
}

TEST_F(InnoDbHelperTest, AnImageOfAnotherPageNeverLeaves) {
  auto h = Make("--wrong-page");
  const PageId page{1, 2};
  auto img = h->Apply(page, std::nullopt, Records(page, 1));
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("bad image"), std::string::npos) << img.status().message();
}

TEST_F(InnoDbHelperTest, AChildWithAnotherCrcIsRefusedAtStart) {
  auto h = Make("--bad-crc-check");
  const PageId page{1, 2};
  auto img = h->Apply(page, std::nullopt, Records(page, 1));
  ASSERT_FALSE(img.ok());
  EXPECT_NE(img.status().message().find("CRC-32C"), std::string::npos) << img.status().message();
}

TEST(InnoDbPage, ChecksumPageIdAndTornTrailerAreCaught) {
  std::string page(16384, '\0');
  EXPECT_EQ(*CheckInnoDbPage(PageId{3, 4}, page, 16384), 0u);  // never written
  auto put = [&](std::size_t at, std::uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i, v >>= 8) page[at + i] = static_cast<char>(v & 0xff);
  };
  put(4, 4, 4);
  put(34, 3, 4);
  put(16, 0x123456789ull, 8);
  put(16384 - 4, 0x23456789u, 4);
  page[100] = 'x';
  put(0, InnoDbPageCrc32(page), 4);
  ASSERT_TRUE(CheckInnoDbPage(PageId{3, 4}, page, 16384).ok());
  EXPECT_EQ(*CheckInnoDbPage(PageId{3, 4}, page, 16384), 0x123456789ull);
  EXPECT_FALSE(CheckInnoDbPage(PageId{3, 5}, page, 16384).ok());  // another page's image
  std::string damaged = page;
  damaged[5000] ^= 1;
  EXPECT_NE(CheckInnoDbPage(PageId{3, 4}, damaged, 16384).status().message().find("checksum"), std::string::npos);
  std::string torn = page;
  torn[16383] ^= 1;
  EXPECT_NE(CheckInnoDbPage(PageId{3, 4}, torn, 16384).status().message().find("torn"), std::string::npos);
  EXPECT_FALSE(CheckInnoDbPage(PageId{3, 4}, page.substr(0, 1000), 16384).ok());
}

}  // namespace
}  // namespace strata::pageserver::helper
