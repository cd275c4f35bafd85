// Which path replication messages take (send_path.h) and what a connection
// with the log service's transport options costs, over TCP and over verbs
// on the fake NIC: messages that fit a receive slot go by Send, larger ones
// arrive through the bulk ring and decode exactly as strictly; a message
// that fits neither path fails with a reason; per-connection memory stays
// within what docs/logservice-replication.md states.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "codec.h"
#include "rpc.h"
#include "send_path.h"
#include "strata/rdma/fake_verbs_fabric.h"
#include "strata/rdma/little_endian.h"
#include "strata/rdma/rdma.h"

namespace strata::logservice {
namespace {

using std::chrono::milliseconds;

enum class Backend { kTcp, kFakeVerbs };

struct Received {
  std::string bytes;
  bool bulk = false;
};

// A listening and a connecting Transport with ReplicationTransportOptions.
class SendPathTest : public ::testing::TestWithParam<Backend> {
 protected:
  rdma::TransportOptions Options(std::uint64_t seed) {
    auto o = repl::ReplicationTransportOptions("send-path", "secret");
    o.random_seed = seed;
    if (GetParam() == Backend::kFakeVerbs) o.fake_verbs_for_tests = fabric_;
    return o;
  }
  const char* Scheme() const { return GetParam() == Backend::kTcp ? "tcp" : "rdma"; }

  // Server with `server_options`; returns the client's connection.
  std::shared_ptr<rdma::Connection> Connect(rdma::TransportOptions server_options) {
    auto s = rdma::Transport::Create(std::move(server_options));
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s.value());
    auto l = server_->Listen(std::string(Scheme()) + "://127.0.0.1:0", [this](const std::shared_ptr<rdma::Connection>&) {
      rdma::ConnectionHandlers h;
      h.on_message = [this](rdma::Connection&, const rdma::Message& m) {
        std::lock_guard<std::mutex> lock(mu_);
        got_.push_back({std::string(reinterpret_cast<const char*>(m.payload().data()), m.payload().size()), m.is_bulk()});
        cv_.notify_all();
      };
      return h;
    });
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    listener_ = std::move(l.value());
    auto c = rdma::Transport::Create(Options(43));
    EXPECT_TRUE(c.ok());
    client_ = std::move(c.value());
    auto conn = client_->Connect(std::string(Scheme()) + "://127.0.0.1:" + std::to_string(listener_->endpoint().port), {});
    EXPECT_TRUE(conn.ok()) << conn.status().ToString();
    return conn.ok() ? conn.value() : nullptr;
  }
  bool WaitFor(std::size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return got_.size() >= n; });
  }
  void TearDown() override {
    listener_.reset();
    client_.reset();
    server_.reset();
    for (const auto& v : fabric_->violations()) ADD_FAILURE() << "fake NIC: " << v;
  }

  std::shared_ptr<rdma::FakeVerbsFabric> fabric_ = rdma::FakeVerbsFabric::Create({.seed = 11});
  std::unique_ptr<rdma::Transport> server_, client_;
  std::unique_ptr<rdma::Listener> listener_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Received> got_;
};

repl::Frame Append(std::size_t redo) {
  repl::Frame f;
  f.type = wire::MsgType::kAppendReq;
  f.epoch = 3;
  f.lsn = 1 << 20;
  f.commit_lsn = 1 << 19;
  f.data.assign(redo, 'r');
  for (std::size_t i = 0; i < redo; ++i) f.data[i] = static_cast<char>(i * 31 + 7);
  return f;
}

repl::Frame FullRead() {  // a ReadResp at the caps: kMaxReadBytes in kMaxRedoChunk ranges
  repl::Frame f;
  f.type = wire::MsgType::kReadResp;
  f.lsn = 9 << 20;
  for (std::size_t at = 0; at < wire::kMaxReadBytes; at += wire::kMaxRedoChunk)
    f.ranges.push_back({at, 2, std::string(wire::kMaxRedoChunk, static_cast<char>('a' + at / wire::kMaxRedoChunk))});
  return f;
}

TEST_P(SendPathTest, SmallMessagesTakeSendLargerOnesArriveThroughTheBulkRing) {
  auto conn = Connect(Options(42));
  ASSERT_TRUE(conn);
  EXPECT_EQ(conn->max_message_size(), repl::kReceiveSlotBytes);
  ASSERT_GE(conn->max_bulk_size(), wire::kMaxMessage);
  repl::Frame ack;
  ack.type = wire::MsgType::kAppendResp;
  ack.lsn = 77;
  repl::Frame page;
  page.type = wire::MsgType::kPagePutReq;
  page.space = 5;
  page.page = 7;
  page.lsn = 100;
  page.data.assign(16384, 'p');
  const std::vector<repl::Frame> frames = {ack, Append(100), page, Append(repl::kReceiveSlotBytes), Append(128 << 10),
                                           FullRead(), Append(1000)};
  std::vector<bool> bulk;
  for (const auto& f : frames) {
    const std::string b = repl::Encode(f);
    bulk.push_back(repl::PathFor(*conn, b.size()) == repl::MessagePath::kBulk);
    ASSERT_TRUE(repl::SendMessage(*conn, b, milliseconds(5000)).ok()) << repl::MsgTypeName(f.type) << " " << b.size();
  }
  EXPECT_EQ(bulk, (std::vector<bool>{false, false, false, true, true, true, false}));
  ASSERT_TRUE(WaitFor(frames.size()));
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(got_[i].bulk, bulk[i]) << i;
    repl::Frame f;
    ASSERT_TRUE(repl::Decode(got_[i].bytes, &f).ok()) << i;
    EXPECT_EQ(f.type, frames[i].type) << i;
    EXPECT_EQ(f.data, frames[i].data) << i;
    EXPECT_EQ(f.ranges, frames[i].ranges) << i;
    EXPECT_EQ(f.lsn, frames[i].lsn) << i;
  }
}

