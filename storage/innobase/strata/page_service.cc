// strata::page_service: see page_service.h.
//
// Which version to ask for: the local page carries FIL_PAGE_LSN = P, the end
// of the last mini-transaction whose changes it holds (the flush wrote it).
// A page being read is not in the buffer pool, so nothing changed it after P
// (a change would have been flushed, with a higher LSN, before eviction):
// every version from P to now is the file's. So the question is the one
// `on` will ask, GetPage(request_lsn = the flushed LSN, not_modified_since =
// P): the page server waits until it has ingested P (durable in the log
// before the page was written, by the write-ahead rule), then answers at
// what it has. Asking at P itself would fail for a page older than the
// page server's first LSN (its seed), whose history it does not have.
//
// What may differ and is not a mismatch:
//   - bytes a flush writes from the page LSN: the checksum (0-3), and when
//     the page server's page LSN is below P while the content is equal, the
//     LSN fields (16-23, the trailer): InnoDB moves a page's LSN for
//     mini-transactions that log nothing for that page (measured: about 1.5%
//     of the pages of a write workload; page_apply_check.py);
//   - on page 0 of the system tablespace, FIL_PAGE_FILE_FLUSH_LSN, written
//     at shutdown without redo.
// Not compared (counted as skipped): temporary tablespaces (never logged),
// pages never written locally (all zero), and an answer the page server
// cannot give (below its horizon, unavailable, its helper failing; also
// counted as an error, and logged once). A page server that says it has no
// such page (space unknown or deleted, beyond its size) is a mismatch.
#include "page_service.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "buf0buf.h"
#include "fil0fil.h"
#include "fsp0fsp.h"
#include "full_pages.h"
#include "log0recv.h"
#include "log0sys.h"
#include "lwlsn_cache.h"
#include "mach0data.h"
#include "mysql/status_var.h"
#include "page_service_client.h"
#include "redo.h"
#include "status_array.h"
#include "ut0log.h"

