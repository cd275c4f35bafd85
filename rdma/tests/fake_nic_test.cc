// The verbs connection engine (posting, completions, credits, bulk RDMA
// WRITE with immediate, disconnect, errors) driven in-process through the
// fake NIC (verbs/fake_nic.h): asynchronous, poisoning, reordering across
// queues, with seeded fault injection. Every test fails on a buffer the
// engine touched while the NIC owned it (FakeNic::violations()).
//
// STRATA_RDMA_FAKE_NIC_SEED=<n> replays a failing run's NIC schedule and faults.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <random>
#include <thread>

#include "test_support.h"
#include "verbs/fake_nic.h"
#include "verbs/verbs_connection.h"

namespace strata::rdma::test {
namespace {

uint64_t FakeNicSeed(uint64_t fallback) {
  if (const char* v = std::getenv("STRATA_RDMA_FAKE_NIC_SEED")) return std::strtoull(v, nullptr, 10);
  return fallback;
}

// Waits for a condition nobody signals (stats); polls every millisecond.
bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

class FakeNicPair : public ::testing::Test {
 protected:
  static constexpr int kClientSide = 0;

  FakeNicOptions NicOptions(uint64_t seed = 1) {
    FakeNicOptions o;
    o.seed = FakeNicSeed(seed);
    return o;
  }

  void Connect(TransportOptions server_opts, TransportOptions client_opts) {
    Connect(std::move(server_opts), std::move(client_opts), NicOptions());
  }
  void Connect(TransportOptions server_opts, TransportOptions client_opts, FakeNicOptions nic_opts) {
    nic_ = std::make_unique<FakeNic>(std::move(nic_opts));
    server_ctx_ = std::make_shared<TransportContext>(server_opts);
    client_ctx_ = std::make_shared<TransportContext>(client_opts);
    server_shard_ = std::make_unique<VerbsShard>(server_ctx_);
    client_shard_ = std::make_unique<VerbsShard>(client_ctx_);
    ASSERT_TRUE(server_shard_->Start().ok());
    ASSERT_TRUE(client_shard_->Start().ok());
    // Queue depths as verbs_backend.cc creates them.
    const uint32_t depth = std::max(client_opts.receive_credits, server_opts.receive_credits) + VerbsConnection::kControlReserve;
    auto [a, b] = nic_->CreatePair(VerbsConnection::kSendQueueDepth, depth);
    client_ = std::make_shared<VerbsConnection>(client_ctx_, Role::kClient, "fake-server", std::move(a), client_shard_.get());
    server_ = std::make_shared<VerbsConnection>(server_ctx_, Role::kServer, "fake-client", std::move(b), server_shard_.get());
    ASSERT_TRUE(client_->Init().ok());
    ASSERT_TRUE(server_->Init().ok());
    server_->SetAcceptHandler([this](const std::shared_ptr<Connection>&) {
      signal_.Notify([&] { server_accepted_ = true; });
      ConnectionHandlers h;
      h.on_message = [this](Connection& c, const Message& m) {
        if (retain_) {
          auto lease = m.Retain();
          signal_.Notify([&] { leases_.push_back(std::move(lease)); });
        }
        signal_.Notify([&] {
          received_.emplace_back(m.payload().begin(), m.payload().end());
          bulk_.push_back(m.is_bulk());
        });
        if (echo_) EXPECT_TRUE(c.Send(m.payload(), {}, 5s).ok());
        // Workloads: echo what fits, never wait on the I/O thread, ignore failures.
        if (echo_some_ && !m.is_bulk()) c.Send(m.payload(), {}, 0ms).IgnoreError();
      };
      h.on_close = [this](Connection&, const Status& s) { signal_.Notify([&] { server_close_.push_back(s); }); };
      return h;
    });
    ConnectionHandlers ch;
    ch.on_message = [this](Connection&, const Message& m) {
      signal_.Notify([&] { echoed_.emplace_back(m.payload().begin(), m.payload().end()); });
    };
    ch.on_close = [this](Connection&, const Status& s) { signal_.Notify([&] { client_close_.push_back(s); }); };
    client_->SetHandlers(ch);
    client_->SetEstablishedCallback([this](const Status& s) { signal_.Notify([&] { established_ = s; has_established_ = true; }); });
    auto client = client_;
    auto server = server_;
    client_shard_->loop().Post([this, client] { client_shard_->Adopt(client); });
    server_shard_->loop().Post([this, server] { server_shard_->Adopt(server); });
    ASSERT_TRUE(signal_.WaitUntil([&] { return has_established_; }));
  }
  void TearDown() override {
    if (client_shard_) client_shard_->Stop();
    if (server_shard_) server_shard_->Stop();
    if (nic_) {
      for (const auto& v : nic_->violations()) ADD_FAILURE() << v;
      if (HasFailure()) std::fprintf(stderr, "fake NIC seed %llu (STRATA_RDMA_FAKE_NIC_SEED replays it)\n",
                                     static_cast<unsigned long long>(nic_->seed()));
    }
  }
  size_t Received() {
    std::lock_guard lock(signal_.mu());
    return received_.size();
  }

