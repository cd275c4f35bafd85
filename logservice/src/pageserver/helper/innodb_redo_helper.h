// InnoDbRedoHelper: the RedoApplyHelper of the real product, InnoDB's own
// parser and apply code in `mysqld --strata-page-apply` children
// (docs/design/page-server.md, section 5; the child's side is
// storage/innobase/strata/page_apply.cc).
//
// One parse child (called by the ingest thread) and `apply_helpers` apply
// children (called by GetPage and image-making threads, each takes a free
// one). After every (re)start a child gets HELLO (page size; its CRC must be
// ours) and the tablespace list last given to SetSpaces.
//
// Mapping to the page server's types:
//   PageRecord.body = InnoDB's record type (one byte) + the record body as
//   recovery's hash stores it; start_lsn/end_lsn are recovery's.
//   Parse(from, bytes): `bytes` start at the log block holding `from`
//   (block_start(from), a multiple of 512) and are whole 512-byte blocks;
//   parse_to is the end of the last complete mini-transaction. Tablespace
//   operations come back as SpaceEvents (create with its flags, size changes
//   from file extensions and page-0 FSP_SIZE writes, delete, rename), and the
//   children learn created tablespaces from them.
//
// Never a wrong page: a child that dies, hangs past the timeout or breaks a
// frame is killed and the call retried once on a fresh child; a second
// failure, or the child refusing the request (corrupt log, a base image
// that fails InnoDB's read checks), is an error for that call. Every image
// returned passes CheckInnoDbPage for the page asked.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "helper_process.h"
#include "service/redo_apply.h"

namespace strata::pageserver::helper {

struct SpaceInfo {
  std::uint32_t space_id = 0;
  std::uint32_t flags = 0;  // FSP_SPACE_FLAGS of its page 0 (page size, compression)
  std::uint32_t size_pages = 0;
};

class InnoDbRedoHelper final : public RedoApplyHelper {
 public:
  struct Options {
    std::string mysqld;  // the compute's own build
    std::uint32_t page_size = 16384;
    int apply_helpers = 2;
    std::string seccomp = "kill";  // kill | log | off
    std::chrono::milliseconds timeout{10000};
    logservice::LogSink log;
  };
  static constexpr std::uint32_t kLogBlockSize = 512;
  static Lsn block_start(Lsn lsn) { return lsn / kLogBlockSize * kLogBlockSize; }

  explicit InnoDbRedoHelper(Options options);

  std::uint32_t page_size() const override { return options_.page_size; }
  std::uint32_t parse_block_size() const override { return kLogBlockSize; }
  // From the tablespace's flags, once created in the log or seeded.
  std::uint32_t physical_page_size(std::uint32_t space) const override;
  // Replaces the children's tablespace list (and every later restart's).
  Status SetSpaces(std::vector<SpaceInfo> spaces);
  Result<ParseResult> Parse(Lsn from, std::string_view bytes) override;
  Result<std::string> Apply(PageId page, const std::optional<std::string>& base,
                            const std::vector<PageRecord>& records) override;
  Result<Lsn> CheckImage(PageId page, std::string_view image) const override;
  // Page 0: FSP_SPACE_FLAGS and FSP_SIZE of its file space header.
  std::optional<SpaceEvent> SeedSpace(PageId page, std::string_view image) override;

  // Children started so far (1 + apply_helpers at first; restarts add).
  std::uint64_t starts() const;

 private:
  std::unique_ptr<HelperProcess> NewChild();
  Status Hello(HelperProcess& child);
  // A call with one retry on a fresh child when the exchange failed.
  Result<std::string> CallWithRetry(HelperProcess& child, std::uint16_t type, const std::string& payload);
  HelperProcess* TakeApplyChild();
  void ReturnApplyChild(HelperProcess* child);
  std::uint32_t PhysicalPageSize(std::uint32_t flags) const;
  Result<SpaceEvent> ToSpaceEvent(std::uint8_t kind, std::uint32_t space, std::uint32_t flags, std::uint64_t size,
                                  std::string name, Lsn lsn) const;
  void LearnSpaces(const std::vector<SpaceEvent>& events);
  Status SendSpaces(HelperProcess& child);
  Status SendSpacesIfStale(HelperProcess& child);

  Options options_;
  mutable std::mutex mu_;
  std::condition_variable free_cv_;
  std::vector<SpaceInfo> spaces_;          // guarded by mu_
  std::uint64_t spaces_version_ = 0;       // guarded by mu_; bumped by every change
  std::map<const HelperProcess*, std::uint64_t> known_version_;  // guarded by mu_
  std::unique_ptr<HelperProcess> parser_;  // the ingest thread's
  std::vector<std::unique_ptr<HelperProcess>> appliers_;
  std::vector<HelperProcess*> free_appliers_;  // guarded by mu_
};

}  // namespace strata::pageserver::helper
