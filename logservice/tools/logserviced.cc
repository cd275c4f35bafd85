// logserviced: one log service node. See docs/logservice-replication.md.
//
//   logserviced --config=/etc/strata/node1.conf
//   logserviced --node_id=n1 --listen=tcp://0.0.0.0:7100 --data_dir=/var/lib/strata/n1 \
//               --cluster_id=prod-1 --secret_file=/etc/strata/secret \
//               --peers=tcp://10.0.0.1:7100,tcp://10.0.0.2:7100,tcp://10.0.0.3:7100 \
//               [--admin_listen=127.0.0.1:7200 --admin_token_file=F [--admin_readonly_token_file=F]
//                [--admin_tls_cert_file=F --admin_tls_key_file=F]]
//
// The node runs inside a NodeHost (src/server/node_host.h), which can drop
// and re-create its volume on the admin API's request.
// Logs: one line per event on stderr, "ts=... level=... node=... event=..."
// (or a JSON object per line with --log_format=json). SIGTERM/SIGINT: stop
// accepting, finish queued requests, sync, exit 0.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "node_host.h"
#ifdef STRATA_LOGSERVICE_WITH_GRPC
#include "admin_server.h"
#endif

using namespace strata::logservice;

namespace {
std::string Now() {
  auto t = std::chrono::system_clock::now();
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = us / 1000000;
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

std::string JsonEscape(std::string_view s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) < 0x20) { o += ' '; continue; }
    o += c;
  }
  return o;
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << "usage: logserviced --config=FILE | --node_id=ID --listen=ADDR --data_dir=DIR "
                   "--cluster_id=ID --secret_file=FILE [--peers=A,B,C] [--port_file=FILE] [--log_format=kv|json]\n"
                   "       [--admin_listen=HOST:PORT --admin_token_file=FILE [--admin_readonly_token_file=FILE]\n"
                   "        [--admin_tls_cert_file=FILE --admin_tls_key_file=FILE] [--admin_port_file=FILE]]\n";
      return 0;
    }
  }
  auto cfg = server::ParseDaemonConfig(args);
  if (!cfg.ok()) {
    std::cerr << "logserviced: " << cfg.status().message() << "\n";
    return 2;
  }
  // Block the stop signals before any thread starts; main waits for them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  signal(SIGPIPE, SIG_IGN);

  static std::mutex log_mu;
  const bool json = cfg->log_format == "json";
  cfg->node.log = [json](std::string_view level, std::string_view line) {
    // One write(2) per line: a kill -9 never leaves half a line behind.
    std::string out = json ? "{\"ts\":\"" + Now() + "\",\"level\":\"" + std::string(level) + "\",\"line\":\"" +
                                 JsonEscape(line) + "\"}\n"
                           : "ts=" + Now() + " level=" + std::string(level) + " " + std::string(line) + "\n";
    std::lock_guard<std::mutex> l(log_mu);
    for (std::size_t off = 0; off < out.size();) {
      const ssize_t n = ::write(2, out.data() + off, out.size() - off);
      if (n <= 0) break;
      off += static_cast<std::size_t>(n);
    }
  };
  auto log = cfg->node.log;
  auto write_port = [](const std::string& file, const std::string& port) {
    const std::string tmp = file + ".tmp";
    { std::ofstream(tmp) << port << "\n"; }
    std::rename(tmp.c_str(), file.c_str());
  };
  // The port file says "ready": written once the admin endpoint listens too
  // (tests read both when it appears), then again at every restart of the
  // node (create-volume). A node whose volume was dropped writes none.
  const std::string port_file = cfg->port_file;
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto write_node_port = [port_file, write_port](const std::string& addr) {
    if (!port_file.empty() && !addr.empty()) write_port(port_file, addr.substr(addr.rfind(':') + 1));
  };
  auto node = server::NodeHost::Start(cfg->node, [ready, write_node_port](const std::string& addr) {
    if (ready->load()) write_node_port(addr);
  });
  if (!node.ok()) {
    log("error", "node=" + cfg->node.node_id + " event=start_failed reason=\"" + node.status().ToString() + "\"");
    return 1;
  }
#ifdef STRATA_LOGSERVICE_WITH_GRPC
  std::unique_ptr<admin::AdminServer> admin_server;
  if (!cfg->admin_listen.empty()) {
    admin::AdminServerOptions ao;
    ao.address = cfg->admin_listen;
    ao.node_id = cfg->node.node_id;
    ao.admin_token = cfg->admin_token;
    ao.readonly_token = cfg->admin_readonly_token;
    ao.tls_cert_file = cfg->admin_tls_cert_file;
    ao.tls_key_file = cfg->admin_tls_key_file;
    ao.log = log;
    auto a = admin::AdminServer::Start(**node, std::move(ao));
    if (!a.ok()) {
      log("error", "node=" + cfg->node.node_id + " event=start_failed reason=\"" + a.status().ToString() + "\"");
      return 1;
    }
    admin_server = std::move(a.value());
    const std::string admin_port = std::to_string(admin_server->port());
    if (admin_server->tls()) {
      log("info", "node=" + cfg->node.node_id + " event=admin_listening port=" + admin_port + " tls=on");
    } else {
      // The tokens cross the network in clear: fine on loopback only.
      const std::string a_host = cfg->admin_listen.substr(0, cfg->admin_listen.rfind(':'));
      const bool loopback = a_host == "localhost" || a_host.rfind("127.", 0) == 0 || a_host == "[::1]";
      log(loopback ? "info" : "warn",
          "node=" + cfg->node.node_id + " event=admin_listening port=" + admin_port +
              " tls=off reason=\"no admin_tls_cert_file/admin_tls_key_file: the admin API is plaintext" +
              (loopback ? "" : " on a non-loopback address, tokens travel in clear") + "\"");
    }
    if (!cfg->admin_port_file.empty()) write_port(cfg->admin_port_file, std::to_string(admin_server->port()));
  }
#else
  if (!cfg->admin_listen.empty()) {
    log("error", "node=" + cfg->node.node_id + " event=start_failed reason=\"built without gRPC: no admin_listen\"");
    return 1;
  }
#endif
  write_node_port((*node)->address());
  ready->store(true);
  int sig = 0;
  sigwait(&stop, &sig);
  log("info", "node=" + cfg->node.node_id + " event=shutdown signal=" + std::to_string(sig));
#ifdef STRATA_LOGSERVICE_WITH_GRPC
  admin_server.reset();
#endif
  (*node)->Stop();
  return 0;
}
