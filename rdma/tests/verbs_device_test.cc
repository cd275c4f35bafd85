// The real verbs backend. Runs only where an RDMA device exists (InfiniBand,
// RoCE or Soft-RoCE); elsewhere each test says plainly that it was skipped.
#include "test_support.h"

namespace strata::rdma::test {
namespace {

#define SKIP_WITHOUT_RDMA_DEVICE()                                                              \
  if (!Transport::RdmaDeviceAvailable())                                                       \
  GTEST_SKIP() << "no RDMA device on this machine (ibv_get_device_list found none; no "       \
                  "Soft-RoCE): the verbs backend was compiled but not exercised here. "        \
                  "The FakeNic tests cover its connection engine."

TEST(VerbsDevice, AutoPicksTcpWithoutDevice) {
  LogCapture log;
  auto t = MakeTransport(TestOptions(&log));
  auto l = t->Listen("auto://127.0.0.1:0", [](const auto&) { return ConnectionHandlers{}; });
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  auto c = t->Connect("auto://127.0.0.1:" + std::to_string(l.value()->endpoint().port), {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c.value()->backend(), Transport::RdmaDeviceAvailable() ? Scheme::kRdma : Scheme::kTcp);
}

TEST(VerbsDevice, LoopbackEchoOverRdma) {
  SKIP_WITHOUT_RDMA_DEVICE();
  LogCapture log;
  auto server = MakeTransport(TestOptions(&log));
  auto l = server->Listen("rdma://127.0.0.1:0", [](const auto&) {
    ConnectionHandlers h;
    h.on_message = [](Connection& c, const Message& m) { EXPECT_TRUE(c.Send(m.payload(), {}, 5s).ok()); };
    return h;
  });
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  Signal signal;
  std::vector<std::vector<std::byte>> got;
  ConnectionHandlers h;
  h.on_message = [&](Connection&, const Message& m) { signal.Notify([&] { got.emplace_back(m.payload().begin(), m.payload().end()); }); };
  auto client = MakeTransport(TestOptions(&log, 43));
  auto c = client->Connect("rdma://127.0.0.1:" + std::to_string(l.value()->endpoint().port), h);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(c.value()->Send(Pattern(64 + i, i), {}, 5s).ok());
  ASSERT_TRUE(signal.WaitUntil([&] { return got.size() == 100; }));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(got[i], Pattern(64 + i, i));
  ASSERT_TRUE(c.value()->SendBulk(Pattern(1 << 20, 5), {}, 5s).ok());
}

}  // namespace
}  // namespace strata::rdma::test
