// Multi-process: three logserviced, a pageserverd process following their
// log, this process as the writer, and the CLIs: pageserverctl status shows
// the page server's LSNs, logservicectl pin-list / pin-set / pin-drop manage
// the retention pins. A GetPage over the wire from the daemon equals the page
// the fake helper's format says; SIGTERM stops it cleanly, with no warning
// or error in its log.
#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <tuple>

#include "cluster_client_support.h"
#include "fake_redo.h"
#include "local_cluster.h"
#include "strata/pageserver/client.h"

namespace strata::pageserver {
namespace {

using logservice::client::LogClient;
using logservice::testing::LocalCluster;
using std::chrono::milliseconds;
using W = FakeRedoHelper;

using logservice::testing::RunShell;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts pageserverd (stderr to `log`, appended) and returns its pid and
// page service address ("" if it did not come up).
std::pair<pid_t, std::string> SpawnDaemon(const LocalCluster& c, const std::string& nodes, const std::string& dir,
                                          const std::string& log) {
  const std::string port_file = dir + ".port";
  ::unlink(port_file.c_str());
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_CREAT | O_WRONLY | O_APPEND, 0644);
    dup2(fd, 2);
    const std::string args[] = {"--name=ps-daemon", "--data_dir=" + dir, "--log_nodes=" + nodes,
                                "--cluster_id=" + c.cluster_id(), "--secret_file=" + c.secret_file(),
                                "--port_file=" + port_file, "--freeze_interval_ms=50", "--helper=fake"};
    std::vector<char*> argv = {const_cast<char*>(PAGESERVERD_PATH)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(PAGESERVERD_PATH, argv.data());
    _exit(127);
  }
  std::string port;
  for (int i = 0; i < 200 && port.empty() && pid > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(50));
    port = ReadFile(port_file);
  }
  while (!port.empty() && port.back() == '\n') port.pop_back();
  return {pid, port.empty() ? "" : "tcp://127.0.0.1:" + port};
}

// kill -9 under load: a writer keeps appending; the daemon dies mid-ingest
// and is started again; a read that asks for the newest LSN waits for
// ingest, then answers the right page; nothing it persisted is lost.
TEST(PageServerDaemon, KilledUnderLoadRestartsAndServesTheRightPages) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto w = LogClient::Open(logservice::testing::LocalClusterConfig(c));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::string nodes;
  for (const auto& a : c.addresses()) nodes += (nodes.empty() ? "" : ",") + a;
  const std::string dir = c.root() + "/ps1", log = c.root() + "/ps1.log";
  auto [pid, address] = SpawnDaemon(c, nodes, dir, log);
  ASSERT_FALSE(address.empty()) << ReadFile(log);
  FakeRedoHelper h(4096);
  std::string payload(4096 - W::kPageHeader, '\0');  // page 1 as the writer made it
  Lsn end = 0;
  auto append = [&](int i) {
    const std::string bytes = "v" + std::to_string(i);
    const std::uint32_t off = 20 + (i * 7) % 4000;
    const std::string g = i == 0 ? W::Group({{W::kCreate, 9, 4, 0, "t9"}}) : W::Group({{W::kWrite, 9, 1, off, bytes}});
    const Lsn at = (*w)->stream_end();
    ASSERT_TRUE((*w)->Append(at, g).ok());
    if (i > 0) payload.replace(off - W::kPageHeader, bytes.size(), bytes);
    end = at + g.size();
  };
  for (int i = 0; i < 200; ++i) append(i);
  ASSERT_TRUE((*w)->WaitDurable(end, milliseconds(10000)).ok());
  std::this_thread::sleep_for(milliseconds(30));  // let it ingest and persist some
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  for (int i = 200; i < 400; ++i) append(i);  // meanwhile the log grows
  ASSERT_TRUE((*w)->WaitDurable(end, milliseconds(10000)).ok());
  std::tie(pid, address) = SpawnDaemon(c, nodes, dir, log);
  ASSERT_FALSE(address.empty()) << ReadFile(log);
  auto client = PageServiceClient::Connect(PageServiceConfig{address, c.cluster_id(), c.secret()});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto page = (*client)->GetPage(9, 1, end, end);  // waits for the restarted ingest
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->code, PageCode::kOk) << page->error;
  EXPECT_TRUE(page->image == h.MakeImage(PageId{9, 1}, end, payload));
  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string daemon_log = ReadFile(log);
  EXPECT_EQ(daemon_log.find("level=error"), std::string::npos) << daemon_log;
}

