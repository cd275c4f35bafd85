// The admin API end to end: real logserviced processes, logservicectl as the
// operator runs it. Credentials (who may read, who may act, the cluster
// secret is no credential here), TLS with a certificate made at test time,
// and drop-volume / create-volume: the path a second `mysqld --initialize`
// against the same nodes needs.
#include <gtest/gtest.h>

#ifdef STRATA_LOGSERVICE_WITH_GRPC
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "local_cluster.h"
#include "strata/logservice/client.h"

namespace strata::logservice {
namespace {

using client::LogClient;
using std::chrono::milliseconds;
using testing::LocalCluster;

client::ClusterConfig Config(const LocalCluster& c) {
  client::ClusterConfig cfg;
  cfg.nodes = c.addresses();
  cfg.transport = client::TransportKind::kTcp;
  cfg.write_quorum = c.addresses().size() / 2 + 1;
  cfg.cluster_id = c.cluster_id();
  cfg.secret = c.secret();
  cfg.open_timeout = milliseconds(8000);
  cfg.op_timeout = milliseconds(2000);
  cfg.reconnect_interval = milliseconds(100);
  return cfg;
}

int Run(const std::string& cmd, std::string* out) {
  out->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  return WEXITSTATUS(pclose(p));
}

std::string Admins(const LocalCluster& c, int n) {
  std::string a;
  for (int i = 0; i < n; ++i) a += (i ? "," : "") + c.admin_address(i);
  return a;
}

// logservicectl <command> --admin=<every node> <rest>
int Ctl(const LocalCluster& c, int n, const std::string& command, const std::string& rest, std::string* out) {
  return Run(std::string(LOGSERVICECTL_PATH) + " " + command + " --admin=" + Admins(c, n) + " " + rest, out);
}

std::size_t Count(const std::string& haystack, const std::string& needle) {
  std::size_t pos = 0, hits = 0;
  while ((pos = haystack.find(needle, pos)) != std::string::npos) ++hits, ++pos;
  return hits;
}

// Warnings these tests provoke on purpose.
const std::vector<std::string> kProvoked = {
    "event=admin_refused",   // the refused credentials below
    "event=volume_dropped",  // the drops below (a warning: data is destroyed)
};

TEST(AdminApi, StatusWithoutCredentialIsRefused) {
  LocalCluster c(1);
  ASSERT_TRUE(c.StartAll());
  std::string out;
  EXPECT_EQ(Ctl(c, 1, "status", "", &out), 1) << out;
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  EXPECT_EQ(out.find("durable_lsn"), std::string::npos) << "state leaked without a credential: " << out;

  std::ofstream(c.root() + "/wrong_token") << "not-a-token-of-this-cluster\n";
  EXPECT_EQ(Ctl(c, 1, "status", "--token_file=" + c.root() + "/wrong_token", &out), 1) << out;
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;

  EXPECT_EQ(Ctl(c, 1, "status", "--token_file=" + c.readonly_token_file(), &out), 0) << out;
  EXPECT_NE(out.find("node=n1 volume=present"), std::string::npos) << out;
  EXPECT_EQ(Ctl(c, 1, "status", "--token_file=" + c.admin_token_file(), &out), 0) << out;
  // Plaintext on loopback is said at start, at info level.
  EXPECT_NE(c.Log(0).find("event=admin_listening"), std::string::npos);
  EXPECT_NE(c.Log(0).find("tls=off"), std::string::npos) << c.Log(0);
  EXPECT_EQ(c.UnexpectedLogLines(kProvoked), "");
}

TEST(AdminApi, ReadOnlyCredentialCannotDropTheVolume) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto w = LogClient::Open(Config(c));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE((*w)->Append(0, testing::RedoBytes(0, 4096)).ok());
  ASSERT_TRUE((*w)->WaitDurable(4096, milliseconds(5000)).ok());
  std::string out;
  EXPECT_EQ(Ctl(c, 3, "drop-volume", "--token_file=" + c.readonly_token_file() + " --cluster_id=" + c.cluster_id(),
                &out),
            1)
      << out;
  EXPECT_EQ(Count(out, "PERMISSION_DENIED"), 3u) << out;
  // (create-volume with it: PERMISSION_DENIED on dropped nodes, below.)
  // Nothing happened: the writer still writes, the nodes still hold its log.
  ASSERT_TRUE((*w)->Append(4096, testing::RedoBytes(4096, 512)).ok());
  EXPECT_TRUE((*w)->WaitDurable(4608, milliseconds(5000)).ok());
  EXPECT_EQ(c.UnexpectedLogLines(kProvoked), "");
}

TEST(AdminApi, WriterSecretIsNotAnAdminCredential) {
  LocalCluster c(1);
  ASSERT_TRUE(c.StartAll());
  std::string out;
  EXPECT_EQ(Ctl(c, 1, "drop-volume", "--token_file=" + c.secret_file() + " --cluster_id=" + c.cluster_id(), &out),
            1)
      << out;
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  EXPECT_EQ(Ctl(c, 1, "status", "--token_file=" + c.secret_file(), &out), 1) << out;
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  EXPECT_EQ(Ctl(c, 1, "status", "--token_file=" + c.admin_token_file(), &out), 0) << out;
  EXPECT_NE(out.find("volume=present"), std::string::npos) << "the refused drop dropped: " << out;

  // And a node refuses to start with the secret as its admin token.
  c.Stop(0);
  c.SetExtraArgs(0, {"--admin_token_file=" + c.secret_file()});
  EXPECT_FALSE(c.Start(0));
  EXPECT_NE(c.Log(0).find("admin token equals the cluster secret"), std::string::npos) << c.Log(0);
}

// A CA and a node certificate for 127.0.0.1, and a second CA that signed
// nothing, made with the openssl CLI.
bool MakeTestCertificates(const std::string& dir) {
  const std::string q = " >>" + dir + "/openssl.log 2>&1";
  std::ofstream(dir + "/san.cnf") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  const std::string ec = " -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  return std::system(("openssl req -x509" + ec + " -keyout " + dir + "/ca.key -out " + dir +
                      "/ca.pem -days 1 -subj /CN=strata-test-ca" + q)
                         .c_str()) == 0 &&
         std::system(("openssl req -x509" + ec + " -keyout " + dir + "/other_ca.key -out " + dir +
                      "/other_ca.pem -days 1 -subj /CN=strata-other-ca" + q)
                         .c_str()) == 0 &&
         std::system(("openssl req" + ec + " -keyout " + dir + "/node.key -out " + dir +
                      "/node.csr -subj /CN=localhost" + q)
                         .c_str()) == 0 &&
         std::system(("openssl x509 -req -in " + dir + "/node.csr -CA " + dir + "/ca.pem -CAkey " + dir +
                      "/ca.key -CAcreateserial -days 1 -out " + dir + "/node.pem -extfile " + dir + "/san.cnf" + q)
                         .c_str()) == 0;
}

