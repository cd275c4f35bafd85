// HelperProcess: see helper_process.h.
#include "helper_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>

#include "strata/rdma/crc32c.h"
#include "helper_protocol.h"

namespace strata::pageserver::helper {
namespace {

using logservice::LogLevel;
using rdma::Crc32c;
using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1 << 30));
}

}  // namespace

HelperProcess::HelperProcess(Options options) : options_(std::move(options)) {}

HelperProcess::~HelperProcess() { Kill(); }

void HelperProcess::Log(LogLevel level, const std::string& line) {
  if (options_.log) {
    options_.log(level, line);
  } else {
    std::cerr << line << "\n";
  }
}

Status HelperProcess::Start() {
  if (options_.argv.empty()) return Status::InvalidArgument("no helper program given");
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::FromErrno("pipe2", "helper stdin", errno);
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]), close(in[1]);
    return Status::FromErrno("pipe2", "helper stdout", e);
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    const int e = errno;
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return Status::FromErrno("pipe2", "helper stderr", e);
  }
  std::vector<char*> argv;
  for (auto& a : options_.argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  char* envp[] = {nullptr};
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    return Status::FromErrno("fork", options_.argv[0], e);
  }
  if (pid == 0) {
    // The child: only async-signal-safe calls until exec.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    syscall(SYS_close_range, 3u, ~0u, 0u);  // nothing else of the parent's
    execve(argv[0], argv.data(), envp);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  // Non-blocking: poll() says there is room, but a large write would still
  // block past the deadline on a child that stopped reading.
  fcntl(to_child_, F_SETFL, fcntl(to_child_, F_GETFL) | O_NONBLOCK);
  fcntl(from_child_, F_SETFL, fcntl(from_child_, F_GETFL) | O_NONBLOCK);
  ++starts_;
  // A writer into a dead child's pipe gets EPIPE, not SIGPIPE (once for the
  // process: the daemons that use this ignore SIGPIPE anyway).
  static std::once_flag sigpipe_once;
  std::call_once(sigpipe_once, [] { signal(SIGPIPE, SIG_IGN); });
  const int err_fd = err[0];
  const std::string who = "helper[" + std::to_string(pid) + "]: ";
  stderr_reader_ = std::thread([this, err_fd, who] {
    std::string pending;
    char buf[4096];
    for (;;) {
      const ssize_t n = read(err_fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        if (nl > 0) Log(LogLevel::kInfo, who + pending.substr(0, std::min<std::size_t>(nl, 2000)));
    }
    if (!pending.empty()) Log(LogLevel::kInfo, who + pending.substr(0, 2000));
    close(err_fd);
  });
  Log(LogLevel::kInfo, "event=helper_start pid=" + std::to_string(pid) + " starts=" + std::to_string(starts_));
  if (options_.on_start) {
    in_on_start_ = true;
    Status s = options_.on_start(*this);
    in_on_start_ = false;
    if (!s.ok()) {
      Kill();
      return s;
    }
  }
  return Status::Ok();
}

void HelperProcess::Kill() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);  // its process group
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (to_child_ >= 0) close(to_child_), to_child_ = -1;
  if (from_child_ >= 0) close(from_child_), from_child_ = -1;
  if (stderr_reader_.joinable()) stderr_reader_.join();
}

Status HelperProcess::WriteAll(std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    pollfd p{to_child_, POLLOUT, 0};
    const int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::IoError("the helper took no request for " + std::to_string(options_.timeout.count()) + " ms");
    const ssize_t n = write(to_child_, bytes.data(), bytes.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return Status::IoError(std::string("the helper's request pipe: ") + std::strerror(errno));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status::Ok();
}

Status HelperProcess::ReadAll(char* out, std::size_t n, Clock::time_point deadline) {
  while (n > 0) {
    pollfd p{from_child_, POLLIN, 0};
    const int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return Status::IoError("no reply from the helper within " + std::to_string(options_.timeout.count()) + " ms");
    const ssize_t got = read(from_child_, out, n);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got == 0) return Status::IoError("the helper exited");
    if (got < 0) return Status::IoError(std::string("the helper's reply pipe: ") + std::strerror(errno));
    out += got;
    n -= static_cast<std::size_t>(got);
  }
  return Status::Ok();
}

Result<Reply> HelperProcess::Exchange(std::uint16_t type, std::string_view payload) {
  if (payload.size() > kMaxPayload) return Status::InvalidArgument("helper request of " + std::to_string(payload.size()) + " bytes");
  FrameHeader h;
  h.type = type;
  h.request_id = next_id_++;
  h.payload_len = static_cast<std::uint32_t>(payload.size());
  h.crc = Crc32c(payload);
  const auto deadline = Clock::now() + options_.timeout;
  Status s = WriteAll(EncodeHeader(h), deadline);
  if (s.ok()) s = WriteAll(payload, deadline);
  char raw[kHeaderSize];
  if (s.ok()) s = ReadAll(raw, sizeof raw, deadline);
  FrameHeader rh;
  Reply reply;
  if (s.ok()) {
    const char* why = nullptr;
    if (!DecodeHeader(std::string_view(raw, sizeof raw), &rh, &why)) {
      s = Status::IoError(std::string("a broken reply frame from the helper: ") + why);
    } else if (rh.request_id != h.request_id) {
      s = Status::IoError("the helper answered request " + std::to_string(rh.request_id) + ", not " +
                          std::to_string(h.request_id));
    } else {
      reply.type = rh.type;
      reply.payload.resize(rh.payload_len);
      s = ReadAll(reply.payload.data(), reply.payload.size(), deadline);
      if (s.ok() && Crc32c(reply.payload) != rh.crc) s = Status::IoError("a helper reply failed its CRC");
    }
  }
  if (!s.ok()) return s;
  return reply;
}

Result<std::string> HelperProcess::Call(std::uint16_t type, std::string_view payload) {
  if (pid_ <= 0 && !in_on_start_) {
    Status s = Start();
    if (!s.ok()) return s;
  }
  auto reply = Exchange(type, payload);
  if (!reply.ok()) {
    Log(LogLevel::kWarning, "event=helper_restart pid=" + std::to_string(pid_) + " reason=\"" +
                                reply.status().message() + "\"");
    Kill();
    return reply.status();
  }
  if (reply->type == kError) {
    logservice::repl::ByteReader r(reply->payload);
    std::string why;
    if (!r.Str(&why, 65535)) why = "(unreadable error reply)";
    return Status::Corruption("helper: " + why);
  }
  if (reply->type != type + 1) {
    const std::string why = "reply type " + std::to_string(reply->type) + " to request type " + std::to_string(type);
    Log(LogLevel::kWarning, "event=helper_restart pid=" + std::to_string(pid_) + " reason=\"" + why + "\"");
    Kill();
    return Status::IoError(why);
  }
  return std::move(reply->payload);
}

}  // namespace strata::pageserver::helper
