// Admin API credentials; rules and security model in admin_credentials.h.
#include "admin_credentials.h"

namespace strata::logservice::admin {

bool ConstantTimeEquals(std::string_view presented, std::string_view expected) {
  // Every byte of `presented` is visited and folded into `diff`; a length
  // mismatch is folded in too instead of returning early.
  std::size_t diff = presented.size() ^ expected.size();
  for (std::size_t i = 0; i < presented.size(); ++i) {
    const unsigned char want = expected.empty() ? 0 : static_cast<unsigned char>(expected[i % expected.size()]);
    diff |= static_cast<unsigned char>(presented[i]) ^ want;
  }
  return diff == 0 && !expected.empty();
}

Status ValidateAdminTokens(std::string_view readonly_token, std::string_view admin_token,
                           std::string_view writer_secret) {
  if (admin_token.empty())
    return Status::InvalidArgument("admin_listen needs admin_token_file (the admin API has no unauthenticated mode)");
  if (admin_token == writer_secret)
    return Status::InvalidArgument("the admin token equals the cluster secret; give the admin API its own token");
  if (!readonly_token.empty() && readonly_token == writer_secret)
    return Status::InvalidArgument("the read-only admin token equals the cluster secret; give it its own token");
  if (admin_token.size() < kMinAdminTokenBytes)
    return Status::InvalidArgument("the admin token is shorter than " + std::to_string(kMinAdminTokenBytes) +
                                   " bytes");
  if (!readonly_token.empty() && readonly_token.size() < kMinAdminTokenBytes)
    return Status::InvalidArgument("the read-only admin token is shorter than " +
                                   std::to_string(kMinAdminTokenBytes) + " bytes");
  if (readonly_token == admin_token)
    return Status::InvalidArgument("the read-only and the admin token are the same; they must differ");
  return Status::Ok();
}

AdminRole AdminCredentials::Authenticate(std::string_view authorization) const {
  const std::string_view prefix(kBearerPrefix);
  if (authorization.size() <= prefix.size() || authorization.substr(0, prefix.size()) != prefix)
    return AdminRole::kNone;
  const std::string_view token = authorization.substr(prefix.size());
  // Both comparisons always run: which token matched does not show in the time.
  const bool admin = ConstantTimeEquals(token, admin_);
  const bool readonly = ConstantTimeEquals(token, readonly_);
  if (admin) return AdminRole::kAdmin;
  if (readonly) return AdminRole::kReadOnly;
  return AdminRole::kNone;
}

}  // namespace strata::logservice::admin
