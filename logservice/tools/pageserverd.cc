// pageserverd: the page server of one volume (docs/design/page-server.md;
// design comment in src/pageserver/service/page_server.h). Co-located with a
// logserviced; follows the volume's acknowledged redo, stores per-page
// records and images (src/pageserver/), answers GetPage and the tablespace
// calls on the page service (src/pageserver/service/wire.h).
//
//   pageserverd --config=/etc/strata/ps1.conf
//   pageserverd --name=ps1 --listen=tcp://0.0.0.0:7300 --data_dir=/var/lib/strata/ps1 \
//               --log_nodes=tcp://10.0.0.1:7100,tcp://10.0.0.2:7100,tcp://10.0.0.3:7100 \
//               --cluster_id=prod-1 --secret_file=/etc/strata/secret [--helper=fake]
//
// Config: a "key = value" file (# comments) and/or --key=value flags (flags
// win). Keys: name (its retention pin on the log nodes; unique per page
// server), listen, data_dir, log_nodes (its co-located node first),
// write_quorum (2), cluster_id, secret_file, port_file, helper (innodb:
// InnoDB's own code in `mysqld --strata-page-apply` children, with mysqld =
// the compute's mysqld binary and apply_helpers (2); fake: the tests' toy
// format), page_size (innodb 16384, fake 4096), initial_lsn (a new page
// server's first LSN: that of the images it is seeded with), freeze_bytes, freeze_interval_ms, wait_timeout_ms, gc_history_bytes (0: no GC; else the
// GC horizon follows the persisted LSN this many bytes behind).
// Logs: one line per event on stderr, "ts=... level=... pageserver=... event=...".
// SIGTERM/SIGINT: stop, exit 0 (what was not persisted is re-ingested from
// the log at the next start: the pin holds it).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "config.h"
#include "fake_redo.h"
#include "innodb_redo_helper.h"
#include "page_server.h"

using namespace strata;

namespace {

std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }

