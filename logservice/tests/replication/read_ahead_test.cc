// LogReadAhead (strata/logservice/read_ahead.h) against in-process nodes,
// over TCP and over the fake NIC (its ReadResps go by SendBulk): the same
// bytes as LogClient::Read across segment files and into the tail image,
// `depth` requests in flight and one round trip per chunk (what recovery
// gains), never a byte past the quorum frontier, and a node stopped in the
// middle of a stream. Also RpcChannel::Start's abandoned requests, whose
// late answers must not reach the async handler.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "cluster_client_support.h"
#include "in_process_cluster.h"
#include "local_cluster.h"
#include "rpc.h"
#include "strata/logservice/read_ahead.h"

namespace strata::logservice {
namespace {

using client::Code;
using client::LogClient;
using client::LogReadAhead;
using client::ReadAheadOptions;
using std::chrono::milliseconds;
using testing::InProcessCluster;
using testing::TestTransport;

const char* const kFakeNicNotice = "in-process fake NIC";  // every Transport on it says so once

std::unique_ptr<LogClient> OpenOk(const client::ClusterConfig& cfg) {
  auto c = LogClient::Open(cfg);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? std::move(*c) : nullptr;
}

// Appends `bytes` of RedoBytes at the stream end in appends of varied sizes
// (records of many lengths on the nodes, so reads start and end inside
// records), then waits until all of it is durable.
void AppendDurable(LogClient& lc, std::uint64_t bytes) {
  static constexpr std::size_t kSizes[] = {131072, 512, 65536, 7680, 131072, 40960};
  const std::uint64_t end = lc.stream_end() + bytes;
  for (int k = 0; lc.stream_end() < end; ++k) {
    const std::uint64_t at = lc.stream_end();
    const std::size_t n = std::min<std::uint64_t>(kSizes[k % 6], end - at);
    ASSERT_TRUE(lc.Append(at, testing::RedoBytes(at, n)).ok());
  }
  ASSERT_TRUE(lc.WaitDurable(end, milliseconds(30000)).ok()) << lc.status().reason;
}

// Reads [from, to) in `step`-sized calls as backend_logservice.cc's read()
// does: a failed call is retried (for up to 20 s), an empty one ends it.
template <typename Reader>
std::string ReadSteps(Reader& r, std::uint64_t from, std::uint64_t to, std::size_t step, int* errors = nullptr) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (from + out.size() < to && std::chrono::steady_clock::now() < deadline) {
    auto got = r.Read(from + out.size(), std::min<std::uint64_t>(step, to - from - out.size()));
    if (!got.ok()) {
      if (errors) ++*errors;
      EXPECT_NE(got.status().code(), Code::kFenced) << got.status().ToString();
      std::this_thread::sleep_for(milliseconds(100));
      continue;
    }
    if (got->empty()) break;
    out += *got;
  }
  return out;
}

std::uint64_t NodeReads(InProcessCluster& c, int i) {
  if (!c.running(i)) return 0;
  return c.node(i).State().counters[static_cast<int>(wire::NodeCounter::kReads)];
}
std::uint64_t AllReads(InProcessCluster& c) { return NodeReads(c, 0) + NodeReads(c, 1) + NodeReads(c, 2); }

class ReadAheadTest : public ::testing::TestWithParam<TestTransport> {
 protected:
  void TearDown() override {
    for (const auto& v : cluster_.violations()) ADD_FAILURE() << "fake NIC: " << v;
  }
  InProcessCluster cluster_{3, GetParam(), testing::ClusterTestSeed()};
};

// 20 MiB over nodes whose segment files hold 8 MiB (InProcessCluster), so
// reads cross two segment boundaries; a tail image after the last block.
// Read-ahead in InnoDB's 64 KiB steps, in odd steps from an odd start, and
// after a seek, gives LogClient::Read's bytes; at the stream end the tail.
TEST_P(ReadAheadTest, SameBytesAsReadAcrossSegmentsAndIntoTheTail) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto lc = OpenOk(c.Config());
  ASSERT_TRUE(lc);
  ASSERT_NO_FATAL_FAILURE(AppendDurable(*lc, 20u << 20));
  const std::uint64_t end = lc->stream_end();
  const std::string image = testing::RedoBytes(end, 300) + std::string(212, '\0');
  ASSERT_TRUE(lc->PutTail(end, image, end + 300).ok());
  ASSERT_TRUE(lc->WaitDurable(end + 300, milliseconds(5000)).ok());

