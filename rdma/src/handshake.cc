// Handshake implementation: payload layouts and HMAC-SHA256 via OpenSSL.
#include "handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <optional>
#include <string>

#include "strata/rdma/little_endian.h"

namespace strata::rdma {
namespace {

using Mac = std::array<std::byte, wire::kMacSize>;

void EncodeParams(const PeerParams& p, std::byte* out) {
  PutFixed32(out, p.receive_credits);
  PutFixed32(out + 4, p.max_message_size);
  PutFixed32(out + 8, p.bulk_ring_size);
  PutFixed32(out + 12, p.bulk_rkey);
  PutFixed64(out + 16, p.bulk_ring_addr);
}
PeerParams DecodeParams(const std::byte* in) {
  PeerParams p;
  p.receive_credits = GetFixed32(in);
  p.max_message_size = GetFixed32(in + 4);
  p.bulk_ring_size = GetFixed32(in + 8);
  p.bulk_rkey = GetFixed32(in + 12);
  p.bulk_ring_addr = GetFixed64(in + 16);
  return p;
}

void EncodeClusterId(std::string_view id, std::byte* out) {
  std::memset(out, 0, wire::kClusterIdSize);
  std::memcpy(out, id.data(), std::min(id.size(), wire::kClusterIdSize));
}

// HMAC-SHA256(secret, label || parts...).
std::optional<Mac> Hmac(std::string_view secret, std::string_view label,
                        std::initializer_list<std::span<const std::byte>> parts) {
  Mac mac{};
  EVP_MAC* algo = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = algo ? EVP_MAC_CTX_new(algo) : nullptr;
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0), OSSL_PARAM_construct_end()};
  size_t out_len = 0;
  bool ok = ctx && EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(secret.data()), secret.size(), params) == 1 &&
            EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(label.data()), label.size()) == 1;
  for (const auto& part : parts) {
    ok = ok && EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(part.data()), part.size()) == 1;
  }
  ok = ok && EVP_MAC_final(ctx, reinterpret_cast<unsigned char*>(mac.data()), &out_len, mac.size()) == 1;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(algo);
  if (!ok || out_len != mac.size()) return std::nullopt;  // never verifies
  return mac;
}

bool MacEqual(const std::byte* a, const std::byte* b) {
  return CRYPTO_memcmp(a, b, wire::kMacSize) == 0;
}

// AUTH layout offsets.
constexpr size_t kAuthCluster = 0;
constexpr size_t kAuthNonce = kAuthCluster + wire::kClusterIdSize;
constexpr size_t kAuthParams = kAuthNonce + wire::kNonceSize;
constexpr size_t kAuthMac = kAuthParams + wire::kParamsSize;
static_assert(kAuthMac + wire::kMacSize == wire::kAuthSize);
// ACCEPT layout offsets.
constexpr size_t kAcceptParams = 0;
constexpr size_t kAcceptMac = wire::kParamsSize;
static_assert(kAcceptMac + wire::kMacSize == wire::kAcceptSize);

}  // namespace

NonceSource::NonceSource(uint64_t seed, RandomBytes random)
    : seeded_(seed != 0), random_(std::move(random)), prng_(seed) {}

Result<Nonce> NonceSource::Next() {
  Nonce n{};
  if (seeded_) {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < n.size(); i += 8) {
      const uint64_t v = prng_();
      std::memcpy(n.data() + i, &v, 8);
    }
    return n;
  }
  const bool ok = random_ ? random_(n)
                          : RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), static_cast<int>(n.size())) == 1;
  if (!ok) return IoError("cannot make a handshake nonce: the OS random source failed (RAND_bytes); refusing the handshake");
  return n;
}