namespace strata::page_service {

ulong cfg_mode = 0;
char *cfg_addresses = nullptr;
ulong cfg_compare_action = 0;
bool g_comparing = false;
bool g_serving = false;

namespace {

std::atomic<uint64_t> st_compared{0}, st_equal{0}, st_lsn_drift{0},
    st_mismatches{0}, st_skipped{0}, st_errors{0}, st_wait_ns{0};
long long st_compared_v, st_equal_v, st_lsn_drift_v, st_mismatches_v,
    st_skipped_v, st_errors_v, st_wait_us_v, st_full_pages_v, st_full_bytes_v,
    st_unlogged_v;

/* Page server sessions: a call holds its session for one round trip, so
readers spread over several (by thread); compare mode's checks are few. */
constexpr size_t kSessions = 8;
std::once_flag g_session_once;
std::unique_ptr<PageServerSession> g_sessions[kSessions];
std::atomic<bool> g_error_logged{false};

/* `on`: the last-written-LSN cache (lwlsn_cache.h), sized as Neon's. */
LastWrittenLsn g_lwlsn(131072);
std::atomic<uint64_t> st_served{0}, st_served_ns{0}, st_retries{0},
    st_file_reads{0};
long long st_served_v, st_served_us_v, st_retries_v, st_file_reads_v,
    st_lwlsn_hits_v, st_lwlsn_fallbacks_v;

std::vector<std::string> split_addresses(const char *list) {
  std::vector<std::string> out;
  std::string cur;
  for (const char *p = list; p != nullptr && *p != '\0'; ++p) {
    if (*p == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (*p != ' ') {
      cur += *p;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

PageServerSession &session() {
  std::call_once(g_session_once, [] {
    for (auto &one : g_sessions) {
      one = std::make_unique<PageServerSession>(
          split_addresses(cfg_addresses), strata::redo::service_cluster_id(),
          strata::redo::service_secret());
    }
  });
  const size_t mine =
      std::hash<std::thread::id>{}(std::this_thread::get_id()) % kSessions;
  return *g_sessions[mine];
}

/* The bytes a flush writes from the page LSN and the checksum. */
bool stamped_byte(size_t i, size_t size, bool compressed) {
  if (i < 4 || (i >= FIL_PAGE_LSN && i < FIL_PAGE_LSN + 8)) return true;
  return !compressed && i >= size - FIL_PAGE_END_LSN_OLD_CHKSUM;
}

std::string hex_range(const byte *p, size_t from, size_t to) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = from; i < to; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

/* Differing ranges, at most `limit`, as "from-to" offsets with the bytes. */
std::string describe_difference(const byte *local, const byte *served,
                                size_t size, int limit) {
  std::string out;
  int ranges = 0;
  for (size_t i = 0; i < size && ranges < limit;) {
    if (local[i] == served[i]) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < size && local[j] != served[j] && j - i < 32) ++j;
    out += " [" + std::to_string(i) + "," + std::to_string(j) +
           ") local=" + hex_range(local, i, j) +
           " served=" + hex_range(served, i, j);
    ++ranges;
    i = j;
  }
  return out;
}

void log_once(const std::string &what) {
  if (!g_error_logged.exchange(true))
    ib::warn(ER_IB_MSG_1260) << "page service: " << what
                                    << " (logged once; counted in "
                                       "Innodb_page_service_skipped/errors)";
}

}  // namespace

bool validate_params() {
  g_comparing = false;
  g_serving = false;
  if (cfg_mode == 0) return true;
  const char *mode = cfg_mode == 1 ? "compare" : "on";
  if (!strata::redo::enabled()) {
    ib::error(ER_IB_MSG_1259)
        << "innodb_page_service=" << mode
        << " needs the redo in the log service (innodb_log_service_addresses "
           "or innodb_log_service_local_nodes): the page servers follow it";
    return false;
  }
  if (split_addresses(cfg_addresses).empty()) {
    ib::error(ER_IB_MSG_1259)
        << "innodb_page_service=" << mode
        << " needs innodb_page_service_addresses (tcp://host:port of a page "
           "server)";
    return false;
  }
  if (cfg_mode == 1) {
    g_comparing = true;
    ib::info(ER_IB_MSG_1258)
        << "page service: every page read is compared with the page server at "
        << cfg_addresses << " (on a difference: "
        << (cfg_compare_action == 0 ? "stop the server" : "log it") << ")";
  } else {
    g_serving = true;
    ib::info(ER_IB_MSG_1258)
        << "page service: pages are read from the page server at "
        << cfg_addresses
        << " (temporary tablespaces from their files; the files are still "
           "written)";
  }
  return true;
}

bool read_page(const page_id_t &page_id, const page_size_t &page_size,
               void *dst) {
  const space_id_t space = page_id.space();
  if (fsp_is_system_temporary(space)) return false;
  const size_t size = page_size.physical();
  /* Crash recovery reads the files, as stock does: they hold every change
  up to the checkpoint, and recovery applies the redo after it and writes
  the pages back, so the files stay complete while the compute still
  writes them. Not the page server's version at the checkpoint: the
  checkpoint LSN can fall inside a mini-transaction, whose changes the file
  holds and recovery does not apply, and a version at that LSN lacks them
  (tried: an undo page came out of recovery unlike the page server's at the
  same LSN). Issue 34, where recovery applies no redo to pages, asks at the
  durable end. Start-up reads before the log is known (the doublewrite
  header on page 0:5) read the file too. */
  if (recv_recovery_is_on() || log_sys == nullptr ||
      log_sys->flushed_to_disk_lsn.load() == 0) {
    ++st_file_reads;
    return false;
  }
  /* A page not in the buffer pool was last changed by its last-written LSN,
  whose redo is durable: ask at the durable end, once the page server has
  ingested the last-written LSN. */
  if (!g_lwlsn.started()) g_lwlsn.start(log_sys->flushed_to_disk_lsn.load());
  const lsn_t request_lsn = log_sys->flushed_to_disk_lsn.load();
  const lsn_t not_modified_since =
      std::min(request_lsn, g_lwlsn.lookup(space, page_id.page_no()));
  /* The tablespace's size is learned by opening its file, which InnoDB does
  at its first file read; with the reads here it would stay unknown (0) and
  the first extension would fail ("the table is full"). Issue 34 takes the
  size from the page server instead. */
  (void)fil_space_get_size(space);
  const auto t0 = std::chrono::steady_clock::now();
  const auto give_up = t0 + std::chrono::seconds(60);
  for (int attempt = 0;; ++attempt) {
    Fetched f =
        session().get_page(space, page_id.page_no(), request_lsn,
                           not_modified_since);
    if (f.ok && f.image.size() == size) {
      memcpy(dst, f.image.data(), size);
      ++st_served;
      st_served_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now() - t0)
                          .count();
      return true;
    }
    /* No answer, or one that may change: the page server down, restarting,
    still ingesting. Wait for it, as a disk that is slow. */
    const bool transient = f.code.empty() || f.code == "unavailable";
    if (!transient || std::chrono::steady_clock::now() > give_up) {
      ib::fatal(UT_LOCATION_HERE, ER_IB_MSG_1259)
          << "page service: page " << space << ":" << page_id.page_no()
          << " could not be read from the page servers at " << cfg_addresses
          << " (request LSN " << request_lsn << ", not modified since "
          << not_modified_since << "): "
          << (f.ok ? "an image of " + std::to_string(f.image.size()) +
                         " bytes, not " + std::to_string(size)
                   : (f.code.empty() ? std::string("no answer") : f.code) +
                         ": " + f.error);
    }
    ++st_retries;
    if (attempt == 0) {
      ib::warn(ER_IB_MSG_1260)
          << "page service: waiting for a page server to answer for page "
          << space << ":" << page_id.page_no() << ": "
          << (f.code.empty() ? std::string("no answer") : f.code) << ": "
          << f.error;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(
        std::min(1000, 10 << std::min(attempt, 6))));
  }
}

void note_evicted(const buf_page_t *bpage) {
  const page_id_t &id = bpage->id;
  if (fsp_is_system_temporary(id.space())) return;
  lsn_t lsn = bpage->get_newest_lsn();
  if (lsn == 0) {
    /* Read and never changed since: its own LSN. */
    const byte *frame =
        bpage->zip.data != nullptr
            ? bpage->zip.data
            : reinterpret_cast<const buf_block_t *>(bpage)->frame;
    lsn = mach_read_from_8(frame + FIL_PAGE_LSN);
  }
  g_lwlsn.note(id.space(), id.page_no(), lsn);
}

void compare_read(const page_id_t &page_id, const page_size_t &page_size,
                  const byte *frame) {
  const space_id_t space = page_id.space();
  const size_t size = page_size.physical();
  if (fsp_is_system_temporary(space) || fsp_is_session_temporary(space)) {
    ++st_skipped;  // never logged, never served
    return;
  }
  const lsn_t local_lsn = mach_read_from_8(frame + FIL_PAGE_LSN);
  bool all_zero = true;
  for (size_t i = 0; i < size && all_zero; ++i) all_zero = frame[i] == 0;
  if (all_zero || local_lsn == 0) {
    ++st_skipped;
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const lsn_t now = std::max<lsn_t>(log_sys->flushed_to_disk_lsn.load(), local_lsn);
  Fetched f = session().get_page(space, page_id.page_no(), now, local_lsn);
  st_wait_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(
                    std::chrono::steady_clock::now() - t0)
                    .count();
  /* A verdict on the page: an image (equal or not), or the page server
  saying it has no such page (its tablespace unknown, deleted, or smaller):
  the compute has it, so the page server lacks it. Anything else is the page
  server failing to answer (down, behind its GC horizon, still ingesting,
  its helper failing): counted, logged once, never a reason to stop. */
  const bool lacks_page = f.code == "space_unknown" ||
                          f.code == "space_deleted" || f.code == "beyond_size";
  if (!f.ok && !lacks_page) {
    ++st_skipped;
    if (f.code != "below_horizon") ++st_errors;
    log_once("page " + std::to_string(space) + ":" +
             std::to_string(page_id.page_no()) + " at LSN " +
             std::to_string(local_lsn) + " not compared: " +
             (f.code.empty() ? std::string("no answer") : f.code) + ": " +
             f.error);
    return;
  }
  ++st_compared;
  std::string served = f.ok ? std::move(f.image) : std::string();
  bool equal = served.size() == size;
  bool drift = false;
  if (equal) {
    std::string local(reinterpret_cast<const char *>(frame), size);
    if (space == TRX_SYS_SPACE && page_id.page_no() == 0) {
      memset(&local[FIL_PAGE_FILE_FLUSH_LSN], 0, 8);
      memset(&served[FIL_PAGE_FILE_FLUSH_LSN], 0, 8);
    }
    if (local != served) {
      equal = false;
      drift = f.page_lsn <= local_lsn;
      for (size_t i = 0; i < size && drift; ++i)
        drift = local[i] == served[i] ||
                stamped_byte(i, size, page_size.is_compressed());
    }
  }
  if (equal) {
    ++st_equal;
    return;
  }
  if (drift) {
    ++st_lsn_drift;
    return;
  }
  ++st_mismatches;
  const std::string diff =
      served.size() == size
          ? describe_difference(frame,
                                reinterpret_cast<const byte *>(served.data()),
                                size, 8)
          : " the page server answered " + f.code + " " + f.error + " (" +
                std::to_string(served.size()) + " bytes)";
  if (cfg_compare_action == 0) {
    ib::fatal(UT_LOCATION_HERE, ER_IB_MSG_1259)
        << "page service mismatch: page " << space << ":" << page_id.page_no()
        << " local LSN " << local_lsn << ", the page server's LSN "
        << f.page_lsn << " (effective " << f.effective_lsn << "):" << diff;
  }
  ib::error(ER_IB_MSG_1259)
      << "page service mismatch: page " << space << ":" << page_id.page_no()
      << " local LSN " << local_lsn << ", the page server's LSN " << f.page_lsn
      << " (effective " << f.effective_lsn << "):" << diff;
}

namespace {
SHOW_VAR status_vars[] = {
    STRATA_STATUS_LL("compared", st_compared_v),
    STRATA_STATUS_LL("equal", st_equal_v),
    STRATA_STATUS_LL("lsn_moved_without_record", st_lsn_drift_v),
    STRATA_STATUS_LL("mismatches", st_mismatches_v),
    STRATA_STATUS_LL("skipped", st_skipped_v),
    STRATA_STATUS_LL("errors", st_errors_v),
    STRATA_STATUS_LL("wait_us", st_wait_us_v),
    STRATA_STATUS_LL("full_page_records", st_full_pages_v),
    STRATA_STATUS_LL("full_page_redo_bytes", st_full_bytes_v),
    STRATA_STATUS_LL("unlogged_writes", st_unlogged_v),
    STRATA_STATUS_LL("pages_read", st_served_v),
    STRATA_STATUS_LL("read_us", st_served_us_v),
    STRATA_STATUS_LL("read_retries", st_retries_v),
    STRATA_STATUS_LL("reads_from_files", st_file_reads_v),
    STRATA_STATUS_LL("lwlsn_hits", st_lwlsn_hits_v),
    STRATA_STATUS_LL("lwlsn_fallbacks", st_lwlsn_fallbacks_v),
    STRATA_STATUS_END};
}  // namespace

int show_status(THD *, SHOW_VAR *var, char *) {
  if (!comparing() && !serving())
    return strata::show_status_array(var, nullptr);
  st_compared_v = static_cast<long long>(st_compared.load());
  st_equal_v = static_cast<long long>(st_equal.load());
  st_lsn_drift_v = static_cast<long long>(st_lsn_drift.load());
  st_mismatches_v = static_cast<long long>(st_mismatches.load());
  st_skipped_v = static_cast<long long>(st_skipped.load());
  st_errors_v = static_cast<long long>(st_errors.load());
  st_wait_us_v = static_cast<long long>(st_wait_ns.load() / 1000);
  const strata::full_pages::Counters full = strata::full_pages::counters();
  st_full_pages_v = static_cast<long long>(full.pages);
  st_full_bytes_v = static_cast<long long>(full.bytes);
  st_unlogged_v = static_cast<long long>(full.unlogged);
  st_served_v = static_cast<long long>(st_served.load());
  st_served_us_v = static_cast<long long>(st_served_ns.load() / 1000);
  st_retries_v = static_cast<long long>(st_retries.load());
  st_file_reads_v = static_cast<long long>(st_file_reads.load());
  const LastWrittenLsn::Counters lw = g_lwlsn.counters();
  st_lwlsn_hits_v = static_cast<long long>(lw.hits);
  st_lwlsn_fallbacks_v = static_cast<long long>(lw.fallbacks);
  return strata::show_status_array(var, status_vars);
}

}  // namespace strata::page_service