TEST(AdminApi, TlsRoundTripAndPlaintextClientRefused) {
  LocalCluster c(1);
  ASSERT_TRUE(MakeTestCertificates(c.root())) << "openssl failed; see " << c.root() << "/openssl.log";
  c.SetExtraArgs(0, {"--admin_tls_cert_file=" + c.root() + "/node.pem", "--admin_tls_key_file=" + c.root() + "/node.key"});
  ASSERT_TRUE(c.StartAll());
  EXPECT_NE(c.Log(0).find("tls=on"), std::string::npos) << c.Log(0);
  const std::string token = "--token_file=" + c.readonly_token_file();
  std::string out;
  EXPECT_EQ(Ctl(c, 1, "status", token + " --tls_ca_file=" + c.root() + "/ca.pem", &out), 0) << out;
  EXPECT_NE(out.find("node=n1 volume=present"), std::string::npos) << out;
  // The credential is checked over TLS too.
  EXPECT_EQ(Ctl(c, 1, "status", "--tls_ca_file=" + c.root() + "/ca.pem", &out), 1) << out;
  EXPECT_NE(out.find("UNAUTHENTICATED"), std::string::npos) << out;
  // A plaintext client gets no answer at all.
  EXPECT_EQ(Ctl(c, 1, "status", token, &out), 1) << out;
  EXPECT_NE(out.find("error="), std::string::npos) << out;
  EXPECT_EQ(out.find("durable_lsn"), std::string::npos) << out;
  // A CA that did not sign the node's certificate is refused as well.
  EXPECT_EQ(Ctl(c, 1, "status", token + " --tls_ca_file=" + c.root() + "/other_ca.pem", &out), 1) << out;
  EXPECT_EQ(out.find("durable_lsn"), std::string::npos) << out;
  EXPECT_EQ(c.UnexpectedLogLines(kProvoked), "");
}

