// Handshake proofs: both directions, and each reason for refusal.
#include "test_support.h"

namespace strata::rdma::test {
namespace {

struct Fixture {
  NonceSource nonces{7};
  Nonce server_nonce = nonces.Next().value();
  Nonce client_nonce = nonces.Next().value();
  PeerParams params{16, 4096, 1 << 20, 0x1234, 0xABCD0000};
};

TEST(Handshake, ClientProofVerifiesAndCarriesParams) {
  Fixture f;
  const auto auth = BuildAuth("s3cret", "prod", f.server_nonce, f.client_nonce, f.params);
  auto info = VerifyAuth(auth, "s3cret", "prod", f.server_nonce);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->client_nonce, f.client_nonce);
  EXPECT_EQ(info->params.receive_credits, 16u);
  EXPECT_EQ(info->params.bulk_ring_addr, 0xABCD0000u);
}

TEST(Handshake, RefusesWrongSecretClusterOrNonce) {
  Fixture f;
  const auto auth = BuildAuth("s3cret", "prod", f.server_nonce, f.client_nonce, f.params);
  auto wrong_secret = VerifyAuth(auth, "other", "prod", f.server_nonce);
  EXPECT_EQ(wrong_secret.status().code(), StatusCode::kAuthFailed);
  EXPECT_NE(wrong_secret.status().message().find("authentication failed"), std::string::npos);
  auto wrong_cluster = VerifyAuth(auth, "s3cret", "staging", f.server_nonce);
  EXPECT_NE(wrong_cluster.status().message().find("cluster id mismatch (peer sent 'prod'"), std::string::npos);
  // A replayed AUTH does not answer a fresh challenge.
  EXPECT_FALSE(VerifyAuth(auth, "s3cret", "prod", f.nonces.Next().value()).ok());
}

TEST(Handshake, RefusesTamperedParams) {
  Fixture f;
  auto auth = BuildAuth("s3cret", "prod", f.server_nonce, f.client_nonce, f.params);
  auth[wire::kClusterIdSize + wire::kNonceSize] ^= std::byte{0xFF};  // receive_credits
  EXPECT_FALSE(VerifyAuth(auth, "s3cret", "prod", f.server_nonce).ok());
}

TEST(Handshake, ServerProofIsDistinctFromClientProof) {
  Fixture f;
  const auto accept = BuildAccept("s3cret", "prod", f.server_nonce, f.client_nonce, f.params);
  auto ok = VerifyAccept(accept, "s3cret", "prod", f.server_nonce, f.client_nonce);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->max_message_size, 4096u);
  auto impostor = VerifyAccept(accept, "guess", "prod", f.server_nonce, f.client_nonce);
  EXPECT_NE(impostor.status().message().find("server proof"), std::string::npos);
  // Swapping nonce roles (reflection) fails.
  EXPECT_FALSE(VerifyAccept(accept, "s3cret", "prod", f.client_nonce, f.server_nonce).ok());
}

TEST(Handshake, SeededNoncesReproduce) {
  NonceSource a(99), b(99), c(0);
  EXPECT_EQ(a.Next().value(), b.Next().value());
  EXPECT_NE(c.Next().value(), c.Next().value());
}

// The OS random source failing must not yield a nonce at all: a nonce from
// a fallback generator (the old code seeded one with 0) is predictable, and
// a predictable server nonce lets a recorded AUTH be replayed.
TEST(Handshake, FailingRandomSourceYieldsNoNonce) {
  int calls = 0;
  NonceSource broken(0, [&](std::span<std::byte>) {
    ++calls;
    return false;
  });
  Result<Nonce> n = broken.Next();
  EXPECT_EQ(calls, 1);
  ASSERT_FALSE(n.ok()) << "got a nonce although the random source failed";
  EXPECT_EQ(n.status().code(), StatusCode::kIoError);
  EXPECT_NE(n.status().message().find("random source failed"), std::string::npos) << n.status().ToString();
  // An injected source that works is what the nonces come from.
  NonceSource fixed(0, [](std::span<std::byte> out) {
    for (auto& b : out) b = std::byte{0x5A};
    return true;
  });
  Nonce want;
  want.fill(std::byte{0x5A});
  EXPECT_EQ(fixed.Next().value(), want);
}

}  // namespace
}  // namespace strata::rdma::test
