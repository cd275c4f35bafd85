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

// FakeVerbsFabricOptions::faults, one kind at a time at probability 1,
// turned on once the connection is up: the connection closes (on either
// side) with a status that names the verb or the completion status, and
// nothing stays registered once the Transports are gone.
struct FabricFaultCase {
  const char* name;
  double FakeVerbsFaults::*probability;
  const char* named;  // in the close status of at least one side
};

class FakeVerbsFabricFault : public ::testing::TestWithParam<FabricFaultCase> {};

TEST_P(FakeVerbsFabricFault, SurfacesAsANamedConnectionError) {
  const FabricFaultCase& fc = GetParam();
  FakeVerbsFabricOptions fo;
  fo.seed = 11;
  fo.faults.*fc.probability = 1.0;
  fo.faults.enabled = false;
  auto fabric = FakeVerbsFabric::Create(fo);
  LogCapture log;
  auto options = [&](uint64_t seed) {
    TransportOptions o = TestOptions(&log, seed);
    o.fake_verbs_for_tests = fabric;
    return o;
  };
  auto server = MakeTransport(options(42));
  auto client = MakeTransport(options(43));
  Signal signal;
  std::vector<Status> closes;
  auto listener = server->Listen("rdma://127.0.0.1:0", [&](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_close = [&](Connection&, const Status& st) { signal.Notify([&] { closes.push_back(st); }); };
    return h;
  });
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  ConnectionHandlers h;
  h.on_close = [&](Connection&, const Status& st) { signal.Notify([&] { closes.push_back(st); }); };
  auto conn = client->Connect("rdma://127.0.0.1:" + std::to_string(listener.value()->endpoint().port), h);
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  fabric->SetFaultsEnabled(true);
  for (int i = 0; i < 50; ++i) {
    const auto p = Pattern(i % 2 == 0 ? 5000 : 100, i);
    if (!(i % 2 == 0 ? conn.value()->SendBulk(p, {}, 1s) : conn.value()->Send(p, {}, 1s)).ok()) break;
  }
  ASSERT_TRUE(signal.WaitUntil([&] { return closes.size() == 2; })) << fc.name << ": both sides close";
  {
    std::lock_guard lock(signal.mu());
    bool named = false;
    for (const Status& st : closes) {
      EXPECT_FALSE(st.ok()) << fc.name;
      named |= st.message().find(fc.named) != std::string::npos;
    }
    EXPECT_TRUE(named) << fc.name << ": " << closes[0].ToString() << " / " << closes[1].ToString();
  }
  EXPECT_GE(fabric->faults_fired().total(), 1u);
  for (const auto& v : fabric->violations()) ADD_FAILURE() << v;
  conn.value().reset();
  listener.value().reset();
  client.reset();
  server.reset();
  EXPECT_EQ(fabric->registered_bytes(), 0u) << fc.name;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, FakeVerbsFabricFault,
    ::testing::Values(FabricFaultCase{"PostSend", &FakeVerbsFaults::post_send_fails, "ibv_post_send failed: ENOMEM"},
                      FabricFaultCase{"PostRecv", &FakeVerbsFaults::post_recv_fails, "ibv_post_recv failed: ENOMEM"},
                      FabricFaultCase{"Poll", &FakeVerbsFaults::poll_fails, "ibv_poll_cq failed"},
                      FabricFaultCase{"ErrorCompletion", &FakeVerbsFaults::error_completion, "IBV_WC_RETRY_EXC_ERR"},
                      FabricFaultCase{"RemoteAccess", &FakeVerbsFaults::remote_access_error, "IBV_WC_REM_ACCESS_ERR"},
                      FabricFaultCase{"QpError", &FakeVerbsFaults::qp_error, "IBV_WC_WR_FLUSH_ERR"},
                      FabricFaultCase{"Disconnect", &FakeVerbsFaults::disconnect, "IBV_WC_WR_FLUSH_ERR"}),
    [](const ::testing::TestParamInfo<FabricFaultCase>& p) { return std::string(p.param.name); });

TEST_F(FakeVerbsTransport, WithoutTheSwitchRdmaNeedsADevice) {
  if (Transport::RdmaDeviceAvailable()) GTEST_SKIP() << "this machine has an RDMA device";
  auto t = MakeTransport(TestOptions(&log_, 44));
  auto conn = t->Connect("rdma://127.0.0.1:9", {});
  ASSERT_FALSE(conn.ok());
  EXPECT_NE(conn.status().message().find("no usable RDMA device"), std::string::npos) << conn.status().ToString();
}

}  // namespace
}  // namespace strata::rdma::test
