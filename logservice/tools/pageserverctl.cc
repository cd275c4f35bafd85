// pageserverctl: admin CLI for page servers (docs/design/page-server.md, section 10).
//
//   pageserverctl status --address=tcp://H:P[,...] --cluster_id=ID --secret_file=F [--json]
//     per page server: ingested, persisted, materialised LSNs, GC horizon,
//     its pin, files, bytes and counters.
//   pageserverctl get-page --address=A --space=S --page=P --lsn=L [--not_modified_since=N] ...
//     asks for one page; prints its code, LSNs and the image's CRC (not the bytes).
// Exit code 0 if every page server answered (get-page: with ok), 1 otherwise, 2 for a usage error.
#include <iostream>
#include <map>
#include <string>

#include "config.h"
#include "crc32c.h"
#include "strata/pageserver/client.h"

using namespace strata;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: pageserverctl status|get-page --address=A[,B] --cluster_id=ID --secret_file=F [...]\n";
    return 2;
  }
  const std::string cmd = argv[1];
  std::map<std::string, std::string> kv;
  bool json = false;
  for (int i = 2; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--json") { json = true; continue; }
    const auto eq = s.find('=');
    if (s.rfind("--", 0) != 0 || eq == std::string::npos) {
      std::cerr << "pageserverctl: bad argument " << s << "\n";
      return 2;
    }
    kv[s.substr(2, eq - 2)] = s.substr(eq + 1);
  }
  if ((cmd != "status" && cmd != "get-page") || kv["address"].empty() || kv["secret_file"].empty()) {
    std::cerr << "pageserverctl: need status|get-page, --address and --secret_file\n";
    return 2;
  }
  auto secret = logservice::server::ReadSecretFile(kv["secret_file"]);
  if (!secret.ok()) {
    std::cerr << "pageserverctl: " << secret.status().message() << "\n";
    return 2;
  }
  int rc = 0;
  for (const auto& addr : logservice::server::SplitList(kv["address"])) {
    pageserver::PageServiceConfig cfg;
    cfg.address = addr;
    cfg.cluster_id = kv.count("cluster_id") ? kv["cluster_id"] : "strata";
    cfg.secret = *secret;
    auto c = pageserver::PageServiceClient::Connect(cfg);
    std::vector<std::pair<std::string, std::string>> out = {{"address", addr}};
    if (!c.ok()) {
      out.emplace_back("error", c.status().message());
      rc = 1;
    } else if (cmd == "status") {
      auto st = (*c)->GetStatus();
      if (!st.ok()) {
        out.emplace_back("error", st.status().message());
        rc = 1;
      } else {
        for (const auto& [k, v] : *st) out.emplace_back(k, std::to_string(v));
      }
    } else {
      auto num = [&](const char* k) { return std::strtoull(kv[k].c_str(), nullptr, 10); };
      auto r = (*c)->GetPage(static_cast<std::uint32_t>(num("space")), static_cast<std::uint32_t>(num("page")), num("lsn"),
                             num("not_modified_since"));
      if (!r.ok()) {
        out.emplace_back("error", r.status().message());
        rc = 1;
      } else {
        out.emplace_back("code", pageserver::PageCodeName(r->code));
        if (!r->error.empty()) out.emplace_back("error", r->error);
        out.emplace_back("effective_lsn", std::to_string(r->effective_lsn));
        out.emplace_back("page_lsn", std::to_string(r->page_lsn));
        out.emplace_back("bytes", std::to_string(r->image.size()));
        out.emplace_back("crc32c", std::to_string(logservice::storage::Crc32c(r->image)));
        if (r->code != pageserver::PageCode::kOk) rc = 1;
      }
    }
    std::string line;
    for (std::size_t i = 0; i < out.size(); ++i) {
      const auto& [k, v] = out[i];
      if (json) line += (i ? ",\"" : "{\"") + k + "\":\"" + v + "\"";
      else line += (i ? " " : "") + k + "=" + (v.find(' ') != std::string::npos ? "\"" + v + "\"" : v);
    }
    std::cout << line << (json ? "}" : "") << "\n";
  }
  return rc;
}