  LogCapture log_;
  std::unique_ptr<FakeNic> nic_;
  std::shared_ptr<TransportContext> server_ctx_, client_ctx_;
  std::unique_ptr<VerbsShard> server_shard_, client_shard_;
  std::shared_ptr<VerbsConnection> client_, server_;
  Signal signal_;
  bool has_established_ = false;
  bool server_accepted_ = false;
  Status established_;
  std::atomic<bool> echo_{false}, retain_{false}, echo_some_{false};
  std::vector<std::vector<std::byte>> received_, echoed_;
  std::vector<bool> bulk_;
  std::vector<MessageLease> leases_;
  std::vector<Status> server_close_, client_close_;
};

TEST_F(FakeNicPair, HandshakeThenOrderedSendsAndEcho) {
  echo_ = true;
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  ASSERT_TRUE(established_.ok()) << established_.ToString();
  EXPECT_EQ(client_->backend(), Scheme::kRdma);
  for (int i = 0; i < 500; ++i) ASSERT_TRUE(client_->Send(Pattern(1 + i % 300, i), {}, 5s).ok());
  ASSERT_TRUE(signal_.WaitUntil([&] { return echoed_.size() == 500; }));
  std::lock_guard lock(signal_.mu());
  for (int i = 0; i < 500; ++i) ASSERT_EQ(echoed_[i], Pattern(1 + i % 300, i)) << i;
}

TEST_F(FakeNicPair, BulkGoesThroughRemoteWriteWithImmediate) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  ASSERT_GE(client_->max_bulk_size(), 1u << 20);
  std::vector<std::vector<std::byte>> sent;
  for (int i = 0; i < 20; ++i) {
    sent.push_back(Pattern(i % 2 ? 100 : (700u << 10), i));
    ASSERT_TRUE((i % 2 ? client_->Send(sent.back(), {}, 5s) : client_->SendBulk(sent.back(), {}, 5s)).ok()) << i;
  }
  ASSERT_TRUE(signal_.WaitUntil([&] { return received_.size() == sent.size(); }));
  std::lock_guard lock(signal_.mu());
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(received_[i], sent[i]) << i;
    EXPECT_EQ(bulk_[i], i % 2 == 0);
  }
}

TEST_F(FakeNicPair, CreditsStallSenderUntilLeasesAreReleased) {
  auto server_opts = TestOptions(&log_);
  server_opts.receive_credits = 4;
  retain_ = true;
  Connect(server_opts, TestOptions(&log_, 43));
  int accepted = 0;
  Status last;
  for (int i = 0; i < 10000 && (last = client_->Send(Pattern(32 * 1024, i))).ok(); ++i) ++accepted;
  EXPECT_EQ(last.code(), StatusCode::kBusy);
  ASSERT_TRUE(signal_.WaitUntil([&] { return leases_.size() == 4; }));
  EXPECT_EQ(client_->stats().send_credits, 0u);
  {
    std::lock_guard lock(signal_.mu());
    retain_ = false;
    leases_.clear();  // credits (and receive slots) go back
  }
  ASSERT_TRUE(signal_.WaitUntil([&] { return received_.size() == static_cast<size_t>(accepted); }));
}