  const std::string plain = ReadSteps(*lc, 0, end + 512, 1u << 20);
  ASSERT_EQ(plain.size(), end + 512);
  ASSERT_EQ(plain.substr(0, end), testing::RedoBytes(0, end));
  ASSERT_EQ(plain.substr(end), image);

  LogReadAhead ra(*lc);
  EXPECT_EQ(ReadSteps(ra, 0, end + 512, 64u << 10), plain);
  LogReadAhead odd(*lc, ReadAheadOptions{3, 300000});
  EXPECT_EQ(ReadSteps(odd, 12345, end + 512, 99999), plain.substr(12345));
  // A seek back, then one forward into the next segment.
  EXPECT_EQ(ReadSteps(ra, 4096, 4096 + (3u << 20), 64u << 10), plain.substr(4096, 3u << 20));
  EXPECT_EQ(ReadSteps(ra, 9u << 20, 10u << 20, 8192), plain.substr(9u << 20, 1u << 20));
  EXPECT_GE(ra.stats().restarts, 1u);
  // At and past the end: LogClient::Read's answers.
  auto at_end = ra.Read(end, 1u << 20);
  ASSERT_TRUE(at_end.ok());
  EXPECT_EQ(*at_end, image);
  auto past = ra.Read(end + 512, 1u << 20);
  ASSERT_TRUE(past.ok());
  EXPECT_EQ(*past, "");
  lc.reset();
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

// What recovery gains: read in 64 KiB calls, LogClient::Read asks a node
// once per call; the read-ahead once per 1 MiB chunk, with `depth` of them
// out at once (the first call already sent them all).
TEST_P(ReadAheadTest, KeepsDepthRequestsInFlightAndOneRoundTripPerChunk) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto lc = OpenOk(c.Config());
  ASSERT_TRUE(lc);
  ASSERT_NO_FATAL_FAILURE(AppendDurable(*lc, 16u << 20));
  const std::uint64_t end = lc->stream_end();

  std::uint64_t before = AllReads(c);
  EXPECT_EQ(ReadSteps(*lc, 0, end, 64u << 10).size(), end);
  const std::uint64_t plain_reads = AllReads(c) - before;
  EXPECT_GE(plain_reads, 256u);

  LogReadAhead ra(*lc, ReadAheadOptions{4, 1u << 20});
  before = AllReads(c);
  auto first = ra.Read(0, 64u << 10);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->size(), 64u << 10);
  EXPECT_EQ(ra.in_flight(), 4u) << "the chunk answered was replaced at once";
  const std::string rest = ReadSteps(ra, 64u << 10, end, 64u << 10);
  EXPECT_EQ(*first + rest, testing::RedoBytes(0, end));
  const std::uint64_t ahead_reads = AllReads(c) - before;
  EXPECT_EQ(ahead_reads, 16u) << "one ReadReq per MiB";
  EXPECT_EQ(ra.stats().requests, 16u);
  EXPECT_EQ(ra.stats().max_in_flight, 4u);
  EXPECT_EQ(ra.stats().restarts, 0u);
  EXPECT_EQ(ra.stats().bytes, end);
  lc.reset();
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