bool ReadConfig(int argc, char** argv, std::map<std::string, std::string>* kv, std::string* err) {
  std::vector<std::string> flags(argv + 1, argv + argc);
  for (const auto& f : flags) {
    if (f.rfind("--config=", 0) != 0) continue;
    std::ifstream in(f.substr(9));
    if (!in) {
      *err = "cannot read " + f.substr(9);
      return false;
    }
    std::string line;
    while (std::getline(in, line)) {
      if (auto h = line.find('#'); h != std::string::npos) line.resize(h);
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      auto trim = [](std::string s) {
        s.erase(0, s.find_first_not_of(" \t"));
        s.erase(s.find_last_not_of(" \t\r") + 1);
        return s;
      };
      (*kv)[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
    }
  }
  for (const auto& f : flags) {
    if (f.rfind("--", 0) != 0 || f.rfind("--config=", 0) == 0) continue;
    const auto eq = f.find('=');
    if (eq == std::string::npos) {
      *err = "flag without a value: " + f;
      return false;
    }
    (*kv)[f.substr(2, eq - 2)] = f.substr(eq + 1);
  }
  static const char* kKeys[] = {"name", "listen", "data_dir", "log_nodes", "write_quorum", "cluster_id", "secret_file",
                                "port_file", "helper", "page_size", "freeze_bytes", "freeze_interval_ms",
                                "wait_timeout_ms", "gc_history_bytes", "mysqld", "apply_helpers", "initial_lsn"};
  for (const auto& [k, v] : *kv) {
    if (std::find(std::begin(kKeys), std::end(kKeys), k) == std::end(kKeys)) {
      *err = "unknown key " + k;
      return false;
    }
  }
  return true;
}

std::uint64_t Num(const std::map<std::string, std::string>& kv, const std::string& k, std::uint64_t def) {
  auto it = kv.find(k);
  return it == kv.end() ? def : std::strtoull(it->second.c_str(), nullptr, 10);
}

std::string Now() {
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  std::time_t secs = us / 1000000;
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(us % 1000000));
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> kv;
  std::string err;
  if (!ReadConfig(argc, argv, &kv, &err)) {
    std::cerr << "pageserverd: " << err << "\n";
    return 2;
  }
  for (const char* k : {"data_dir", "log_nodes", "secret_file"}) {
    if (kv[k].empty()) {
      std::cerr << "pageserverd: " << k << " is required\n";
      return 2;
    }
  }
  const std::string helper = kv.count("helper") ? kv["helper"] : "fake";
  if (helper != "fake" && helper != "innodb") {
    std::cerr << "pageserverd: helper is innodb or fake, not " << helper << "\n";
    return 2;
  }
  if (helper == "innodb" && (kv["mysqld"].empty() || access(kv["mysqld"].c_str(), X_OK) != 0)) {
    std::cerr << "pageserverd: helper=innodb needs mysqld=PATH, the compute's own mysqld binary\n";
    return 2;
  }
  auto secret = logservice::server::ReadSecretFile(kv["secret_file"]);
  if (!secret.ok()) {
    std::cerr << "pageserverd: " << secret.status().message() << "\n";
    return 2;
  }
  std::mutex log_mu;
  pageserver::PageServerOptions o;
  o.name = kv.count("name") ? kv["name"] : "pageserver";
  o.listen = kv.count("listen") ? kv["listen"] : "tcp://127.0.0.1:0";
  o.data_dir = kv["data_dir"];
  o.cluster_id = kv.count("cluster_id") ? kv["cluster_id"] : "strata";
  o.secret = *secret;
  o.volume.nodes = logservice::server::SplitList(kv["log_nodes"]);
  o.volume.write_quorum = Num(kv, "write_quorum", 2);
  o.volume.cluster_id = o.cluster_id;
  o.volume.secret = *secret;
  if (helper == "innodb") {
    pageserver::helper::InnoDbRedoHelper::Options h;
    h.mysqld = kv["mysqld"];
    h.page_size = static_cast<std::uint32_t>(Num(kv, "page_size", 16384));
    h.apply_helpers = static_cast<int>(Num(kv, "apply_helpers", 2));
    h.log = [&log_mu, name = o.name](logservice::LogLevel level, std::string_view line) {
      std::lock_guard<std::mutex> l(log_mu);
      std::cerr << "ts=" << Now() << " level=" << (level == logservice::LogLevel::kInfo ? "info" : "warn")
                << " pageserver=" << name << " " << line << "\n";
    };
    o.helper = std::make_shared<pageserver::helper::InnoDbRedoHelper>(std::move(h));
  } else {
    o.helper = std::make_shared<pageserver::FakeRedoHelper>(static_cast<std::uint32_t>(Num(kv, "page_size", 4096)));
  }
  o.initial_lsn = Num(kv, "initial_lsn", 0);
  o.freeze_bytes = Num(kv, "freeze_bytes", 4ull << 20);
  o.freeze_interval = std::chrono::milliseconds(Num(kv, "freeze_interval_ms", 1000));
  o.wait_timeout = std::chrono::milliseconds(Num(kv, "wait_timeout_ms", 10000));
  o.gc_history_bytes = Num(kv, "gc_history_bytes", 0);
  o.log = [&log_mu](std::string_view level, std::string_view line) {
    std::lock_guard<std::mutex> l(log_mu);
    std::cerr << "ts=" << Now() << " level=" << level << " " << line << "\n";
  };
  auto ps = pageserver::PageServer::Start(std::move(o));
  if (!ps.ok()) {
    std::cerr << "pageserverd: " << ps.status().message() << "\n";
    return 1;
  }
  if (kv.count("port_file")) {
    const std::string a = (*ps)->address();
    std::ofstream(kv["port_file"]) << a.substr(a.rfind(':') + 1) << "\n";
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  while (!g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  (*ps)->Stop();
  return 0;
}