TEST_P(SendPathTest, ABulkMessageIsDecodedAsStrictly) {
  auto conn = Connect(Options(42));
  ASSERT_TRUE(conn);
  // Sets the header's body length to what `m` holds.
  auto fix_length = [](std::string& m) {
    const std::uint32_t body = static_cast<std::uint32_t>(m.size() - wire::kHeaderSize);
    rdma::PutFixed32(&m[wire::kBodyLengthOffset], body);
  };
  const std::string good = repl::Encode(Append(100000));
  std::string trailing = good + '\0';  // one byte after a complete body, header agreeing
  fix_length(trailing);
  std::string cut = good.substr(0, good.size() - 1);  // header says one byte more
  std::string over = repl::Encode(Append(wire::kMaxRedoChunk));  // at the cap, then one byte over it
  over.insert(wire::kHeaderSize + 16 + 4, 1, 'x');
  over[wire::kHeaderSize + 16] = static_cast<char>((wire::kMaxRedoChunk + 1) & 0xff);
  over[wire::kHeaderSize + 17] = static_cast<char>(((wire::kMaxRedoChunk + 1) >> 8) & 0xff);
  over[wire::kHeaderSize + 18] = static_cast<char>(((wire::kMaxRedoChunk + 1) >> 16) & 0xff);
  fix_length(over);
  for (const std::string* m : std::initializer_list<const std::string*>{&good, &trailing, &cut, &over})
    ASSERT_TRUE(repl::SendMessage(*conn, *m, milliseconds(5000)).ok());
  ASSERT_TRUE(WaitFor(4));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& r : got_) EXPECT_TRUE(r.bulk);
  repl::Frame f;
  EXPECT_TRUE(repl::Decode(got_[0].bytes, &f).ok());
  const Status t = repl::Decode(got_[1].bytes, &f);
  EXPECT_NE(t.message().find("trailing bytes after AppendReq"), std::string::npos) << t.ToString();
  const Status c = repl::Decode(got_[2].bytes, &f);
  EXPECT_NE(c.message().find("body length does not match"), std::string::npos) << c.ToString();
  const Status o = repl::Decode(got_[3].bytes, &f);
  EXPECT_NE(o.message().find("malformed AppendReq body"), std::string::npos) << o.ToString();
}

TEST_P(SendPathTest, AMessageLargerThanASlotFailsWithAReasonWhenThePeerHasNoBulkRing) {
  auto server_options = Options(42);
  server_options.bulk_ring_size = 0;
  auto conn = Connect(std::move(server_options));
  ASSERT_TRUE(conn);
  EXPECT_EQ(conn->max_bulk_size(), 0u);
  const rdma::Status small = repl::SendMessage(*conn, repl::Encode(Append(1000)), milliseconds(1000));
  EXPECT_TRUE(small.ok()) << small.ToString();
  const rdma::Status large = repl::SendMessage(*conn, repl::Encode(Append(100000)), milliseconds(1000));
  EXPECT_EQ(large.code(), rdma::StatusCode::kInvalidArgument) << large.ToString();
  EXPECT_NE(large.message().find("bulk is disabled"), std::string::npos) << large.ToString();
}

// Per-connection memory with the log service's options (receive slots of
// 32 KiB, 32 credits, 1 MiB send buffer, 4 MiB bulk ring): the numbers
// docs/logservice-replication.md and rdma/README.md state. Registered
// memory is the fake NIC's count (ibv_reg_mr) of both ends, halved.
TEST_P(SendPathTest, PerConnectionMemoryStaysWithinTheStatedBound) {
  auto conn = Connect(Options(42));
  ASSERT_TRUE(conn);
  // Traffic on both paths first: rings and slots are in use.
  for (std::size_t size : {100u, 200000u, 20000u, 1000000u})
    ASSERT_TRUE(repl::SendMessage(*conn, repl::Encode(Append(std::min<std::size_t>(size, wire::kMaxRedoChunk))), milliseconds(5000)).ok());
  ASSERT_TRUE(WaitFor(4));
  const std::uint64_t heap = server_->stats().connection_memory_bytes;
  std::fprintf(stderr, "[memory] %s: server connection_memory_bytes=%llu", Scheme(), static_cast<unsigned long long>(heap));
  if (GetParam() == Backend::kFakeVerbs) {
    const std::uint64_t registered = fabric_->registered_bytes() / 2;
    std::fprintf(stderr, " registered per end=%llu", static_cast<unsigned long long>(registered));
    // 96 slots x (32 KiB + 32) + 64 control slots + 1 MiB arena + 4 MiB ring + 4 MiB staging.
    EXPECT_LE(registered, 13u << 20);
    EXPECT_GE(registered, 8u << 20) << "the rings and the arena are registered: the count is live";
  } else {
    // Read buffer 256 KiB, arena 1 MiB, ring and staging 4 MiB each, queues.
    EXPECT_LE(heap, 10u << 20);
  }
  std::fprintf(stderr, "\n");
}

INSTANTIATE_TEST_SUITE_P(Backends, SendPathTest, ::testing::Values(Backend::kTcp, Backend::kFakeVerbs),
                         [](const ::testing::TestParamInfo<Backend>& p) {
                           return std::string(p.param == Backend::kTcp ? "Tcp" : "FakeVerbs");
                         });

}  // namespace
}  // namespace strata::logservice
