// rdma:// through a whole Transport on the fake NIC: two Transports that
// share a FakeVerbsFabric (TransportOptions::fake_verbs_for_tests) listen,
// connect, authenticate and exchange SEND and RDMA WRITE-with-immediate
// messages through the production verbs engine, the way the log service's
// in-process cluster tests use it. Every test fails on a buffer the engine
// touched while the fake NIC owned it.
#include <thread>

#include "strata/rdma/fake_verbs_fabric.h"
#include "test_support.h"

namespace strata::rdma::test {
namespace {

class FakeVerbsTransport : public ::testing::Test {
 protected:
  TransportOptions Options(uint64_t seed) {
    TransportOptions o = TestOptions(&log_, seed);
    o.fake_verbs_for_tests = fabric_;
    return o;
  }
  void TearDown() override {
    for (const auto& v : fabric_->violations()) ADD_FAILURE() << v;
    if (HasFailure()) std::fprintf(stderr, "fake verbs fabric seed %llu\n", static_cast<unsigned long long>(fabric_->seed()));
  }

  LogCapture log_;
  std::shared_ptr<FakeVerbsFabric> fabric_ = FakeVerbsFabric::Create({.seed = 5});
};

TEST_F(FakeVerbsTransport, RdmaSchemeConnectsSendsAndBulksThroughTheFakeNic) {
  auto server = MakeTransport(Options(42));
  auto client = MakeTransport(Options(43));
  EXPECT_TRUE(log_.Contains("in-process fake NIC")) << "a Transport on the fake says so in its log";
  Signal signal;
  std::vector<std::pair<std::vector<std::byte>, bool>> got;
  auto listener = server->Listen("rdma://127.0.0.1:0", [&](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [&](Connection& c, const Message& m) {
      signal.Notify([&] { got.emplace_back(std::vector<std::byte>(m.payload().begin(), m.payload().end()), m.is_bulk()); });
      EXPECT_TRUE(c.Send(m.payload().first(std::min<size_t>(m.payload().size(), 16)), {}, 5s).ok());
    };
    return h;
  });
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const uint16_t port = listener.value()->endpoint().port;
  ASSERT_NE(port, 0);
  std::atomic<int> echoes{0};
  ConnectionHandlers h;
  h.on_message = [&](Connection&, const Message&) { ++echoes; };
  auto conn = client->Connect("rdma://127.0.0.1:" + std::to_string(port), h);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  EXPECT_EQ(conn.value()->backend(), Scheme::kRdma);
  ASSERT_GE(conn.value()->max_bulk_size(), 1u << 20);
  for (int i = 0; i < 60; ++i) {
    const auto p = Pattern(i % 3 == 0 ? 200000 + i : 100 + i, i);
    const Status s = i % 3 == 0 ? conn.value()->SendBulk(p, {}, 5s) : conn.value()->Send(p, {}, 5s);
    ASSERT_TRUE(s.ok()) << i << ": " << s.ToString();
  }
  ASSERT_TRUE(signal.WaitUntil([&] { return got.size() == 60; }));
  {
    std::lock_guard lock(signal.mu());
    for (int i = 0; i < 60; ++i) {
      EXPECT_EQ(got[i].first, Pattern(i % 3 == 0 ? 200000 + i : 100 + i, i)) << i;
      EXPECT_EQ(got[i].second, i % 3 == 0) << i;
    }
  }
  for (int i = 0; i < 2000 && echoes.load() < 60; ++i) std::this_thread::sleep_for(1ms);
  EXPECT_EQ(echoes.load(), 60);
  EXPECT_GT(fabric_->registered_bytes(), 0u);
  conn.value()->Close();
  conn.value().reset();
  listener.value().reset();
  client.reset();
  server.reset();
  EXPECT_EQ(fabric_->registered_bytes(), 0u) << "every queue pair deregistered with its Transport";
}

TEST_F(FakeVerbsTransport, ConnectToAPortNobodyListensOnIsRefused) {
  auto client = MakeTransport(Options(43));
  auto conn = client->Connect("rdma://127.0.0.1:9", {});
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kUnavailable) << conn.status().ToString();
  EXPECT_NE(conn.status().message().find("connection refused"), std::string::npos) << conn.status().ToString();
}

TEST_F(FakeVerbsTransport, WrongSecretIsRefusedOverVerbsToo) {
  auto server = MakeTransport(Options(42));
  TransportOptions bad = Options(43);
  bad.secret = "not-the-secret";
  auto client = MakeTransport(bad);
  auto listener = server->Listen("rdma://127.0.0.1:0", [](const std::shared_ptr<Connection>&) { return ConnectionHandlers{}; });
  ASSERT_TRUE(listener.ok());
  auto conn = client->Connect("rdma://127.0.0.1:" + std::to_string(listener.value()->endpoint().port), {});
  ASSERT_FALSE(conn.ok());
  EXPECT_EQ(conn.status().code(), StatusCode::kAuthFailed) << conn.status().ToString();
}

TEST_F(FakeVerbsTransport, WithoutTheSwitchRdmaNeedsADevice) {
  if (Transport::RdmaDeviceAvailable()) GTEST_SKIP() << "this machine has an RDMA device";
  auto t = MakeTransport(TestOptions(&log_, 44));
  auto conn = t->Connect("rdma://127.0.0.1:9", {});
  ASSERT_FALSE(conn.ok());
  EXPECT_NE(conn.status().message().find("no usable RDMA device"), std::string::npos) << conn.status().ToString();
}

}  // namespace
}  // namespace strata::rdma::test
