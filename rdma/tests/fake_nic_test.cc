// The verbs connection engine (posting, completions, credits, bulk RDMA
// WRITE with immediate, disconnect) driven in-process through FakeNic.
// FakeNic is a test double of a queue pair pair, not an RDMA emulator.
#include <atomic>

#include "test_support.h"
#include "verbs/fake_nic.h"
#include "verbs/verbs_connection.h"

namespace strata::rdma::test {
namespace {

class FakeNicPair : public ::testing::Test {
 protected:
  void Connect(TransportOptions server_opts, TransportOptions client_opts) {
    server_ctx_ = std::make_shared<TransportContext>(server_opts);
    client_ctx_ = std::make_shared<TransportContext>(client_opts);
    server_shard_ = std::make_unique<VerbsShard>(server_ctx_);
    client_shard_ = std::make_unique<VerbsShard>(client_ctx_);
    ASSERT_TRUE(server_shard_->Start().ok());
    ASSERT_TRUE(client_shard_->Start().ok());
    auto [a, b] = FakeNic::CreatePair();
    client_ = std::make_shared<VerbsConnection>(client_ctx_, Role::kClient, "fake-server", std::move(a), client_shard_.get());
    server_ = std::make_shared<VerbsConnection>(server_ctx_, Role::kServer, "fake-client", std::move(b), server_shard_.get());
    ASSERT_TRUE(client_->Init().ok());
    ASSERT_TRUE(server_->Init().ok());
    server_->SetAcceptHandler([this](const std::shared_ptr<Connection>&) {
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
  }

  LogCapture log_;
  std::shared_ptr<TransportContext> server_ctx_, client_ctx_;
  std::unique_ptr<VerbsShard> server_shard_, client_shard_;
  std::shared_ptr<VerbsConnection> client_, server_;
  Signal signal_;
  bool has_established_ = false;
  Status established_;
  std::atomic<bool> echo_{false}, retain_{false};
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
  EXPECT_NE(client_close_[0].message().find("WR flushed"), std::string::npos) << client_close_[0].ToString();
  EXPECT_EQ(client_->Send(Pattern(1, 1)).code(), StatusCode::kClosed);
}

}  // namespace
}  // namespace strata::rdma::test
