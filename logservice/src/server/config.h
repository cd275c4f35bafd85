// logserviced configuration: a "key = value" file (# comments) and/or
// --key=value flags (flags win). Keys:
//   node_id, listen, data_dir, peers (comma-separated addresses, this node
//   included), cluster_id, secret_file, segment_bytes, port_file, log_format (kv|json),
//   admin_listen (gRPC admin "host:port"), admin_port_file,
//   admin_token_file, admin_readonly_token_file (the admin API's own
//   credentials, src/admin/admin_credentials.h; admin_listen needs the first),
//   admin_tls_cert_file, admin_tls_key_file (PEM; both or neither: TLS on the
//   admin API; neither: plaintext),
//   disk_limit_bytes (0 = none: the node's files may use at most this much),
//   damaged_log (rebuild: a log with a record failing its CRC is moved aside
//   and rebuilt from peers, the default; stop: the node refuses to start),
//   scrub_interval_seconds (how often the whole retained log is read back
//   through its CRCs; 0 = never; default kDefaultScrubIntervalSeconds),
//   scrub_bytes_per_second (the scrub's read rate; default 64 MiB/s)
// The secret and the admin tokens are read from files (first line, trailing
// newline dropped), never from the command line.
#pragma once
#include <string>
#include <vector>

#include "node.h"
#include "strata/logservice/status.h"

namespace strata::logservice::server {

inline constexpr unsigned kDefaultScrubIntervalSeconds = 3600;

struct DaemonConfig {
  NodeOptions node;
  std::string port_file;      // if set, the bound port is written here after listen
  std::string log_format = "kv";
  std::string admin_listen;     // gRPC admin "host:port" (empty: off); loopback recommended
  std::string admin_port_file;  // if set, the admin port is written here
  std::string admin_token;           // from admin_token_file (never logged)
  std::string admin_readonly_token;  // from admin_readonly_token_file; may be empty
  std::string admin_tls_cert_file;   // PEM certificate chain; empty: no TLS
  std::string admin_tls_key_file;    // PEM private key
};

Result<DaemonConfig> ParseDaemonConfig(const std::vector<std::string>& args);
Result<std::string> ReadSecretFile(const std::string& path);
std::vector<std::string> SplitList(const std::string& s);

}  // namespace strata::logservice::server