TEST_F(FakeNicPair, WrongSecretRefusedOverVerbsToo) {
  auto bad = TestOptions(&log_, 43);
  bad.secret = "wrong";
  Connect(TestOptions(&log_), bad);
  EXPECT_EQ(established_.code(), StatusCode::kAuthFailed);
  EXPECT_NE(established_.message().find("refused by server"), std::string::npos);
}

TEST_F(FakeNicPair, CloseIsReportedOnBothSides) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  ASSERT_TRUE(client_->Send(Pattern(10, 1)).ok());
  client_->Close();
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1 && server_close_.size() == 1; }));
  EXPECT_TRUE(client_close_[0].ok()) << client_close_[0].ToString();
  EXPECT_EQ(server_close_[0].code(), StatusCode::kClosed);
  EXPECT_EQ(received_.size(), 1u);
}

TEST_F(FakeNicPair, LinkLossFailsPendingWork) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  server_->Fail(IoError("simulated port down"));  // disconnects the fake QP
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1; }));
  EXPECT_EQ(client_close_[0].code(), StatusCode::kClosed);
  EXPECT_NE(client_close_[0].message().find("IBV_WC_WR_FLUSH_ERR"), std::string::npos) << client_close_[0].ToString();
  EXPECT_EQ(client_->Send(Pattern(1, 1)).code(), StatusCode::kClosed);
}

// A bulk frame's staging region is also the source of its RDMA WRITE: it may
// be reused only once the peer released the frame AND the WRITE completed
// locally (until then the NIC may still read it, e.g. to retransmit). The
// peer's release can arrive first: here the client's acknowledgements are
// held while the server takes the frame and returns its ring space.
TEST_F(FakeNicPair, BulkStagingIsNotReusedBeforeItsWriteCompletes) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  const uint32_t credits = client_->stats().send_credits;
  nic_->Hold(0, kClientSide, FakeNic::Stage::kAck, true);
  const auto first = Pattern(20000, 1), second = Pattern(20000, 2);
  ASSERT_TRUE(client_->SendBulk(first, {}, 5s).ok());
  ASSERT_TRUE(signal_.WaitUntil([&] { return received_.size() == 1; }));
  // The server released it; its CREDIT (bulk_freed 1) reaches the client.
  ASSERT_TRUE(Eventually([&] { return client_->stats().send_credits == credits; }));
  Status s = client_->SendBulk(second, {}, 0ms);
  EXPECT_TRUE(s.ok() || s.code() == StatusCode::kBusy) << s.ToString();
  nic_->Hold(0, kClientSide, FakeNic::Stage::kAck, false);
  if (!s.ok()) ASSERT_TRUE(client_->SendBulk(second, {}, 5s).ok());
  ASSERT_TRUE(signal_.WaitUntil([&] { return received_.size() == 2; }));
  std::lock_guard lock(signal_.mu());
  EXPECT_EQ(received_[0], first);
  EXPECT_EQ(received_[1], second);
}

