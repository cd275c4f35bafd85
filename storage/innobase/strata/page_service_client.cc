// strata: PageServerSession over the page service client (see
// page_service_client.h for why this file stands apart).
#include "page_service_client.h"

#include <chrono>
#include <memory>
#include <mutex>

#include "strata/pageserver/client.h"

namespace strata::page_service {

struct PageServerSession::Impl {
  std::vector<std::string> addresses;
  std::string cluster_id, secret;
  std::mutex mu;
  std::unique_ptr<pageserver::PageServiceClient> client;  // guarded by mu
  std::size_t next = 0;                                   // the address to try next
  // After every address failed, no new attempt for a second: a page read
  // must not wait for a round of connection timeouts each time.
  std::chrono::steady_clock::time_point retry_after{};

  bool connect(std::string *why) {
    if (std::chrono::steady_clock::now() < retry_after) {
      *why = "no page server answered a moment ago";
      return false;
    }
    for (std::size_t tried = 0; tried < addresses.size(); ++tried) {
      pageserver::PageServiceConfig cfg;
      cfg.address = addresses[next % addresses.size()];
      cfg.cluster_id = cluster_id;
      cfg.secret = secret;
      auto c = pageserver::PageServiceClient::Connect(cfg);
      if (c.ok()) {
        client = std::move(*c);
        return true;
      }
      *why = cfg.address + ": " + c.status().message();
      ++next;
    }
    retry_after = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    return false;
  }
};

PageServerSession::PageServerSession(std::vector<std::string> addresses, std::string cluster_id, std::string secret)
    : impl_(new Impl) {
  impl_->addresses = std::move(addresses);
  impl_->cluster_id = std::move(cluster_id);
  impl_->secret = std::move(secret);
}

PageServerSession::~PageServerSession() { delete impl_; }

Fetched PageServerSession::get_page(std::uint32_t space, std::uint32_t page, std::uint64_t request_lsn,
                                    std::uint64_t not_modified_since) {
  Fetched f;
  std::lock_guard<std::mutex> l(impl_->mu);
  if (impl_->addresses.empty()) {
    f.error = "no page server address";
    return f;
  }
  if (!impl_->client && !impl_->connect(&f.error)) return f;
  auto r = impl_->client->GetPage(space, page, request_lsn, not_modified_since);
  if (!r.ok()) {
    f.error = r.status().message();
    impl_->client.reset();  // the next call connects again, to the next address
    ++impl_->next;
    return f;
  }
  f.code = pageserver::PageCodeName(r->code);
  f.error = r->error;
  f.ok = r->code == pageserver::PageCode::kOk;
  f.never_written = r->never_written;
  f.effective_lsn = r->effective_lsn;
  f.page_lsn = r->page_lsn;
  f.image = std::move(r->image);
  return f;
}

}  // namespace strata::page_service
