// strata::redo local nodes: with innodb_log_service_local_nodes=N (N >= 1,
// typically 3) mysqld runs its own log service, N logserviced child
// processes, and uses them exactly as if their addresses had been given in
// innodb_log_service_addresses (write quorum = majority).
//
// Why: a data directory whose redo lives in external nodes cannot be copied.
// mysql-test-run bootstraps one data directory and copies it for every fresh
// server start; the copies would all point at nodes whose log has moved on.
// With the nodes' storage inside the data directory, a copy of the directory
// is a copy of the whole server, log included. The same makes a one-box
// deployment (benchmarks, the cluster CLI, a laptop) a single process to run.
//
// Layout, all under <datadir>/#log_service/ (the '#' keeps it apart from
// schema directories, like #innodb_redo):
//   cluster     "cluster_id=local-<hex>\nnodes=N\n", written at --initialize;
//               a normal start needs it and the same N.
//   secret      mode 0600, random; rewritten at every start before the nodes
//               start (the nodes and mysqld are its only users, and a copied
//               data directory then never shares a secret with its source).
//   n<i>/       node i's data_dir; n<i>.log its log; n<i>.port the port it
//               bound (listen=tcp://127.0.0.1:0); n<i>.pid its pid.
// Segments are 4 MiB instead of the daemon's 64 MiB so that released log is
// freed in small steps and the directory stays small to copy.
//
// Lifetime. The nodes must not outlive mysqld, however it ends (kill -9
// included), and must outlive InnoDB's last redo write at shutdown:
//   - Each child sets prctl(PR_SET_PDEATHSIG, SIGKILL) before exec. The
//     "parent" of PDEATHSIG is the *thread* that forked, so the nodes are
//     forked by a supervisor thread of their own, which lives until it has
//     reaped them: no server thread's exit can kill them early. (The
//     alternative, a pipe each node watches for EOF, needs a daemon option
//     and a watcher thread in logserviced; PDEATHSIG needs neither.) A parent
//     that died between fork and prctl is caught by comparing getppid().
//   - stop_local_nodes(), called from redo::shutdown() after InnoDB closed
//     its volume (log_sys_close, after the last redo write), asks the
//     supervisor to SIGTERM the nodes (a clean stop), waits up to 30 s and
//     SIGKILLs what is left.
//   - Children get their own process group (a terminal's Ctrl-C, which
//     mysqld blocks, must not stop the nodes under it), an empty signal mask
//     and default signal dispositions (mysqld blocks and ignores some), and
//     no descriptors of mysqld's but the log.
//   - A node of an earlier mysqld on this directory that is still dying
//     (PDEATHSIG is asynchronous) would share its data_dir with the new one:
//     the start waits up to 10 s for it to go, then refuses.
// All state is heap-allocated and never freed, and the thread is detached:
// mysqld may exit() at any moment (a failed start), and static destructors
// of a running thread's mutex or a joinable std::thread would abort.
#include "local_nodes.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "univ.i"
#include "ut0log.h"