TEST_F(FakeNicPair, RetryExceededNamesStatusWorkRequestAndOperation) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  // The next request the client transmits fails: our DATA frame, or a
  // keepalive PING that got there first (then Send may find it closed).
  nic_->AddFault({FakeFault::Kind::kRetryExceeded, kClientSide, -1, 0, /*probability=*/1.0});
  Status done;
  bool has_done = false;
  const Status sent = client_->Send(Pattern(100, 1), [&](const Status& st) { signal_.Notify([&] { done = st; has_done = true; }); });
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1 && (has_done || !sent.ok()); }));
  const Status& why = client_close_[0];
  EXPECT_EQ(why.code(), StatusCode::kIoError) << why.ToString();
  EXPECT_NE(why.message().find("completion error IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded) on wr_id 0x"),
            std::string::npos) << why.ToString();
  EXPECT_NE(why.message().find("(SEND of "), std::string::npos) << why.ToString();
  if (sent.ok()) EXPECT_EQ(done.message(), why.message()) << "the pending Send's callback gets the connection's error";
  else EXPECT_EQ(sent.code(), StatusCode::kClosed) << sent.ToString();
  EXPECT_TRUE(log_.Contains("IBV_WC_RETRY_EXC_ERR"));
  ASSERT_TRUE(signal_.WaitUntil([&] { return server_close_.size() == 1; }));
  EXPECT_EQ(server_close_[0].code(), StatusCode::kClosed) << server_close_[0].ToString();
}

TEST_F(FakeNicPair, RemoteAccessErrorOnABulkWriteIsNamed) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kRemoteAccessError, kClientSide, -1, 0, 1.0});
  ASSERT_TRUE(client_->SendBulk(Pattern(5000, 1), {}, 5s).ok());
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1; }));
  const Status& why = client_close_[0];
  EXPECT_EQ(why.code(), StatusCode::kIoError) << why.ToString();
  EXPECT_NE(why.message().find("completion error IBV_WC_REM_ACCESS_ERR"), std::string::npos) << why.ToString();
  EXPECT_NE(why.message().find("(RDMA WRITE with immediate of BULK frame 1"), std::string::npos) << why.ToString();
}

TEST_F(FakeNicPair, FailedPostSendNamesTheVerbAndErrno) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kPostSendFails, kClientSide, -1, 0, 1.0, ENOMEM});
  client_->Send(Pattern(100, 1)).IgnoreError();  // its post (or a PING's before it) fails the connection
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1; }));
  EXPECT_EQ(client_close_[0].code(), StatusCode::kIoError);
  EXPECT_EQ(client_close_[0].message().rfind("ibv_post_send failed: ENOMEM (Cannot allocate memory)", 0), 0u)
      << client_close_[0].ToString();
}

TEST_F(FakeNicPair, FailedRepostOfAReceiveNamesTheVerb) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kPostRecvFails, 1 - kClientSide, -1, 0, 1.0, ENOMEM});
  client_->Send(Pattern(100, 1)).IgnoreError();  // the server reposts its slot after this (or a PING)
  ASSERT_TRUE(signal_.WaitUntil([&] { return server_close_.size() == 1; }));
  EXPECT_EQ(server_close_[0].code(), StatusCode::kIoError);
  EXPECT_EQ(server_close_[0].message().rfind("ibv_post_recv failed: ENOMEM", 0), 0u) << server_close_[0].ToString();
}

TEST_F(FakeNicPair, PollErrorFailsTheConnection) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kPollFails, kClientSide, -1, 0, 1.0});
  client_->Send(Pattern(100, 1)).IgnoreError();  // the client's next poll fails (it may precede this Send)
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1; }));
  EXPECT_EQ(client_close_[0].code(), StatusCode::kIoError) << client_close_[0].ToString();
  EXPECT_EQ(client_close_[0].message().rfind("ibv_poll_cq failed", 0), 0u) << client_close_[0].ToString();
}

TEST_F(FakeNicPair, QueuePairInErrorStateFailsBothSides) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kQpError, kClientSide, -1, 0, 1.0});
  client_->Send(Pattern(100, 1)).IgnoreError();  // its transmission (or a PING's) errors the QP
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1 && server_close_.size() == 1; }));
  EXPECT_EQ(client_close_[0].code(), StatusCode::kClosed) << client_close_[0].ToString();
  EXPECT_NE(client_close_[0].message().find("completion error IBV_WC_WR_FLUSH_ERR"), std::string::npos)
      << client_close_[0].ToString();
  EXPECT_EQ(server_close_[0].code(), StatusCode::kClosed) << server_close_[0].ToString();
}

