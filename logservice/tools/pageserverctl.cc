// pageserverctl: admin CLI for page servers (docs/design/page-server.md, section 10).
//
//   pageserverctl status --address=tcp://H:P[,...] --cluster_id=ID --secret_file=F [--json]
//     per page server: ingested, persisted, materialised LSNs, GC horizon,
//     its pin, files, bytes and counters.
//   pageserverctl get-page --address=A --space=S --page=P --lsn=L [--not_modified_since=N] ...
//     asks for one page; prints its code, LSNs and the image's CRC (not the bytes).
//   pageserverctl put-file --address=A --file=F --space=S --page_bytes=N --lsn=L [--epoch=E] ...
//     seeds a page server with a tablespace file's pages at LSN L (PutImages,
//     64 at a time; all-zero pages are pages never written and are skipped).
//   pageserverctl get-file --address=A --space=S --pages=N --lsn=L --out=F ...
//     pages 0..N-1 of a tablespace at LSN L (GetPages, 64 at a time) into F,
//     one after another; prints one line per page that is not ok.
//   pageserverctl bench --address=A --space=S --pages=N --lsn=L --seconds=T [--clients=C] ...
//     GetPage of one page at a time, pages chosen at random in 0..N-1, at LSN L
//     (not_modified_since = L: no waiting), from C connections for T seconds;
//     prints the requests and the latency mean, p50, p99 and max in us.
// Exit code 0 if every page server answered (get-page: with ok), 1 otherwise, 2 for a usage error.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <random>
#include <thread>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "config.h"
#include "strata/rdma/crc32c.h"
#include "strata/pageserver/client.h"

using namespace strata;