namespace strata::redo {

unsigned int cfg_local_nodes = 0;

namespace {

constexpr const char *kRootName = "#log_service";
constexpr const char *kSegmentBytes = "4194304";
constexpr auto kListenTimeout = std::chrono::seconds(60);
constexpr auto kStopTimeout = std::chrono::seconds(30);
constexpr auto kOldNodeTimeout = std::chrono::seconds(10);

struct Node {
  std::string dir, log, port_file, pid_file;
  std::vector<std::string> args;
  pid_t pid = -1;
  bool exited = false;
  int wait_status = 0;
};

struct State {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Node> nodes;
  std::string binary;
  bool forked = false;
  int fork_errno = 0;
  bool stop = false;
  bool done = false;
};

State *g_state = nullptr;  // never freed (see the top comment)

std::string hex_random(size_t bytes) {
  std::string raw(bytes, '\0');
  const int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  size_t got = 0;
  while (fd >= 0 && got < bytes) {
    const ssize_t n = ::read(fd, &raw[got], bytes - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (fd >= 0) ::close(fd);
  if (got < bytes) return "";
  static const char *digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : raw) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

bool write_file(const std::string &path, const std::string &text, mode_t mode,
                std::string *why) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  bool ok = fd >= 0 && ::fchmod(fd, mode) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) *why = "cannot write " + path + ": " + strerror(err != 0 ? err : errno);
  return ok;
}

bool read_file(const std::string &path, std::string *text) {
  std::ifstream in(path);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *text = ss.str();
  return true;
}

std::string value_of(const std::string &text, const std::string &key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

/* True while a logserviced serving `dir` runs as `pid`. */
bool node_alive(pid_t pid, const std::string &dir) {
  std::string cmdline;
  if (!read_file("/proc/" + std::to_string(pid) + "/cmdline", &cmdline)) return false;
  for (char &c : cmdline) {
    if (c == '\0') c = ' ';
  }
  return cmdline.find("logserviced") != std::string::npos &&
         cmdline.find("--data_dir=" + dir + " ") != std::string::npos;
}

/* A node of an earlier server on this directory, still dying: wait for it. */
bool wait_for_old_node(const Node &node, std::string *why) {
  std::string text;
  if (!read_file(node.pid_file, &text)) return true;
  const pid_t pid = static_cast<pid_t>(atol(text.c_str()));
  if (pid <= 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + kOldNodeTimeout;
  while (node_alive(pid, node.dir)) {
    if (std::chrono::steady_clock::now() > deadline) {
      *why = "logserviced pid " + std::to_string(pid) + " still serves " + node.dir +
             " (is another mysqld running on this data directory?)";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
[[noreturn]] void exec_node(pid_t parent, int log_fd, const char *path, char *const argv[]) {
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) _exit(126);
  ::setpgid(0, 0);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  const int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(log_fd, 1);
  ::dup2(log_fd, 2);
#ifdef SYS_close_range
  if (::syscall(SYS_close_range, 3U, ~0U, 0U) != 0)
#endif
  {
    struct rlimit rl;
    const long max = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                         ? static_cast<long>(rl.rlim_cur)
                         : 65536;
    for (long fd = 3; fd < max; ++fd) ::close(static_cast<int>(fd));
  }
  ::execv(path, argv);
  _exit(127);
}

/* The supervisor thread: forks the nodes, then reaps them (noting any that
die on their own) until asked to stop them. It must outlive the nodes: it is
their PDEATHSIG parent. */
void supervise(State *st) {
  const pid_t self = ::getpid();
  {
    std::lock_guard<std::mutex> l(st->mu);
    for (Node &node : st->nodes) {
      std::vector<char *> argv;
      argv.push_back(const_cast<char *>(st->binary.c_str()));
      for (auto &a : node.args) argv.push_back(const_cast<char *>(a.c_str()));
      argv.push_back(nullptr);
      const int log_fd =
          ::open(node.log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
      if (log_fd < 0) {
        st->fork_errno = errno;
        break;
      }
      const pid_t pid = ::fork();
      if (pid == 0) exec_node(self, log_fd, st->binary.c_str(), argv.data());
      const int err = errno;
      ::close(log_fd);
      if (pid < 0) {
        st->fork_errno = err;
        break;
      }
      node.pid = pid;
    }
    st->forked = true;
  }
  st->cv.notify_all();

  std::unique_lock<std::mutex> l(st->mu);
  auto reap = [st](int flags) {
    for (Node &node : st->nodes) {
      if (node.pid <= 0 || node.exited) continue;
      int status = 0;
      if (::waitpid(node.pid, &status, flags) == node.pid) {
        node.exited = true;
        node.wait_status = status;
        if (!st->stop) {
          ib::warn(ER_IB_MSG_1260)
              << "log service local node " << node.dir << " (pid " << node.pid
              << ") exited ("
              << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                      : "status " + std::to_string(WEXITSTATUS(status)))
              << "); see " << node.log;
        }
      }
    }
  };
  while (!st->stop) {
    st->cv.wait_for(l, std::chrono::milliseconds(200));
    reap(WNOHANG);
  }
  for (Node &node : st->nodes) {
    if (node.pid > 0 && !node.exited) ::kill(node.pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + kStopTimeout;
  for (;;) {
    reap(WNOHANG);
    bool all = true;
    for (const Node &node : st->nodes) all = all && (node.pid <= 0 || node.exited);
    if (all) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (const Node &node : st->nodes) {
        if (node.pid > 0 && !node.exited) {
          ib::warn(ER_IB_MSG_1260) << "log service local node " << node.dir
                                   << " did not stop within 30 s of SIGTERM; killing it";
          ::kill(node.pid, SIGKILL);
        }
      }
      reap(0);
      break;
    }
    l.unlock();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    l.lock();
  }
  for (const Node &node : st->nodes) ::unlink(node.pid_file.c_str());
  st->done = true;
  st->cv.notify_all();
}

std::string exit_text(const Node &node) {
  std::string tail;
  if (read_file(node.log, &tail)) {
    if (tail.size() > 400) tail = tail.substr(tail.size() - 400);
    while (!tail.empty() && tail.back() == '\n') tail.pop_back();
    const auto nl = tail.rfind('\n');
    if (nl != std::string::npos) tail = tail.substr(nl + 1);
  }
  return "node " + node.dir + " exited (" +
         (WIFSIGNALED(node.wait_status)
              ? "signal " + std::to_string(WTERMSIG(node.wait_status))
              : "status " + std::to_string(WEXITSTATUS(node.wait_status))) +
         ")" + (tail.empty() ? "" : ": " + tail) + " (log: " + node.log + ")";
}

}  // namespace

bool start_local_nodes(bool initialize, LocalCluster *out, std::string *why) {
  const unsigned n = cfg_local_nodes;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    *why = std::string("getcwd: ") + strerror(errno);
    return false;
  }
  const std::string root = std::string(cwd) + "/" + kRootName;
  const std::string cluster_file = root + "/cluster";
  const std::string secret_file = root + "/secret";
  out->root = root;

  /* logserviced sits next to mysqld (the build and the packages put it there). */
  char exe[PATH_MAX];
  const ssize_t len = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) {
    *why = std::string("readlink /proc/self/exe: ") + strerror(errno);
    return false;
  }
  std::string binary(exe, static_cast<size_t>(len));
  binary = binary.substr(0, binary.rfind('/') + 1) + "logserviced";
  if (::access(binary.c_str(), X_OK) != 0) {
    *why = "innodb_log_service_local_nodes needs logserviced next to mysqld: " + binary +
           ": " + strerror(errno);
    return false;
  }

  if (initialize) {
    if (::mkdir(root.c_str(), 0750) != 0 && errno != EEXIST) {
      *why = "cannot create " + root + ": " + strerror(errno);
      return false;
    }
    const std::string id = hex_random(8);
    if (id.empty()) {
      *why = "cannot read /dev/urandom";
      return false;
    }
    out->cluster_id = "local-" + id;
    if (!write_file(cluster_file,
                    "cluster_id=" + out->cluster_id + "\nnodes=" + std::to_string(n) + "\n",
                    0640, why)) {
      return false;
    }
  } else {
    std::string text;
    if (!read_file(cluster_file, &text)) {
      *why = cluster_file +
             " is missing: this data directory was not initialized with "
             "innodb_log_service_local_nodes";
      return false;
    }
    out->cluster_id = value_of(text, "cluster_id");
    const std::string had = value_of(text, "nodes");
    if (out->cluster_id.empty() || had.empty()) {
      *why = cluster_file + " is damaged (no cluster_id or nodes)";
      return false;
    }
    if (had != std::to_string(n)) {
      *why = "this data directory was initialized with innodb_log_service_local_nodes=" +
             had + ", not " + std::to_string(n);
      return false;
    }
  }
  out->secret = hex_random(32);
  if (out->secret.empty()) {
    *why = "cannot read /dev/urandom";
    return false;
  }
  if (!write_file(secret_file, out->secret + "\n", 0600, why)) return false;

  auto *st = new State;
  st->binary = binary;
  for (unsigned i = 1; i <= n; ++i) {
    Node node;
    const std::string name = "n" + std::to_string(i);
    node.dir = root + "/" + name;
    node.log = root + "/" + name + ".log";
    node.port_file = root + "/" + name + ".port";
    node.pid_file = root + "/" + name + ".pid";
    node.args = {"--node_id=" + name,
                 "--listen=tcp://127.0.0.1:0",
                 "--data_dir=" + node.dir,
                 "--cluster_id=" + out->cluster_id,
                 "--secret_file=" + secret_file,
                 "--port_file=" + node.port_file,
                 std::string("--segment_bytes=") + kSegmentBytes};
    if (!wait_for_old_node(node, why)) return false;
    ::unlink(node.port_file.c_str());
    st->nodes.push_back(std::move(node));
  }

  std::thread(supervise, st).detach();
  g_state = st;
  {
    std::unique_lock<std::mutex> l(st->mu);
    st->cv.wait(l, [st] { return st->forked; });
    if (st->fork_errno != 0) {
      *why = std::string("cannot start logserviced: ") + strerror(st->fork_errno);
      return false;  // the started ones die with mysqld, which will not start
    }
    for (const Node &node : st->nodes) {
      std::string ignored;
      write_file(node.pid_file, std::to_string(node.pid) + "\n", 0640, &ignored);
    }
  }

  /* Wait until every node listens (it writes its port file after binding). */
  const auto deadline = std::chrono::steady_clock::now() + kListenTimeout;
  out->addresses.clear();
  for (size_t i = 0; i < st->nodes.size(); ++i) {
    for (;;) {
      std::string port;
      if (read_file(st->nodes[i].port_file, &port) && !port.empty() &&
          port.back() == '\n') {
        while (!port.empty() && port.back() == '\n') port.pop_back();
        out->addresses.push_back("tcp://127.0.0.1:" + port);
        break;
      }
      {
        std::lock_guard<std::mutex> l(st->mu);
        if (st->nodes[i].exited) {
          *why = "a log service local node did not start: " + exit_text(st->nodes[i]);
          return false;
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        *why = "log service local node " + st->nodes[i].dir +
               " did not listen within 60 s (log: " + st->nodes[i].log + ")";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return true;
}

void stop_local_nodes() {
  State *st = g_state;
  if (st == nullptr) return;
  g_state = nullptr;
  std::unique_lock<std::mutex> l(st->mu);
  st->stop = true;
  st->cv.notify_all();
  st->cv.wait(l, [st] { return st->done; });
  ib::info(ER_IB_MSG_1258) << "log service local nodes in " << kRootName << " stopped";
}

}  // namespace strata::redo