// The link drops under both ends (kDisconnect: neither called
// rdma_disconnect): each flushes and reports the flush by name, once.
TEST_F(FakeNicPair, LinkDropFailsBothSidesWithTheFlushStatus) {
  Connect(TestOptions(&log_), TestOptions(&log_, 43));
  nic_->AddFault({FakeFault::Kind::kDisconnect, kClientSide, -1, 0, 1.0});
  client_->Send(Pattern(100, 1)).IgnoreError();  // its transmission (or a PING's) drops the link
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1 && server_close_.size() == 1; }));
  for (const Status& why : {client_close_[0], server_close_[0]}) {
    EXPECT_EQ(why.code(), StatusCode::kClosed) << why.ToString();
    EXPECT_NE(why.message().find("completion error IBV_WC_WR_FLUSH_ERR"), std::string::npos) << why.ToString();
  }
  EXPECT_EQ(nic_->stats().faults_by_kind[static_cast<size_t>(FakeFault::Kind::kDisconnect)], 1u);
}

// max_faults bounds the faults a probability fires; SetFaultsEnabled(false)
// stops them while events are still counted.
TEST(FakeNicFaultSwitches, BudgetAndOffSwitchStopFaults) {
  FakeNicOptions o;
  o.seed = FakeNicSeed(9);
  o.poison = false;
  o.max_faults = 3;
  o.faults.push_back({FakeFault::Kind::kPostRecvFails, -1, -1, 0, /*probability=*/1.0, ENOMEM});
  FakeNic nic(o);
  auto [a, b] = nic.CreatePair(4, 64);
  std::vector<std::byte> buf(64);
  auto keys = a->Register(buf, false);
  ASSERT_TRUE(keys.ok());
  int failed = 0;
  for (int i = 0; i < 10; ++i) failed += a->PostRecv(i, {buf.data(), 1}, keys.value().lkey).ok() ? 0 : 1;
  EXPECT_EQ(failed, 3) << "the budget of 3 is spent, later posts go through";
  FakeNicOptions o2 = o;
  o2.max_faults = 0;
  FakeNic nic2(o2);
  nic2.SetFaultsEnabled(false);
  auto [c, d] = nic2.CreatePair(4, 64);
  auto keys2 = c->Register(buf, false);
  ASSERT_TRUE(keys2.ok());
  EXPECT_TRUE(c->PostRecv(1, {buf.data(), 1}, keys2.value().lkey).ok());
  nic2.SetFaultsEnabled(true);
  const Status s = c->PostRecv(2, {buf.data(), 1}, keys2.value().lkey);
  EXPECT_EQ(s.message().rfind("ibv_post_recv failed: ENOMEM", 0), 0u) << s.ToString();
  EXPECT_EQ(nic2.stats().faults_fired, 1u);
}

