// PageServiceClient: what the compute (stage 6: InnoDB's read hook, section
// 9 of docs/design/page-server.md), seeding and pageserverctl call to talk
// to one pageserverd. One connection; every call is synchronous and
// thread-safe (calls may overlap; replies are matched by request id).
//
// Errors: a call returns a non-OK Status only when the page server could not
// be asked (connect, timeout, closed, a reply that does not decode). What
// the page server answers, errors included, is in the result: a page comes
// only with PageCode::kOk, never a guessed one (section 8).
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "strata/logservice/status.h"
#include "strata/logservice/types.h"

namespace strata::pageserver {

using logservice::Lsn;
using logservice::Result;
using logservice::Status;

// Same values as the wire's codes (service/wire.h).
enum class PageCode : std::uint16_t {
  kOk = 0, kInvalid, kSpaceUnknown, kSpaceDeleted, kBeyondSize, kBelowHorizon, kUnsupported, kApplyFailed,
  kCorrupt, kUnavailable,
};
const char* PageCodeName(PageCode c);

struct PageServiceConfig {
  std::string address;  // tcp://host:port (or rdma://)
  std::string cluster_id = "strata";
  std::string secret;
  std::chrono::milliseconds timeout{15000};  // per call; above the server's wait for ingest
};

struct GetPageResult {
  PageCode code = PageCode::kOk;
  std::string error;
  Lsn effective_lsn = 0;  // min(request_lsn, what the server had ingested)
  Lsn page_lsn = 0;
  bool never_written = false;  // an all-zero page inside the space that nothing ever touched
  std::string image;
};

struct SpaceEntry {
  std::uint32_t space = 0;
  std::string name;
  std::uint32_t size_pages = 0;
  Lsn created_lsn = 0, deleted_lsn = 0;
};

struct PageToRequest {
  std::uint32_t space = 0, page = 0;
  Lsn not_modified_since = 0;
};

class PageServiceClient {
 public:
  static Result<std::unique_ptr<PageServiceClient>> Connect(const PageServiceConfig& config);
  ~PageServiceClient();

  // Waits on the server only until it has ingested not_modified_since.
  Result<GetPageResult> GetPage(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn not_modified_since);
  // Up to 64 pages at one request_lsn; results in request order.
  Result<std::vector<GetPageResult>> GetPages(Lsn request_lsn, const std::vector<PageToRequest>& pages);
  Result<std::vector<SpaceEntry>> SpaceList(Lsn lsn);
  // code != kOk: the answer's error (space unknown or deleted).
  Result<std::pair<PageCode, SpaceEntry>> SpaceSize(std::uint32_t space, Lsn lsn);
  Result<std::pair<bool, SpaceEntry>> SpaceExists(std::uint32_t space, Lsn lsn);
  // ingested_lsn, persisted_lsn, ... counters (section 10), in server order.
  Result<std::vector<std::pair<std::string, std::uint64_t>>> GetStatus();
  // Seeding: images of pages at `lsn`; the pair is the server's answer.
  Result<std::pair<PageCode, std::string>> PutImages(std::uint64_t epoch, Lsn lsn,
                                                      const std::vector<std::pair<std::pair<std::uint32_t, std::uint32_t>, std::string>>& images);

  struct Impl;

 private:
  explicit PageServiceClient(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace strata::pageserver
