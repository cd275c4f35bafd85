// What a peer that has not authenticated can cost or learn over verbs,
// through the fake NIC (the TCP twin is unauthenticated_peer_test.cc):
// registered (pinned) memory, heap, its place among the pending handshakes,
// and the text of a refusal. The rdma_cm accept path itself cannot run
// here (no device); it admits through the same HandshakeAdmission these
// tests drive, before it creates a queue pair.
#include <cstdio>
#include <future>
#include <thread>

#include "test_support.h"
#include "verbs/fake_nic.h"
#include "verbs/verbs_connection.h"

namespace strata::rdma::test {
namespace {

// A silent peer may make the server register its handshake slots only
// (one receive, two control sends of a control frame each).
constexpr uint64_t kMaxRegisteredBytesPerUnauthenticatedPeer = 2 * 1024;
constexpr uint64_t kMaxHeapBytesPerUnauthenticatedPeer = 16 * 1024;

bool Eventually(const std::function<bool()>& done, std::chrono::milliseconds timeout = 10s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

class FakeNicUnauthenticated : public ::testing::Test {
 protected:
  void StartServer(const TransportOptions& o) {
    FakeNicOptions no;
    no.seed = 7;
    nic_ = std::make_unique<FakeNic>(no);
    server_ctx_ = std::make_shared<TransportContext>(o);
    server_shard_ = std::make_unique<VerbsShard>(server_ctx_);
    ASSERT_TRUE(server_shard_->Start().ok());
    client_ctx_ = std::make_shared<TransportContext>(TestOptions(&log_, 43));
    client_shard_ = std::make_unique<VerbsShard>(client_ctx_);
    ASSERT_TRUE(client_shard_->Start().ok());
  }
  void TearDown() override {
    if (client_shard_) client_shard_->Stop();
    if (server_shard_) server_shard_->Stop();
    if (nic_) for (const auto& v : nic_->violations()) ADD_FAILURE() << v;
  }

  std::pair<std::unique_ptr<QueuePair>, std::unique_ptr<QueuePair>> Pair() {
    return nic_->CreatePair(VerbsConnection::kSendQueueDepth, VerbsConnection::RecvQueueDepth(server_ctx_->options));
  }

  // A server connection on `qp`, started as the backend starts an accepted one.
  std::shared_ptr<VerbsConnection> Serve(std::unique_ptr<QueuePair> qp, const std::string& peer,
                                         HandshakeAdmission::Slot slot = {}) {
    auto conn = std::make_shared<VerbsConnection>(server_ctx_, Role::kServer, peer, std::move(qp), server_shard_.get());
    EXPECT_TRUE(conn->Init().ok());
    conn->AdoptHandshakeSlot(std::move(slot));
    conn->SetAcceptHandler([](const std::shared_ptr<Connection>&) { return ConnectionHandlers{}; });
    VerbsShard* shard = server_shard_.get();
    shard->loop().Post([shard, conn] { shard->Adopt(conn); });
    return conn;
  }

  // A client connection on `qp`; returns how its handshake ended.
  Status Client(std::unique_ptr<QueuePair> qp, std::shared_ptr<TransportContext> ctx) {
    auto conn = std::make_shared<VerbsConnection>(ctx, Role::kClient, "fake-server", std::move(qp), client_shard_.get());
    if (Status s = conn->Init(); !s.ok()) return s;
    auto done = std::make_shared<std::promise<Status>>();
    auto result = done->get_future();
    conn->SetEstablishedCallback([done](const Status& s) { done->set_value(s); });
    VerbsShard* shard = client_shard_.get();
    shard->loop().Post([shard, conn] { shard->Adopt(conn); });
    if (result.wait_for(10s) != std::future_status::ready) return Timeout("no handshake outcome");
    clients_.push_back(conn);
    return result.get();
  }

  LogCapture log_;
  std::unique_ptr<FakeNic> nic_;
  std::shared_ptr<TransportContext> server_ctx_, client_ctx_;
  std::unique_ptr<VerbsShard> server_shard_, client_shard_;
  std::vector<std::shared_ptr<VerbsConnection>> clients_;
};

// Issue "nothing before authentication", verbs: the old code registered
// receive_credits + 64 slots of a maximal frame, the control slots, the
// send arena and the bulk ring (~13 MiB with these options; with the log
// service's ~212 MiB) for every accepted peer, before it had said a word.
TEST_F(FakeNicUnauthenticated, SilentPeerRegistersOnlyTheHandshakeSlots) {
  auto o = TestOptions(&log_);
  o.handshake_timeout = 20s;
  StartServer(o);
  constexpr int kPeers = 4;
  std::vector<std::unique_ptr<QueuePair>> silent;  // their side posts and registers nothing
  std::vector<std::shared_ptr<VerbsConnection>> servers;
  for (int i = 0; i < kPeers; ++i) {
    auto [peer, ours] = Pair();
    silent.push_back(std::move(peer));
    servers.push_back(Serve(std::move(ours), "silent-" + std::to_string(i)));
  }
  // Each server has posted its CHALLENGE (it waits for a receive that never comes).
  ASSERT_TRUE(Eventually([&] { return nic_->stats().posted_sends >= kPeers; }));
  const uint64_t registered = nic_->stats().registered_bytes / kPeers;
  const uint64_t heap = static_cast<uint64_t>(server_ctx_->connection_bytes.load()) / kPeers;
  std::printf("per unauthenticated verbs peer: %llu bytes registered, %llu bytes of heap\n",
              static_cast<unsigned long long>(registered), static_cast<unsigned long long>(heap));
  EXPECT_LE(registered, kMaxRegisteredBytesPerUnauthenticatedPeer);
  EXPECT_LE(heap, kMaxHeapBytesPerUnauthenticatedPeer);

  // After the handshake, the full memory is registered.
  const uint64_t before = nic_->stats().registered_bytes;
  auto [theirs, ours] = Pair();
  servers.push_back(Serve(std::move(ours), "honest"));
  ASSERT_TRUE(Client(std::move(theirs), client_ctx_).ok());
  const uint64_t pair_bytes = nic_->stats().registered_bytes - before;
  std::printf("registered by one authenticated verbs pair (both sides): %llu bytes\n",
              static_cast<unsigned long long>(pair_bytes));
  EXPECT_GE(pair_bytes, 2 * uint64_t{o.bulk_ring_size});
}

// Issue "security of the same path", cap, verbs: the rdma_cm thread admits
// a connect request through the transport's HandshakeAdmission before it
// makes a queue pair; over the cap it is refused (logged). A silent peer
// holds its place only until handshake_timeout; then an honest one gets in.
TEST_F(FakeNicUnauthenticated, CapRefusesExtrasAndTheDeadlineFreesTheSilentPeersPlace) {
  auto o = TestOptions(&log_);
  o.max_pending_handshakes = 1;
  o.handshake_timeout = 300ms;
  StartServer(o);
  HandshakeAdmission& admission = server_ctx_->admission;
  auto slot = admission.TryAdmit("silent-peer", server_ctx_->Now());
  ASSERT_TRUE(slot.has_value());
  EXPECT_FALSE(admission.TryAdmit("extra-peer", server_ctx_->Now()).has_value()) << "admitted over the cap";
  EXPECT_TRUE(log_.Contains("refusing connection from extra-peer"));

  auto [peer, ours] = Pair();
  auto silent = Serve(std::move(ours), "silent-peer", std::move(*slot));
  EXPECT_TRUE(log_.WaitFor("handshake did not complete within 300 ms", 5s));
  ASSERT_TRUE(Eventually([&] { return admission.pending() == 0; }));

  auto again = admission.TryAdmit("honest-peer", server_ctx_->Now());
  ASSERT_TRUE(again.has_value()) << "the silent peer's place was not given back";
  auto [theirs, mine] = Pair();
  auto honest = Serve(std::move(mine), "honest-peer", std::move(*again));
  Status s = Client(std::move(theirs), client_ctx_);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(Eventually([&] { return admission.pending() == 0; })) << "an authenticated peer still counts as pending";
}

// Issue "security of the same path", refusal, verbs: a stranger with the
// wrong cluster id learns only that it was refused.
TEST_F(FakeNicUnauthenticated, RefusalCarriesOnlyTheGenericReason) {
  StartServer(TestOptions(&log_));
  auto stranger = TestOptions(&log_, 44);
  stranger.cluster_id = "other-cluster";
  auto stranger_ctx = std::make_shared<TransportContext>(stranger);
  auto [theirs, ours] = Pair();
  auto server = Serve(std::move(ours), "stranger");
  Status s = Client(std::move(theirs), stranger_ctx);
  EXPECT_EQ(s.code(), StatusCode::kAuthFailed) << s.ToString();
  EXPECT_EQ(s.message(), std::string("refused by server: ") + wire::kAuthRefusedReason);
  EXPECT_EQ(s.message().find("test-cluster"), std::string::npos) << s.ToString();
  EXPECT_TRUE(log_.WaitFor("cluster id mismatch (peer sent 'other-cluster'"));
}

}  // namespace
}  // namespace strata::rdma::test