std::array<std::byte, wire::kAuthSize> BuildAuth(std::string_view secret, std::string_view cluster_id,
                                                 const Nonce& server_nonce, const Nonce& client_nonce,
                                                 const PeerParams& params) {
  std::array<std::byte, wire::kAuthSize> out{};
  EncodeClusterId(cluster_id, out.data() + kAuthCluster);
  std::memcpy(out.data() + kAuthNonce, client_nonce.data(), wire::kNonceSize);
  EncodeParams(params, out.data() + kAuthParams);
  // On HMAC failure the proof stays zero and the server refuses us.
  if (const auto mac = Hmac(secret, wire::kClientLabel, {server_nonce, std::span<const std::byte>(out.data(), kAuthMac)}))
    std::memcpy(out.data() + kAuthMac, mac->data(), mac->size());
  return out;
}

Result<AuthInfo> VerifyAuth(std::span<const std::byte> auth, std::string_view secret,
                            std::string_view cluster_id, const Nonce& server_nonce) {
  if (auth.size() != wire::kAuthSize) return AuthFailed("AUTH payload has wrong size");
  std::byte want_cluster[wire::kClusterIdSize];
  EncodeClusterId(cluster_id, want_cluster);
  // Constant time, like the MAC: how long the comparison takes must not
  // tell a prober how much of a guessed cluster id was right.
  if (CRYPTO_memcmp(want_cluster, auth.data() + kAuthCluster, wire::kClusterIdSize) != 0) {
    std::string theirs(reinterpret_cast<const char*>(auth.data() + kAuthCluster), wire::kClusterIdSize);
    theirs.resize(std::strlen(theirs.c_str()));
    // Only printable characters reach the log.
    for (char& c : theirs) if (c < 0x20 || c > 0x7e) c = '?';
    return AuthFailed("cluster id mismatch (peer sent '" + theirs + "', this node is '" + std::string(cluster_id) + "')");
  }
  const auto mac = Hmac(secret, wire::kClientLabel, {server_nonce, auth.first(kAuthMac)});
  if (!mac) return AuthFailed("HMAC-SHA256 computation failed (OpenSSL)");
  if (!MacEqual(mac->data(), auth.data() + kAuthMac)) return AuthFailed("authentication failed (client proof does not match the shared secret)");
  AuthInfo info;
  std::memcpy(info.client_nonce.data(), auth.data() + kAuthNonce, wire::kNonceSize);
  info.params = DecodeParams(auth.data() + kAuthParams);
  return info;
}

std::array<std::byte, wire::kAcceptSize> BuildAccept(std::string_view secret, std::string_view cluster_id,
                                                     const Nonce& server_nonce, const Nonce& client_nonce,
                                                     const PeerParams& params) {
  std::array<std::byte, wire::kAcceptSize> out{};
  EncodeParams(params, out.data() + kAcceptParams);
  std::byte cluster[wire::kClusterIdSize];
  EncodeClusterId(cluster_id, cluster);
  if (const auto mac = Hmac(secret, wire::kServerLabel,
                            {client_nonce, server_nonce, cluster, std::span<const std::byte>(out.data(), kAcceptMac)}))
    std::memcpy(out.data() + kAcceptMac, mac->data(), mac->size());
  return out;
}

Result<PeerParams> VerifyAccept(std::span<const std::byte> accept, std::string_view secret,
                                std::string_view cluster_id, const Nonce& server_nonce,
                                const Nonce& client_nonce) {
  if (accept.size() != wire::kAcceptSize) return AuthFailed("ACCEPT payload has wrong size");
  std::byte cluster[wire::kClusterIdSize];
  EncodeClusterId(cluster_id, cluster);
  const auto mac = Hmac(secret, wire::kServerLabel, {client_nonce, server_nonce, cluster, accept.first(kAcceptMac)});
  if (!mac) return AuthFailed("HMAC-SHA256 computation failed (OpenSSL)");
  if (!MacEqual(mac->data(), accept.data() + kAcceptMac))
    return AuthFailed("server proof does not match the shared secret (impostor or wrong secret)");
  return DecodeParams(accept.data() + kAcceptParams);
}

}  // namespace strata::rdma