// Several connections on one fake NIC and one I/O thread per side: their
// completions interleave in any order across queue pairs; each connection
// still delivers its own messages intact and in order.
TEST(FakeNicShared, ConnectionsSharingANicAndThreadsKeepTheirOwnOrder) {
  LogCapture log;
  FakeNicOptions nic_opts;
  nic_opts.seed = FakeNicSeed(77);
  FakeNic nic(nic_opts);
  // Not a liveness test: keepalives and handshake deadlines loose enough for
  // slow (sanitizer) builds; under ThreadSanitizer six handshakes on one
  // NIC thread took longer than TestOptions' 1 s handshake_timeout.
  auto relaxed = [&log](uint64_t seed) {
    TransportOptions o = TestOptions(&log, seed);
    o.keepalive_interval = 1s;
    o.keepalive_timeout = 30s;
    o.handshake_timeout = 30s;
    o.connect_timeout = 30s;
    return o;
  };
  const TransportOptions opts = relaxed(42);
  auto server_ctx = std::make_shared<TransportContext>(opts);
  auto client_ctx = std::make_shared<TransportContext>(relaxed(43));
  VerbsShard server_shard(server_ctx), client_shard(client_ctx);
  // Declared after everything the I/O threads touch: on any exit (a failed
  // ASSERT too) they stop before those go away.
  struct StopOnExit {
    VerbsShard &a, &b;
    ~StopOnExit() {
      a.Stop();
      b.Stop();
    }
  };
  ASSERT_TRUE(server_shard.Start().ok());
  ASSERT_TRUE(client_shard.Start().ok());
  constexpr int kConns = 6, kMsgs = 300;
  struct Link {
    std::shared_ptr<VerbsConnection> client, server;
    std::vector<std::vector<std::byte>> got;
    bool established = false;
  };
  std::vector<Link> links(kConns);
  Signal signal;
  StopOnExit stop{client_shard, server_shard};
  for (int i = 0; i < kConns; ++i) {
    auto [a, b] = nic.CreatePair(VerbsConnection::kSendQueueDepth, VerbsConnection::RecvQueueDepth(opts));
    Link& link = links[i];
    link.client = std::make_shared<VerbsConnection>(client_ctx, Role::kClient, "s" + std::to_string(i), std::move(a), &client_shard);
    link.server = std::make_shared<VerbsConnection>(server_ctx, Role::kServer, "c" + std::to_string(i), std::move(b), &server_shard);
    ASSERT_TRUE(link.client->Init().ok());
    ASSERT_TRUE(link.server->Init().ok());
    link.server->SetAcceptHandler([&signal, &link](const std::shared_ptr<Connection>&) {
      ConnectionHandlers h;
      h.on_message = [&signal, &link](Connection&, const Message& m) {
        signal.Notify([&] { link.got.emplace_back(m.payload().begin(), m.payload().end()); });
      };
      return h;
    });
    link.client->SetHandlers({});
    link.client->SetEstablishedCallback([&signal, &link](const Status& st) {
      EXPECT_TRUE(st.ok()) << st.ToString();
      signal.Notify([&] { link.established = true; });
    });
    auto client = link.client, server = link.server;
    client_shard.loop().Post([&client_shard, client] { client_shard.Adopt(client); });
    server_shard.loop().Post([&server_shard, server] { server_shard.Adopt(server); });
  }
  ASSERT_TRUE(signal.WaitUntil([&] {
    for (const Link& l : links) if (!l.established) return false;
    return true;
  }));
  auto payload = [](int conn, int m) { return Pattern(m % 10 == 0 ? 30000 : 1 + (m * 7 + conn) % 3000, conn * 100000 + m); };
  for (int m = 0; m < kMsgs; ++m) {
    for (int i = 0; i < kConns; ++i) {
      const auto p = payload(i, m);
      const Status st = m % 10 == 0 ? links[i].client->SendBulk(p, {}, 10s) : links[i].client->Send(p, {}, 10s);
      ASSERT_TRUE(st.ok()) << "connection " << i << " message " << m << ": " << st.ToString();
    }
  }
  ASSERT_TRUE(signal.WaitUntil(
      [&] {
        for (const Link& l : links) if (l.got.size() != size_t{kMsgs}) return false;
        return true;
      },
      60s));
  {
    std::lock_guard lock(signal.mu());
    for (int i = 0; i < kConns; ++i)
      for (int m = 0; m < kMsgs; ++m) ASSERT_EQ(links[i].got[m], payload(i, m)) << "connection " << i << " message " << m;
  }
  for (const auto& v : nic.violations()) ADD_FAILURE() << v;
}

// Seeded workloads: traffic in both shapes under random faults. Whatever
// fails, the server receives an intact, in-order prefix of what was sent,
// each side reports its close exactly once, with a named reason, and the
// engine never touches a buffer the NIC owns.
class FakeNicWorkload : public FakeNicPair, public ::testing::WithParamInterface<int> {};

