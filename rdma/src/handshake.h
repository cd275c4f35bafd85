// Handshake: mutual authentication with a shared secret, before any payload.
//
//   S -> C  CHALLENGE  server_nonce
//   C -> S  AUTH       cluster_id, client_nonce, client params,
//                      HMAC(secret, "client" label || server_nonce ||
//                           cluster_id || client_nonce || params)
//   S -> C  ACCEPT     server params,
//                      HMAC(secret, "server" label || client_nonce ||
//                           server_nonce || cluster_id || params)
//           or REFUSE  reason; the server closes.
//
// Both proofs bind fresh nonces from both sides (no replay) and the
// advertised parameters (no tampering with credits or ring addresses). MACs
// are compared in constant time. These are pure functions; the connection
// drives them and the tests call them directly.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <mutex>
#include <random>
#include <span>
#include <string_view>

#include "strata/rdma/status.h"
#include "wire_format.h"

namespace strata::rdma {

using Nonce = std::array<std::byte, wire::kNonceSize>;

// What a side tells its peer about itself.
struct PeerParams {
  uint32_t receive_credits = 0;
  uint32_t max_message_size = 0;
  uint32_t bulk_ring_size = 0;
  uint32_t bulk_rkey = 0;
  uint64_t bulk_ring_addr = 0;
};

// Fills its argument with unpredictable bytes; false when it cannot.
using RandomBytes = std::function<bool(std::span<std::byte>)>;

// Nonces from the OS random source (`random`, default OpenSSL's RAND_bytes),
// or from a seeded PRNG when seed != 0 (tests that must reproduce).
// Fails closed: when the random source fails, Next() returns kIoError and
// never a nonce; the handshake that asked is refused. A guessable nonce
// would let a recorded AUTH be replayed, so there is no fallback.
// Thread-safe.
class NonceSource {
 public:
  explicit NonceSource(uint64_t seed, RandomBytes random = {});
  Result<Nonce> Next();

 private:
  bool seeded_;
  RandomBytes random_;
  std::mutex mu_;
  std::mt19937_64 prng_;
};

struct AuthInfo {
  Nonce client_nonce;
  PeerParams params;
};

// Client: the AUTH payload answering `server_nonce`.
std::array<std::byte, wire::kAuthSize> BuildAuth(std::string_view secret, std::string_view cluster_id,
                                                 const Nonce& server_nonce, const Nonce& client_nonce,
                                                 const PeerParams& params);
// Server: checks cluster id and proof. kAuthFailed says which one failed.
Result<AuthInfo> VerifyAuth(std::span<const std::byte> auth, std::string_view secret,
                            std::string_view cluster_id, const Nonce& server_nonce);
// Server: the ACCEPT payload.
std::array<std::byte, wire::kAcceptSize> BuildAccept(std::string_view secret, std::string_view cluster_id,
                                                     const Nonce& server_nonce, const Nonce& client_nonce,
                                                     const PeerParams& params);
// Client: checks the server's proof; returns the server's parameters.
Result<PeerParams> VerifyAccept(std::span<const std::byte> accept, std::string_view secret,
                                std::string_view cluster_id, const Nonce& server_nonce,
                                const Nonce& client_nonce);

}  // namespace strata::rdma
