// PageServer: what pageserverd runs (docs/design/page-server.md, sections
// 4, 7.1, 8): follows one volume's log (LogFollower: acknowledged redo only),
// parses it with a RedoApplyHelper into per-page records and tablespace
// events, ingests them into the stage-2 PageStore, persists them in delta
// files and moves its retention pin on the log nodes after each persist, and
// answers the page service (service/wire.h) over the rdma transport.
//
// Threads and hand-offs:
//   - ingest thread: Follow -> Parse -> PageStore::Ingest + directory ->
//     wake GetPage waiters; every freeze_bytes or freeze_interval: Freeze
//     (the delta file and the directory snapshot, one manifest commit), then
//     the pin on the log nodes moves to the new persisted_lsn, then the
//     store records the pin. Only whole groups are ingested (parsed_to); the
//     bytes after them are parsed again when more arrive.
//   - transport I/O thread: decodes each message; a malformed one gets an
//     ErrorResp naming the problem and the connection is closed;
//   - `workers` threads: answer requests; a GetPage waits (up to
//     wait_timeout) only until ingested_lsn reaches not_modified_since.
// Durability: the log is the page server's write-ahead log. At start the
// store reopens at persisted_lsn, the pin is set there first (kept by the
// log nodes since the last persist), and ingest resumes from it.
// Never a wrong page: every stored base image and every built page is
// checked by the helper (checksum, page id), the built page's LSN must not
// exceed the effective LSN; failures are named errors (wire::Code).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "page_codec.h"
#include "redo_apply.h"
#include "strata/logservice/client.h"
#include "storage/file_system.h"
#include "pageserver/store.h"

namespace strata::pageserver {

struct PageServerOptions {
  std::string name = "pageserver";  // its retention pin's name on the log nodes
  std::string data_dir;             // the PageStore's directory
  std::shared_ptr<logservice::FileSystem> fs;  // null: the local disk
  logservice::client::ClusterConfig volume;    // the volume's log nodes, its co-located node first
  std::shared_ptr<RedoApplyHelper> helper;     // required
  std::string listen = "tcp://127.0.0.1:0";
  std::string cluster_id = "strata";           // page service transport (the cluster's secret)
  std::string secret;
  std::uint64_t freeze_bytes = 4ull << 20;
  std::chrono::milliseconds freeze_interval{1000};
  std::chrono::milliseconds wait_timeout{10000};  // GetPage's wait for not_modified_since
  std::size_t workers = 4;
  ImagePolicy image_policy;  // after each freeze, images for the pages that need one
  // GC (section 7.4) after each freeze: the horizon follows persisted_lsn
  // this many bytes behind (0: no GC). A stand-in for the time-based
  // history window (stage 9): a GetPage below the horizon answers only for
  // a page unchanged since, else below_horizon.
  std::uint64_t gc_history_bytes = 0;
  // A new page server (no manifest yet) starts following the log here: the
  // LSN of the images it is seeded with (PutImages), e.g. a clean shutdown's.
  Lsn initial_lsn = 0;
  std::function<void(std::string_view level, std::string_view line)> log;  // "event=... key=value"
};

class PageServer {
 public:
  static Result<std::unique_ptr<PageServer>> Start(PageServerOptions options);
  ~PageServer();  // Stop()
  void Stop();    // stops listening and ingesting, joins threads; idempotent
  std::string address() const;

  // The page service's answers (also what the network handlers call).
  svc::PageResult GetPage(std::uint32_t space, std::uint32_t page, Lsn request_lsn, Lsn not_modified_since);
  svc::Frame Handle(const svc::Frame& request);
  std::vector<std::pair<std::string, std::uint64_t>> GetStatus() const;
  Lsn ingested_lsn() const;
  Lsn persisted_lsn() const;

  struct Impl;

 private:
  explicit PageServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::pageserver
