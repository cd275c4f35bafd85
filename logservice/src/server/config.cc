// logserviced configuration parsing; see config.h.
#include "config.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "admin_credentials.h"

namespace strata::logservice::server {
namespace {
std::string Trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const auto b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}
}  // namespace

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

Result<std::string> ReadSecretFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read secret file " + path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  if (line.empty()) return Status::InvalidArgument("secret file " + path + " is empty");
  return line;
}

Result<DaemonConfig> ParseDaemonConfig(const std::vector<std::string>& args) {
  std::map<std::string, std::string> kv;
  std::map<std::string, std::string> flags;
  for (const auto& a : args) {
    if (a.rfind("--", 0) != 0 || a.find('=') == std::string::npos)
      return Status::InvalidArgument("expected --key=value, got '" + a + "'");
    flags[a.substr(2, a.find('=') - 2)] = a.substr(a.find('=') + 1);
  }
  if (flags.count("config")) {
    std::ifstream in(flags["config"]);
    if (!in) return Status::NotFound("cannot read config file " + flags["config"]);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      line = Trim(line.substr(0, line.find('#')));
      if (line.empty()) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos)
        return Status::InvalidArgument(flags["config"] + ":" + std::to_string(n) + ": expected key = value");
      kv[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
    }
  }
  for (auto& [k, v] : flags) kv[k] = v;
  kv.erase("config");
  DaemonConfig c;
  c.node.scrub_interval = std::chrono::seconds(kDefaultScrubIntervalSeconds);
  for (const auto& [k, v] : kv) {
    if (k == "node_id") c.node.node_id = v;
    else if (k == "listen") c.node.listen = v;
    else if (k == "data_dir") c.node.data_dir = v;
    else if (k == "peers") c.node.peers = SplitList(v);
    else if (k == "cluster_id") c.node.cluster_id = v;
    else if (k == "segment_bytes" || k == "disk_limit_bytes" || k == "scrub_bytes_per_second" ||
             k == "scrub_interval_seconds") {
      char* end = nullptr;
      errno = 0;
      const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
      if (v.empty() || v[0] == '-' || errno != 0 || end == nullptr || *end != '\0')
        return Status::InvalidArgument(k + " must be " +
                                       (k == "scrub_interval_seconds" ? "a number of seconds" : "a byte count") +
                                       ", got '" + v + "'");
      if (k == "segment_bytes") c.node.segment_bytes = n;
      else if (k == "disk_limit_bytes") c.node.disk_limit_bytes = n;
      else if (k == "scrub_interval_seconds") c.node.scrub_interval = std::chrono::seconds(n);
      else if (n == 0) return Status::InvalidArgument("scrub_bytes_per_second must be above 0 (scrub_interval_seconds=0 turns the scrub off)");
      else c.node.scrub_bytes_per_second = n;
    } else if (k == "damaged_log") {
      if (v == "rebuild") c.node.damaged_log = NodeOptions::DamagedLog::kRebuild;
      else if (v == "stop") c.node.damaged_log = NodeOptions::DamagedLog::kStop;
      else return Status::InvalidArgument("damaged_log must be rebuild or stop, got '" + v + "'");
    }
    else if (k == "port_file") c.port_file = v;
    else if (k == "log_format") c.log_format = v;
    else if (k == "admin_listen") c.admin_listen = v;
    else if (k == "admin_port_file") c.admin_port_file = v;
    else if (k == "admin_tls_cert_file") c.admin_tls_cert_file = v;
    else if (k == "admin_tls_key_file") c.admin_tls_key_file = v;
    else if (k == "admin_token_file" || k == "admin_readonly_token_file") {
      auto t = ReadSecretFile(v);
      if (!t.ok()) return Status::InvalidArgument(k + ": " + t.status().message());
      (k == "admin_token_file" ? c.admin_token : c.admin_readonly_token) = *t;
    } else if (k == "admin_token" || k == "admin_readonly_token") {
      return Status::InvalidArgument("admin tokens are never passed directly: use " + k + "_file");
    } else if (k == "secret_file") {
      auto s = ReadSecretFile(v);
      if (!s.ok()) return s.status();
      c.node.secret = *s;
    } else if (k == "secret") {
      return Status::InvalidArgument("the secret is never passed directly: use secret_file");
    } else {
      return Status::InvalidArgument("unknown option '" + k + "'");
    }
  }
  if (c.node.data_dir.empty()) return Status::InvalidArgument("data_dir is required");
  if (c.node.secret.empty()) return Status::InvalidArgument("secret_file is required");
  if (c.log_format != "kv" && c.log_format != "json") return Status::InvalidArgument("log_format must be kv or json");
  if (c.admin_tls_cert_file.empty() != c.admin_tls_key_file.empty())
    return Status::InvalidArgument("admin_tls_cert_file and admin_tls_key_file go together");
  if (!c.admin_listen.empty()) {
    STRATA_RETURN_IF_ERROR(admin::ValidateAdminTokens(c.admin_readonly_token, c.admin_token, c.node.secret));
  } else if (!c.admin_token.empty() || !c.admin_readonly_token.empty() || !c.admin_tls_cert_file.empty()) {
    return Status::InvalidArgument("admin_token_file, admin_readonly_token_file and admin_tls_* need admin_listen");
  }
  return c;
}

}  // namespace strata::logservice::server