namespace {

std::uint64_t Num(std::map<std::string, std::string>& kv, const char* k) {
  return std::strtoull(kv[k].c_str(), nullptr, 10);
}

// Seeds the pages of one tablespace file; returns how many were put.
std::uint64_t PutFile(pageserver::PageServiceClient& c, std::map<std::string, std::string>& kv, std::string* error) {
  const std::size_t page_bytes = Num(kv, "page_bytes");
  const auto space = static_cast<std::uint32_t>(Num(kv, "space"));
  std::ifstream in(kv["file"], std::ios::binary);
  if (!in || page_bytes < 512 || page_bytes > (1u << 16)) {
    *error = in ? "--page_bytes is 512..65536" : "cannot read " + kv["file"];
    return 0;
  }
  std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, std::string>> batch;
  std::uint64_t put = 0;
  auto flush = [&]() {
    if (batch.empty()) return true;
    auto r = c.PutImages(Num(kv, "epoch"), Num(kv, "lsn"), batch);
    if (!r.ok() || r->first != pageserver::PageCode::kOk) {
      *error = r.ok() ? std::string(pageserver::PageCodeName(r->first)) + ": " + r->second : r.status().message();
      return false;
    }
    put += batch.size();
    batch.clear();
    return true;
  };
  std::string page(page_bytes, '\0');
  for (std::uint32_t no = 0; in.read(page.data(), static_cast<std::streamsize>(page_bytes)); ++no) {
    if (page.find_first_not_of('\0') == std::string::npos) continue;
    batch.push_back({{space, no}, page});
    if (batch.size() == 64 && !flush()) return put;
  }
  flush();
  return put;
}

// Reads pages 0..N-1 of a tablespace into --out; returns how many were ok.
std::uint64_t GetFile(pageserver::PageServiceClient& c, std::map<std::string, std::string>& kv, std::string* error) {
  const auto space = static_cast<std::uint32_t>(Num(kv, "space"));
  const std::uint64_t pages = Num(kv, "pages"), lsn = Num(kv, "lsn");
  std::ofstream out(kv["out"], std::ios::binary | std::ios::trunc);
  if (!out) {
    *error = "cannot write " + kv["out"];
    return 0;
  }
  std::uint64_t ok = 0, bad = 0;
  for (std::uint64_t first = 0; first < pages; first += 64) {
    std::vector<pageserver::PageToRequest> want;
    for (std::uint64_t p = first; p < std::min<std::uint64_t>(pages, first + 64); ++p)
      want.push_back({space, static_cast<std::uint32_t>(p), lsn});
    auto r = c.GetPages(lsn, want);
    if (!r.ok()) {
      *error = r.status().message();
      return ok;
    }
    for (std::size_t i = 0; i < r->size(); ++i) {
      const auto& g = (*r)[i];
      if (g.code == pageserver::PageCode::kOk) {
        ++ok;
        out.write(g.image.data(), static_cast<std::streamsize>(g.image.size()));
      } else {
        ++bad;
        std::cout << "page=" << space << ":" << want[i].page << " code=" << pageserver::PageCodeName(g.code)
                  << " error=\"" << g.error << "\"\n";
        out.write(std::string(g.image.empty() ? 16384 : g.image.size(), '\0').data(),
                  static_cast<std::streamsize>(g.image.empty() ? 16384 : g.image.size()));
      }
    }
  }
  if (bad > 0) *error = std::to_string(bad) + " pages not ok";
  return ok;
}

// GetPage latency from --clients connections for --seconds; appends the
// figures to `out`; returns false (with `error`) if a call failed.
bool Bench(const pageserver::PageServiceConfig& cfg, std::map<std::string, std::string>& kv,
           std::vector<std::pair<std::string, std::string>>* out, std::string* error) {
  const auto space = static_cast<std::uint32_t>(Num(kv, "space"));
  const std::uint64_t pages = std::max<std::uint64_t>(1, Num(kv, "pages")), lsn = Num(kv, "lsn");
  const int clients = std::max(1, static_cast<int>(Num(kv, "clients")));
  const auto seconds = std::chrono::seconds(std::max<std::uint64_t>(1, Num(kv, "seconds")));
  std::vector<std::vector<std::uint32_t>> latencies(clients);
  std::atomic<bool> failed{false};
  std::string first_error;
  std::mutex error_mu;
  const auto end = std::chrono::steady_clock::now() + seconds;
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      auto c = pageserver::PageServiceClient::Connect(cfg);
      std::mt19937_64 rng(t + 1);
      std::string why;
      while (c.ok() && !failed && std::chrono::steady_clock::now() < end) {
        const auto page = static_cast<std::uint32_t>(rng() % pages);
        const auto t0 = std::chrono::steady_clock::now();
        auto r = (*c)->GetPage(space, page, lsn, lsn);
        const auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
        if (!r.ok() || (r->code != pageserver::PageCode::kOk && !r->never_written)) {
          why = r.ok() ? std::string(pageserver::PageCodeName(r->code)) + ": " + r->error : r.status().message();
          break;
        }
        latencies[t].push_back(static_cast<std::uint32_t>(us.count()));
      }
      if (!c.ok()) why = c.status().message();
      if (!why.empty()) {
        failed = true;
        std::lock_guard<std::mutex> l(error_mu);
        if (first_error.empty()) first_error = why;
      }
    });
  }
  for (auto& t : threads) t.join();
  std::vector<std::uint32_t> all;
  for (const auto& v : latencies) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  const auto at = [&](double q) { return all.empty() ? 0u : all[std::min(all.size() - 1, static_cast<std::size_t>(q * all.size()))]; };
  std::uint64_t sum = 0;
  for (auto v : all) sum += v;
  out->emplace_back("requests", std::to_string(all.size()));
  out->emplace_back("mean_us", std::to_string(all.empty() ? 0 : sum / all.size()));
  out->emplace_back("p50_us", std::to_string(at(0.50)));
  out->emplace_back("p99_us", std::to_string(at(0.99)));
  out->emplace_back("max_us", std::to_string(all.empty() ? 0 : all.back()));
  if (failed) *error = first_error;
  return !failed;
}

}  // namespace

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
  if ((cmd != "status" && cmd != "get-page" && cmd != "put-file" && cmd != "get-file" && cmd != "bench") ||
      kv["address"].empty() || kv["secret_file"].empty()) {
    std::cerr << "pageserverctl: need status|get-page|put-file|get-file|bench, --address and --secret_file\n";
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
    std::vector<std::pair<std::string, std::string>> out = {{"address", addr}};
    if (cmd == "bench") {
      std::string error;
      if (!Bench(cfg, kv, &out, &error)) {
        out.emplace_back("error", error);
        rc = 1;
      }
      std::string line;
      for (const auto& [k, v] : out) line += (line.empty() ? "" : " ") + k + "=" + v;
      std::cout << line << "\n";
      continue;
    }
    auto c = pageserver::PageServiceClient::Connect(cfg);
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
    } else if (cmd == "put-file" || cmd == "get-file") {
      std::string error;
      const std::uint64_t n = cmd == "put-file" ? PutFile(**c, kv, &error) : GetFile(**c, kv, &error);
      out.emplace_back("pages", std::to_string(n));
      if (!error.empty()) {
        out.emplace_back("error", error);
        rc = 1;
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
        out.emplace_back("crc32c", std::to_string(rdma::Crc32c(r->image)));
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
