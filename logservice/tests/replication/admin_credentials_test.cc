// Admin API credential rules (admin_credentials.h) and their configuration:
// no gRPC needed, so these run in every build.
#include <gtest/gtest.h>

#include <fstream>

#include "admin_credentials.h"
#include "config.h"

namespace strata::logservice::admin {
namespace {

const std::string kAdmin = "admin-token-0123456789abcdef";
const std::string kReadOnly = "readonly-token-0123456789abcdef";
const std::string kSecret = "the-writers-cluster-secret";

TEST(AdminCredentials, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abd", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("ab", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abcabc", "abc"));  // a repetition is not the token
  EXPECT_FALSE(ConstantTimeEquals("", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("", ""));  // an unset token matches nothing
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
}

TEST(AdminCredentials, RolesFromBearerTokens) {
  AdminCredentials c(kReadOnly, kAdmin);
  EXPECT_EQ(c.Authenticate("Bearer " + kAdmin), AdminRole::kAdmin);
  EXPECT_EQ(c.Authenticate("Bearer " + kReadOnly), AdminRole::kReadOnly);
  EXPECT_EQ(c.Authenticate("Bearer " + kSecret), AdminRole::kNone);
  EXPECT_EQ(c.Authenticate(kAdmin), AdminRole::kNone) << "no Bearer scheme";
  EXPECT_EQ(c.Authenticate("Bearer "), AdminRole::kNone);
  EXPECT_EQ(c.Authenticate(""), AdminRole::kNone);
  EXPECT_EQ(c.Authenticate("Bearer " + kAdmin + "x"), AdminRole::kNone);
  AdminCredentials admin_only("", kAdmin);
  EXPECT_EQ(admin_only.Authenticate("Bearer "), AdminRole::kNone) << "an empty read-only token must not match";
}

TEST(AdminCredentials, TokensMustBeSetLongAndDistinctFromTheSecret) {
  EXPECT_TRUE(ValidateAdminTokens(kReadOnly, kAdmin, kSecret).ok());
  EXPECT_TRUE(ValidateAdminTokens("", kAdmin, kSecret).ok());
  EXPECT_FALSE(ValidateAdminTokens(kReadOnly, "", kSecret).ok());
  EXPECT_FALSE(ValidateAdminTokens(kReadOnly, "short", kSecret).ok());
  EXPECT_FALSE(ValidateAdminTokens("short", kAdmin, kSecret).ok());
  const Status same_as_secret = ValidateAdminTokens(kReadOnly, kSecret, kSecret);
  EXPECT_FALSE(same_as_secret.ok());
  EXPECT_EQ(same_as_secret.message().find(kSecret), std::string::npos) << "a token must never be echoed";
  EXPECT_FALSE(ValidateAdminTokens(kSecret, kAdmin, kSecret).ok());
  EXPECT_FALSE(ValidateAdminTokens(kAdmin, kAdmin, kSecret).ok());
}

// The daemon's options: admin_listen needs a token; tokens only from files;
// the admin token may not be the secret; TLS files go in pairs.
TEST(AdminCredentials, DaemonConfigRules) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/ac_secret") << kSecret << "\n";
  std::ofstream(dir + "/ac_admin") << kAdmin << "\n";
  std::ofstream(dir + "/ac_ro") << kReadOnly << "\n";
  const std::vector<std::string> base = {"--data_dir=/x", "--secret_file=" + dir + "/ac_secret",
                                         "--admin_listen=127.0.0.1:0"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return server::ParseDaemonConfig(a);
  };
  auto ok = with({"--admin_token_file=" + dir + "/ac_admin", "--admin_readonly_token_file=" + dir + "/ac_ro"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->admin_token, kAdmin);
  EXPECT_EQ(ok->admin_readonly_token, kReadOnly);
  auto none = with({});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("admin_token_file"), std::string::npos) << none.status().ToString();
  EXPECT_FALSE(with({"--admin_token_file=" + dir + "/ac_secret"}).ok()) << "the secret accepted as admin token";
  EXPECT_FALSE(with({"--admin_token=" + kAdmin}).ok()) << "a token on the command line";
  EXPECT_FALSE(with({"--admin_token_file=" + dir + "/ac_admin", "--admin_tls_cert_file=/c.pem"}).ok())
      << "a certificate without its key";
  EXPECT_FALSE(server::ParseDaemonConfig({"--data_dir=/x", "--secret_file=" + dir + "/ac_secret",
                                          "--admin_token_file=" + dir + "/ac_admin"})
                   .ok())
      << "admin options without admin_listen";
}

}  // namespace
}  // namespace strata::logservice::admin