TEST(PageServerDaemon, FollowsServesAndReportsItsLsnsAndPins) {
  LocalCluster c(3);
  ASSERT_TRUE(c.StartAll());
  auto w = LogClient::Open(logservice::testing::LocalClusterConfig(c));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::string nodes;
  for (const auto& a : c.addresses()) nodes += (nodes.empty() ? "" : ",") + a;
  const std::string dir = c.root() + "/ps1", log = c.root() + "/ps1.log";
  const auto [pid, address] = SpawnDaemon(c, nodes, dir, log);
  ASSERT_GT(pid, 0);
  ASSERT_FALSE(address.empty()) << ReadFile(log);

  // The writer: a space, and writes to page 2.
  FakeRedoHelper h(4096);
  Lsn end = 0;
  auto append = [&](const std::string& g) {
    const Lsn at = (*w)->stream_end();
    ASSERT_TRUE((*w)->Append(at, g).ok());
    ASSERT_TRUE((*w)->WaitDurable(at + g.size(), milliseconds(10000)).ok());
    end = at + g.size();
  };
  append(W::Group({{W::kCreate, 9, 4, 0, "t9"}}));
  append(W::Group({{W::kWrite, 9, 2, 100, "hello"}}));
  append(W::Group({{W::kWrite, 9, 2, 200, "world"}}));

  auto client = PageServiceClient::Connect(PageServiceConfig{address, c.cluster_id(), c.secret()});
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto page = (*client)->GetPage(9, 2, end, end);  // waits until the daemon ingested it all
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->code, PageCode::kOk) << page->error;
  std::string payload(4096 - W::kPageHeader, '\0');
  payload.replace(100 - W::kPageHeader, 5, "hello");
  payload.replace(200 - W::kPageHeader, 5, "world");
  EXPECT_TRUE(page->image == h.MakeImage(PageId{9, 2}, end, payload));
  EXPECT_EQ(page->page_lsn, end);

  // pageserverctl status: the LSNs, once persisted (freeze every 50 ms) and pinned.
  const std::string ctl = std::string(PAGESERVERCTL_PATH) + " status --address=" + address +
                          " --cluster_id=" + c.cluster_id() + " --secret_file=" + c.secret_file();
  std::string out;
  for (int i = 0; i < 100; ++i) {
    out.clear();
    ASSERT_EQ(RunShell(ctl, &out), 0) << out;
    if (out.find(" pin_lsn=" + std::to_string(end) + " ") != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(50));
  }
  EXPECT_NE(out.find("ingested_lsn=" + std::to_string(end) + " "), std::string::npos) << out;
  EXPECT_NE(out.find("persisted_lsn=" + std::to_string(end) + " "), std::string::npos) << out;
  EXPECT_NE(out.find(" pin_lsn=" + std::to_string(end) + " "), std::string::npos) << out;

  // logservicectl: the daemon's pin on every node; an operator's pin; a
  // pin below the released LSN refused; drop.
  const std::string lsctl = std::string(LOGSERVICECTL_PATH) + " %s --nodes=" + nodes + " --cluster_id=" +
                            c.cluster_id() + " --secret_file=" + c.secret_file();
  auto verb = [&](const std::string& v) {
    std::string cmd = lsctl;
    cmd.replace(cmd.find("%s"), 2, v);
    return cmd;
  };
  out.clear();
  ASSERT_EQ(RunShell(verb("pin-list"), &out), 0) << out;
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = out.find("pin=ps-daemon lsn=" + std::to_string(end), at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 3u) << out;
  out.clear();
  EXPECT_EQ(RunShell(verb("pin-set --name=backup --lsn=10"), &out), 0) << out;
  ASSERT_TRUE((*w)->WriteCheckpoint(end, "m").ok());
  ASSERT_TRUE((*w)->Release(end).ok());  // held at 10 by the operator's pin
  out.clear();
  ASSERT_EQ(RunShell(verb("status"), &out), 0) << out;
  EXPECT_NE(out.find("released_lsn=10 "), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunShell(verb("pin-drop --name=backup"), &out), 0) << out;
  ASSERT_TRUE((*w)->Release(end).ok());  // now up to the daemon's pin
  out.clear();
  EXPECT_EQ(RunShell(verb("pin-set --name=late --lsn=5"), &out), 1) << out;
  EXPECT_NE(out.find("below the released LSN"), std::string::npos) << out;
  out.clear();
  EXPECT_EQ(RunShell(verb("pin-set --name=x"), &out), 2) << out;  // usage: no --lsn

  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::string daemon_log = ReadFile(log);
  EXPECT_NE(daemon_log.find("event=stopped"), std::string::npos) << daemon_log;
  EXPECT_EQ(daemon_log.find("level=warn"), std::string::npos) << daemon_log;
  EXPECT_EQ(daemon_log.find("level=error"), std::string::npos) << daemon_log;
}

}  // namespace
}  // namespace strata::pageserver