// Two nodes stop: W = 2 is gone, so the frontier stays where it was while
// the surviving node takes 2 MiB more. It has the highest durable end, so
// reads go to it, and it would answer with those bytes: the read-ahead
// must still end at the frontier.
TEST_P(ReadAheadTest, NeverPastTheQuorumFrontier) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto lc = OpenOk(c.Config());
  ASSERT_TRUE(lc);
  ASSERT_NO_FATAL_FAILURE(AppendDurable(*lc, 3u << 20));
  const std::uint64_t frontier = lc->durable_lsn();
  c.Stop(1);
  c.Stop(2);
  for (int k = 0; k < 16; ++k) {
    const std::uint64_t at = lc->stream_end();
    ASSERT_TRUE(lc->Append(at, testing::RedoBytes(at, 131072)).ok());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (lc->status().nodes[0].durable < lc->stream_end() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(milliseconds(20));
  ASSERT_EQ(lc->status().nodes[0].durable, lc->stream_end()) << lc->status().reason;
  ASSERT_EQ(lc->durable_lsn(), frontier);

  LogReadAhead ra(*lc, ReadAheadOptions{4, 1u << 20});
  EXPECT_EQ(ReadSteps(ra, 0, lc->stream_end(), 64u << 10), testing::RedoBytes(0, frontier));
  auto more = ra.Read(frontier, 64u << 10);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(*more, "");
  EXPECT_EQ(ra.stats().requests, 3u);
  lc.reset();
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

// The node serving the stream stops after 2 MiB of 12. The reads in flight
// fail, the caller retries as recovery does, and the stream starts over on
// another node: the bytes are the same, and nothing is fenced.
TEST_P(ReadAheadTest, TheServingNodeStopsMidStream) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto lc = OpenOk(c.Config());
  ASSERT_TRUE(lc);
  ASSERT_NO_FATAL_FAILURE(AppendDurable(*lc, 12u << 20));
  const std::uint64_t end = lc->stream_end();

  std::uint64_t reads[3];
  for (int i = 0; i < 3; ++i) reads[i] = NodeReads(c, i);
  LogReadAhead ra(*lc, ReadAheadOptions{4, 1u << 20});
  std::string got = ReadSteps(ra, 0, 2u << 20, 64u << 10);
  ASSERT_EQ(got.size(), 2u << 20);
  int serving = -1;
  for (int i = 0; i < 3; ++i)
    if (NodeReads(c, i) > reads[i]) serving = i;
  ASSERT_GE(serving, 0);
  c.Stop(serving);
  int errors = 0;
  got += ReadSteps(ra, 2u << 20, end, 64u << 10, &errors);
  EXPECT_EQ(got, testing::RedoBytes(0, end));
  EXPECT_GE(ra.stats().restarts + static_cast<std::uint64_t>(errors), 1u);
  lc.reset();
  EXPECT_EQ(c.UnexpectedLogLines({kFakeNicNotice}), "");
}

// RpcChannel::Start: a request whose PendingCall is destroyed unanswered is
// abandoned, and its answer is dropped; without that it would reach the
// async handler as Post's answers do (the client takes those as news).
TEST_P(ReadAheadTest, AnAbandonedCallsAnswerIsDropped) {
  InProcessCluster& c = cluster_;
  ASSERT_TRUE(c.StartAll()) << c.UnexpectedLogLines();
  auto net = c.NewNetwork();
  ASSERT_TRUE(net);
  std::atomic<int> async{0};
  auto ch = repl::RpcChannel::Connect(*net, c.addresses()[0], [&](const repl::Frame&) { ++async; }, {});
  ASSERT_TRUE(ch.ok()) << ch.status().ToString();
  repl::Frame status;  // a StatusReq
  {
    auto kept = (*ch)->Start(status, milliseconds(3000));
    ASSERT_TRUE(kept.ok());
    auto answered = (*kept)->Wait(milliseconds(3000));
    ASSERT_TRUE(answered.ok()) << answered.status().ToString();
    EXPECT_EQ(answered->type, wire::MsgType::kStatusResp);
  }
  for (int k = 0; k < 8; ++k) {
    auto dropped = (*ch)->Start(status, milliseconds(3000));
    ASSERT_TRUE(dropped.ok());
  }
  ASSERT_TRUE((*ch)->Post(status).ok());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (async.load() < 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(milliseconds(10));
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(async.load(), 1) << "only the posted request's answer";
  (*ch)->Close();
}

INSTANTIATE_TEST_SUITE_P(Transports, ReadAheadTest,
                         ::testing::Values(TestTransport::kTcp, TestTransport::kFakeVerbs),
                         [](const ::testing::TestParamInfo<TestTransport>& p) { return testing::TestTransportName(p.param); });

}  // namespace
}  // namespace strata::logservice