// The re-initialize path: a writer left a log and a checkpoint; drop-volume
// (cluster id confirmed) empties every node and fences that writer;
// create-volume gives them an empty volume; a new writer starts at LSN 0.
TEST(AdminApi, DropNeedsTheClusterIdThenAFreshWriterStartsAtLsnZero) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto old_writer = LogClient::Open(Config(c));
  ASSERT_TRUE(old_writer.ok()) << old_writer.status().ToString();
  LogClient& w = **old_writer;
  ASSERT_TRUE(w.Append(0, testing::RedoBytes(0, 8192)).ok());
  ASSERT_TRUE(w.WaitDurable(8192, milliseconds(5000)).ok());
  ASSERT_TRUE(w.WriteCheckpoint(4096, "an earlier --initialize").ok());
  const auto old_epoch = w.epoch();

  const std::string admin = "--token_file=" + c.admin_token_file();
  std::string out;
  EXPECT_EQ(Ctl(c, 3, "drop-volume", admin, &out), 2) << "no --cluster_id must be a usage error: " << out;
  EXPECT_EQ(Ctl(c, 3, "drop-volume", admin + " --cluster_id=some-other-cluster", &out), 1) << out;
  EXPECT_EQ(Count(out, "FAILED_PRECONDITION"), 3u) << out;
  EXPECT_NE(out.find("nothing was dropped"), std::string::npos) << out;
  EXPECT_EQ(Ctl(c, 3, "status", admin, &out), 0) << out;
  EXPECT_EQ(Count(out, "volume=present"), 3u) << out;
  EXPECT_EQ(Count(out, "durable_lsn=8192"), 3u) << "a refused drop changed data: " << out;

  // create-volume is refused while a node holds log: here all of them, then
  // (a drop that reached one node only) the two others.
  EXPECT_EQ(Ctl(c, 3, "create-volume", admin, &out), 1) << out;
  EXPECT_EQ(Count(out, "still holds a volume"), 3u) << out;
  EXPECT_EQ(Ctl(c, 1, "drop-volume", admin + " --cluster_id=" + c.cluster_id(), &out), 0) << out;
  EXPECT_EQ(Ctl(c, 3, "create-volume", admin, &out), 1) << out;
  EXPECT_EQ(Count(out, "still holds a volume"), 2u) << out;
  EXPECT_EQ(Count(out, "result=created"), 0u) << out;

  EXPECT_EQ(Ctl(c, 3, "drop-volume", admin + " --cluster_id=" + c.cluster_id(), &out), 0) << out;
  EXPECT_EQ(Count(out, "result=dropped"), 2u) << out;
  EXPECT_EQ(Count(out, "result=unchanged"), 1u) << out;
  EXPECT_EQ(Ctl(c, 3, "status", admin, &out), 0) << out;
  EXPECT_EQ(Count(out, "volume=dropped"), 3u) << out;
  EXPECT_EQ(Count(out, "durable_lsn=0"), 3u) << out;
  // The old writer is done: nothing it sends is acknowledged any more.
  const auto a = w.Append(8192, testing::RedoBytes(8192, 512));
  EXPECT_FALSE(a.ok() && w.WaitDurable(8704, milliseconds(3000)).ok()) << "the dropped volume acknowledged a write";
  old_writer.value().reset();

  // Only the admin token creates.
  EXPECT_EQ(Ctl(c, 3, "create-volume", "--token_file=" + c.readonly_token_file(), &out), 1) << out;
  EXPECT_EQ(Count(out, "PERMISSION_DENIED"), 3u) << out;
  // Dropped twice is no error; create, then create again changes nothing.
  EXPECT_EQ(Ctl(c, 3, "drop-volume", admin + " --cluster_id=" + c.cluster_id(), &out), 0) << out;
  EXPECT_EQ(Count(out, "result=unchanged"), 3u) << out;
  EXPECT_EQ(Ctl(c, 3, "create-volume", admin, &out), 0) << out;
  EXPECT_EQ(Count(out, "result=created"), 3u) << out;
  EXPECT_EQ(Ctl(c, 3, "create-volume", admin, &out), 0) << out;
  EXPECT_EQ(Count(out, "result=unchanged"), 3u) << out;

  // What --initialize does first: a writer on an empty volume at LSN 0.
  auto fresh = LogClient::Open(Config(c));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  LogClient& f = **fresh;
  EXPECT_EQ(f.sealed_end(), 0u);
  EXPECT_EQ(f.stream_end(), 0u);
  EXPECT_GT(f.epoch(), old_epoch) << "the new writer's epoch must be above every old one";
  auto ck = f.ReadCheckpoint();
  EXPECT_FALSE(ck.ok());
  EXPECT_EQ(ck.status().code(), client::Code::kNotFound) << ck.status().ToString();
  ASSERT_TRUE(f.Append(0, std::string(1024, 'F')).ok());
  ASSERT_TRUE(f.WaitDurable(1024, milliseconds(5000)).ok());
  auto back = f.Read(0, 1024);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, std::string(1024, 'F'));
  ASSERT_TRUE(f.WriteCheckpoint(512, "the second --initialize").ok());
  EXPECT_EQ(c.UnexpectedLogLines(kProvoked), "");
}

}  // namespace
}  // namespace strata::logservice
#endif  // STRATA_LOGSERVICE_WITH_GRPC
