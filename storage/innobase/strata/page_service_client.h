// strata: the compute's connection to the page servers, behind a header of
// standard types only, so that InnoDB's files never see the log service's
// headers (only page_service_client.cc does; strata.cmake gives it their
// include path). The page service protocol itself is
// logservice/include/strata/pageserver/client.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace strata::page_service {

struct Fetched {
  bool ok = false;          // false: `error` says why (transport, or the server's code)
  std::string code;         // the server's answer code (ok, space_unknown, ...)
  std::string error;
  bool never_written = false;
  std::uint64_t effective_lsn = 0;
  std::uint64_t page_lsn = 0;
  std::string image;
};

// One page server session (the first address that answers). Thread-safe:
// one call at a time, others wait; page_service.cc keeps eight and spreads
// reading threads over them.
class PageServerSession {
 public:
  PageServerSession(std::vector<std::string> addresses, std::string cluster_id, std::string secret);
  ~PageServerSession();
  PageServerSession(const PageServerSession &) = delete;
  PageServerSession &operator=(const PageServerSession &) = delete;

  // The page at request_lsn, once the server has ingested
  // not_modified_since. Reconnects (to the next address) after a failure.
  Fetched get_page(std::uint32_t space, std::uint32_t page, std::uint64_t request_lsn,
                   std::uint64_t not_modified_since);

  struct Impl;

 private:
  Impl *impl_;
};

}  // namespace strata::page_service
