// LocalCluster; see local_cluster.h.
#include "local_cluster.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace strata::logservice::testing {

LocalCluster::LocalCluster(int n, std::string secret, std::string cluster_id)
    : n_(n), secret_(std::move(secret)), cluster_id_(std::move(cluster_id)), pids_(n, 0), ports_(n, 0), admin_ports_(n, 0), extra_args_(n) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/strata-ls-XXXXXX";
  char* made = mkdtemp(tmpl.data());
  root_ = made ? made : "/tmp/strata-ls-fallback";
  secret_file_ = root_ + "/secret";
  std::ofstream(secret_file_) << secret_ << "\n";
  admin_token_file_ = root_ + "/admin_token";
  readonly_token_file_ = root_ + "/admin_readonly_token";
  std::ofstream(admin_token_file_) << "admin-token-" << secret_ << "-0123456789\n";
  std::ofstream(readonly_token_file_) << "readonly-token-" << secret_ << "-0123456789\n";
}

LocalCluster::~LocalCluster() {
  for (int i = 0; i < n_; ++i) Kill(i);
  if (std::getenv("STRATA_KEEP_TEST_DIRS")) return;  // for post-mortems
  std::error_code ec;
  std::filesystem::remove_all(root_, ec);
}

bool LocalCluster::StartAll() {
  for (int i = 0; i < n_; ++i)
    if (!Start(i)) return false;
  return true;
}

bool LocalCluster::Start(int i) {
  if (pids_[i] > 0) return true;
  const std::string id = "n" + std::to_string(i + 1);
  const std::string port_file = root_ + "/" + id + ".port";
  std::filesystem::remove(port_file);
  std::vector<std::string> args = {LOGSERVICED_PATH,
                                   "--node_id=" + id,
                                   "--listen=tcp://127.0.0.1:" + std::to_string(ports_[i]),
                                   "--data_dir=" + root_ + "/" + id,
                                   "--cluster_id=" + cluster_id_,
                                   "--secret_file=" + secret_file_,
                                   "--segment_bytes=4194304",
                                   "--port_file=" + port_file};
#ifdef STRATA_LOGSERVICE_WITH_GRPC
  const std::string admin_port_file = root_ + "/" + id + ".admin_port";
  args.push_back("--admin_listen=127.0.0.1:" + std::to_string(admin_ports_[i]));
  args.push_back("--admin_port_file=" + admin_port_file);
  args.push_back("--admin_token_file=" + admin_token_file_);
  args.push_back("--admin_readonly_token_file=" + readonly_token_file_);
#endif
  for (const auto& a : extra_args_[i])
    if (!a.empty()) args.push_back(a);
  const std::string log = root_ + "/" + id + ".log";
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  if (pid < 0) return false;
  pids_[i] = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    int port = 0;
    if (in >> port && port > 0) {
      ports_[i] = port;
#ifdef STRATA_LOGSERVICE_WITH_GRPC
      std::ifstream admin(admin_port_file);
      admin >> admin_ports_[i];
#endif
      return true;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pids_[i] = 0;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill(i);
  return false;
}

void LocalCluster::Kill(int i) {
  if (pids_[i] <= 0) return;
  kill(pids_[i], SIGKILL);
  kill(pids_[i], SIGCONT);
  int st;
  waitpid(pids_[i], &st, 0);
  pids_[i] = 0;
}

int LocalCluster::Stop(int i) {
  if (pids_[i] <= 0) return -1;
  kill(pids_[i], SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    int st;
    if (waitpid(pids_[i], &st, WNOHANG) == pids_[i]) {
      pids_[i] = 0;
      return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Kill(i);
  return -1;
}

void LocalCluster::Pause(int i) {
  if (pids_[i] > 0) kill(pids_[i], SIGSTOP);
}

void LocalCluster::Resume(int i) {
  if (pids_[i] > 0) kill(pids_[i], SIGCONT);
}

std::string LocalCluster::address(int i) const { return "tcp://127.0.0.1:" + std::to_string(ports_[i]); }

std::string LocalCluster::admin_address(int i) const {
  return admin_ports_[i] ? "127.0.0.1:" + std::to_string(admin_ports_[i]) : "";
}

std::vector<std::string> LocalCluster::addresses() const {
  std::vector<std::string> a;
  for (int i = 0; i < n_; ++i) a.push_back(address(i));
  return a;
}

std::string LocalCluster::UnexpectedLogLines(const std::vector<std::string>& allowed) const {
  std::string out;
  for (int i = 0; i < n_; ++i) {
    std::stringstream ss(Log(i));
    std::string line;
    while (std::getline(ss, line)) {
      if (line.find("level=warn") == std::string::npos && line.find("level=error") == std::string::npos) continue;
      bool ok = false;
      for (const auto& a : allowed) ok = ok || line.find(a) != std::string::npos;
      if (!ok) out += line + "\n";
    }
  }
  return out;
}

std::string LocalCluster::Log(int i) const {
  std::ifstream in(root_ + "/n" + std::to_string(i + 1) + ".log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

client::ClusterConfig LocalCluster::ClientConfig(std::uint64_t seed) const {
  client::ClusterConfig cfg;
  cfg.nodes = addresses();
  cfg.transport = client::TransportKind::kTcp;
  cfg.write_quorum = 2;
  cfg.cluster_id = cluster_id();
  cfg.secret = secret();
  cfg.seed = seed;
  return cfg;
}

}  // namespace strata::logservice::testing
