// auto:// on a machine whose RDMA device is present but whose verbs setup
// fails: it must fall back to TCP (listening and connecting) and say so
// once in the log. The device probe and the verbs backend are replaced
// through detail::TransportFactory, so this runs without a device.
#include <atomic>

#include "backend.h"
#include "test_support.h"
#include "transport_internal.h"

namespace strata::rdma::test {
namespace {

// A verbs backend whose setup fails the way a misconfigured host does.
struct VerbsFailures {
  Status listen = Unavailable("rdma_bind_addr failed: ENODEV (No such device)");
  Status connect = Unavailable("rdma_resolve_addr failed: RDMA_CM_EVENT_ADDR_ERROR (status -19)");
  bool link_up = false;  // the failure comes after rdma_connect established
  std::atomic<int> connects{0};
};

class FailingVerbsBackend final : public detail::Backend {
 public:
  explicit FailingVerbsBackend(std::shared_ptr<VerbsFailures> f) : f_(std::move(f)) {}
  Result<std::unique_ptr<Listener>> Listen(const Endpoint&, AcceptHandler) override { return f_->listen; }
  Result<std::shared_ptr<Connection>> Connect(const Endpoint&, ConnectionHandlers, detail::ConnectReport* report) override {
    ++f_->connects;
    if (report != nullptr) report->link_established = f_->link_up;
    return f_->connect;
  }

 private:
  std::shared_ptr<VerbsFailures> f_;
};

std::unique_ptr<Transport> WithBrokenVerbs(LogCapture* log, std::shared_ptr<VerbsFailures> f, uint64_t seed,
                                           bool backend_fails_to_start = false) {
  detail::TransportHooks hooks;
  hooks.device_count = [] { return 1; };
  hooks.create_verbs = [f, backend_fails_to_start](std::shared_ptr<TransportContext>)
      -> Result<std::unique_ptr<detail::Backend>> {
    if (backend_fails_to_start) return Unavailable("rdma_create_event_channel failed: ENODEV (No such device)");
    return std::unique_ptr<detail::Backend>(new FailingVerbsBackend(f));
  };
  auto t = detail::TransportFactory::Create(TestOptions(log, seed), hooks);
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? std::move(t).value() : nullptr;
}

int WarningsContaining(const LogCapture& log, const std::string& needle) {
  int n = 0;
  for (const auto& line : log.Lines())
    if (line.rfind("WARN ", 0) == 0 && line.find(needle) != std::string::npos) ++n;
  return n;
}

AcceptHandler Echo() {
  return [](const std::shared_ptr<Connection>&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) { EXPECT_TRUE(c.Send(m.payload(), {}, 5s).ok()); };
    return h;
  };
}

// One echo round trip over `c`, whose handlers push into `got`.
void RoundTrip(Connection& c, Signal& signal, std::vector<std::vector<std::byte>>& got) {
  const size_t before = [&] { std::lock_guard l(signal.mu()); return got.size(); }();
  ASSERT_TRUE(c.Send(Pattern(100, 9), {}, 5s).ok());
  ASSERT_TRUE(signal.WaitUntil([&] { return got.size() == before + 1; }));
}

TEST(AutoFallback, ListenAndConnectUseTcpWhenVerbsSetupFailsAndSaySoOnce) {
  LogCapture server_log, client_log;
  auto verbs = std::make_shared<VerbsFailures>();
  auto server = WithBrokenVerbs(&server_log, verbs, 42);
  auto l = server->Listen("auto://127.0.0.1:0", Echo());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto client = WithBrokenVerbs(&client_log, verbs, 43);
  Signal signal;
  std::vector<std::vector<std::byte>> got;
  ConnectionHandlers h;
  h.on_message = [&](Connection&, const Message& m) { signal.Notify([&] { got.emplace_back(m.payload().begin(), m.payload().end()); }); };
  std::vector<std::shared_ptr<Connection>> conns;
  for (int i = 0; i < 3; ++i) {
    auto c = client->Connect("auto://127.0.0.1:" + std::to_string(l.value()->endpoint().port), h);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_EQ(c.value()->backend(), Scheme::kTcp);
    RoundTrip(*c.value(), signal, got);
    conns.push_back(std::move(c).value());
  }
  EXPECT_EQ(verbs->connects.load(), 3) << "each auto:// connect tries verbs first";
  EXPECT_EQ(WarningsContaining(client_log, "auto:// falls back to TCP"), 1);
  EXPECT_EQ(WarningsContaining(client_log, "rdma_resolve_addr failed"), 1) << "the reason, in that one line";
  EXPECT_EQ(WarningsContaining(server_log, "auto:// falls back to TCP"), 1);
  EXPECT_EQ(WarningsContaining(server_log, "rdma_bind_addr failed"), 1);
}

TEST(AutoFallback, VerbsBackendThatCannotStartIsReportedOnce) {
  LogCapture log;
  auto verbs = std::make_shared<VerbsFailures>();
  auto t = WithBrokenVerbs(&log, verbs, 42, /*backend_fails_to_start=*/true);
  auto l = t->Listen("auto://127.0.0.1:0", Echo());
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto c = t->Connect("auto://127.0.0.1:" + std::to_string(l.value()->endpoint().port), {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value()->backend(), Scheme::kTcp);
  auto r = t->Connect("rdma://127.0.0.1:" + std::to_string(l.value()->endpoint().port), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("rdma_create_event_channel failed"), std::string::npos) << r.status().ToString();
  EXPECT_EQ(WarningsContaining(log, "auto:// falls back to TCP"), 1);
  EXPECT_EQ(WarningsContaining(log, "rdma_create_event_channel failed"), 1);
}

TEST(AutoFallback, RdmaSchemeNeverFallsBack) {
  LogCapture log;
  auto verbs = std::make_shared<VerbsFailures>();
  auto t = WithBrokenVerbs(&log, verbs, 42);
  auto l = t->Listen("tcp://127.0.0.1:0", Echo());
  ASSERT_TRUE(l.ok());
  auto c = t->Connect("rdma://127.0.0.1:" + std::to_string(l.value()->endpoint().port), {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), verbs->connect.message());
  EXPECT_EQ(WarningsContaining(log, "falls back"), 0);
}

TEST(AutoFallback, NoFallbackOnceTheRdmaLinkCameUp) {
  LogCapture log;
  auto verbs = std::make_shared<VerbsFailures>();
  verbs->link_up = true;  // reachable over RDMA; the peer refused us
  verbs->connect = AuthFailed("refused by server: cluster id mismatch");
  auto t = WithBrokenVerbs(&log, verbs, 42);
  auto l = t->Listen("tcp://127.0.0.1:0", Echo());
  ASSERT_TRUE(l.ok());
  auto c = t->Connect("auto://127.0.0.1:" + std::to_string(l.value()->endpoint().port), {});
  ASSERT_FALSE(c.ok()) << "fell back to TCP after the peer answered over RDMA";
  EXPECT_EQ(c.status().code(), StatusCode::kAuthFailed);
  EXPECT_EQ(WarningsContaining(log, "falls back"), 0);
}

}  // namespace
}  // namespace strata::rdma::test