TEST_P(FakeNicWorkload, FaultsFailCleanlyAndNeverCorrupt) {
  const uint64_t seed = FakeNicSeed(1000 + GetParam());
  std::mt19937_64 rng(seed);
  FakeNicOptions nic = NicOptions(seed);
  const bool faults = rng() % 4 != 0;  // a quarter of the runs: asynchrony alone
  auto server_opts = TestOptions(&log_);
  server_opts.receive_credits = 8 + rng() % 64;
  server_opts.bulk_ring_size = (256u << 10) << (rng() % 3);
  auto client_opts = TestOptions(&log_, 43);
  client_opts.bulk_ring_size = server_opts.bulk_ring_size;
  echo_some_ = rng() % 2 == 0;  // half the runs: traffic both ways
  Connect(server_opts, client_opts, nic);
  ASSERT_TRUE(established_.ok()) << established_.ToString();
  if (faults) {
    using K = FakeFault::Kind;
    const double scale = 1.0 / (100 << (rng() % 8));  // 1/100 .. 1/12800 per event
    for (K k : {K::kPostSendFails, K::kPostRecvFails, K::kPollFails, K::kRetryExceeded, K::kRemoteAccessError, K::kQpError,
                K::kDisconnect})
      nic_->AddFault({k, -1, -1, 0, scale * (k == K::kRemoteAccessError ? 5 : 1), ENOMEM});
  }
  std::vector<std::vector<std::byte>> sent;
  std::vector<bool> sent_bulk;
  for (int i = 0; i < 400; ++i) {
    const bool bulk = rng() % 5 == 0;
    auto payload = Pattern(bulk ? 1 + rng() % (server_opts.bulk_ring_size / 3) : 1 + rng() % 5000, static_cast<uint32_t>(i));
    const Status s = bulk ? client_->SendBulk(payload, {}, 2s) : client_->Send(payload, {}, 2s);
    if (!s.ok()) {
      EXPECT_NE(s.code(), StatusCode::kBusy) << "a healthy connection stalled: " << s.ToString();
      break;
    }
    sent.push_back(std::move(payload));
    sent_bulk.push_back(bulk);
  }
  client_->Close();
  ASSERT_TRUE(signal_.WaitUntil([&] { return client_close_.size() == 1 && server_close_.size() == 1; }))
      << "a side never reported its close (client " << client_close_.size() << ", server " << server_close_.size() << ")";
  std::this_thread::sleep_for(20ms);  // a second on_close would show up here
  std::lock_guard lock(signal_.mu());
  EXPECT_EQ(client_close_.size(), 1u);
  EXPECT_EQ(server_close_.size(), 1u);
  ASSERT_LE(received_.size(), sent.size());
  for (size_t i = 0; i < received_.size(); ++i) ASSERT_EQ(received_[i], sent[i]) << "message " << i;
  // Echoes (dropped when the server's send buffer was full) come back intact
  // and in order: a subsequence of the ordinary messages sent.
  size_t next = 0;
  for (size_t e = 0; e < echoed_.size(); ++e) {
    while (next < sent.size() && (sent_bulk[next] || sent[next] != echoed_[e])) ++next;
    ASSERT_LT(next, sent.size()) << "echo " << e << " is not an in-order copy of a sent message";
    ++next;
  }
  if (nic_->stats().faults_fired == 0) {
    EXPECT_TRUE(client_close_[0].ok()) << client_close_[0].ToString();
    EXPECT_EQ(received_.size(), sent.size());
  } else if (!client_close_[0].ok()) {
    EXPECT_FALSE(client_close_[0].message().empty());
  }
}

// STRATA_RDMA_FAKE_NIC_RUNS=<n> runs n seeds instead of 24 (a longer soak).
int WorkloadRuns() {
  const char* v = std::getenv("STRATA_RDMA_FAKE_NIC_RUNS");
  return v != nullptr ? std::atoi(v) : 24;
}
INSTANTIATE_TEST_SUITE_P(Seeds, FakeNicWorkload, ::testing::Range(0, WorkloadRuns()));

}  // namespace
}  // namespace strata::rdma::test
