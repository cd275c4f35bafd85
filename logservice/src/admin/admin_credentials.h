// AdminCredentials: who may call which RPC of logserviced's admin API
// (proto/admin.proto, served on admin_listen).
//
// Security model. Two bearer tokens, each read from its own file:
//   - the read-only token (admin_readonly_token_file): GetStatus only, for
//     monitoring hosts;
//   - the admin token (admin_token_file): every RPC, including the actions
//     that destroy data (CreateVolume, DropVolume).
// Neither may equal the writers' shared secret (the replication transport's
// cluster secret, which every mysqld host holds) nor each other: the daemon
// refuses to start otherwise (ValidateAdminTokens). So holding the secret
// gives no access to this API, and the read-only token cannot act.
// A caller presents its token in the request metadata as
// "authorization: Bearer <token>". A missing or unknown token is
// UNAUTHENTICATED, a read-only token on an action PERMISSION_DENIED (the
// gRPC mapping is in admin_server.cc). The token is confidential only over
// TLS (admin_tls_cert_file / admin_tls_key_file); without TLS the endpoint
// is plaintext and belongs on loopback.
//
// Comparison: Authenticate() compares the presented token with both
// configured tokens in time that depends only on the presented token's
// length, never on where the first differing byte is, so response timing
// does not reveal a token byte by byte.
//
// No gRPC here: the rules are unit-tested without a server.
#pragma once
#include <string>
#include <string_view>

#include "strata/logservice/status.h"

namespace strata::logservice::admin {

enum class AdminRole { kNone = 0, kReadOnly = 1, kAdmin = 2 };

// Shortest accepted token: a guessable token is no credential.
inline constexpr std::size_t kMinAdminTokenBytes = 16;

// The metadata key and scheme a caller uses.
inline constexpr char kAuthorizationKey[] = "authorization";
inline constexpr char kBearerPrefix[] = "Bearer ";

// True iff a == b. Runs over every byte of `presented` whatever the contents.
bool ConstantTimeEquals(std::string_view presented, std::string_view expected);

// The start-up rules above: admin token set and long enough; the read-only
// token optional, long enough when set; no two of (admin, read-only,
// writer secret) equal. kInvalidArgument names the broken rule, never a token.
[[nodiscard]] Status ValidateAdminTokens(std::string_view readonly_token, std::string_view admin_token,
                                         std::string_view writer_secret);

class AdminCredentials {
 public:
  AdminCredentials(std::string readonly_token, std::string admin_token)
      : readonly_(std::move(readonly_token)), admin_(std::move(admin_token)) {}

  // The role `authorization` (the whole metadata value, "Bearer <token>")
  // grants; kNone if it is empty, malformed or matches neither token.
  AdminRole Authenticate(std::string_view authorization) const;

 private:
  std::string readonly_;  // may be empty: no read-only access then
  std::string admin_;
};

}  // namespace strata::logservice::admin
