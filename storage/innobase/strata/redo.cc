// strata::redo: InnoDB's redo in a log-service volume (see redo.h for who
// calls what, under which latch; docs/design/innodb-redo-to-logservice.md
// for the design).
//
// Durability frontier: write_blocks() hands bytes to the volume (that is what
// write_lsn means in remote mode); wait_durable() returns once the volume has
// them durably, and only then does log_flush_low() publish
// flushed_to_disk_lsn. So a commit acknowledged under
// innodb_flush_log_at_trx_commit=1 is in the volume, and recovery reads it
// back through read(). Under 2, write_blocks() returns (write_lsn moves) only
// once a write quorum of nodes holds the bytes, synced or not: a commit
// survives a mysqld crash, as stock's 2 does through the OS page cache.
//
// Identity: the data directory is bound to its volume by the pointer file
// #innodb_redo/#ib_redo0 (cluster_id, volume, volume_uuid, log_uuid), and the
// volume's checkpoint record carries the same volume_uuid and log_uuid in its
// metadata. Any mismatch refuses the start, naming both values. The pointer's
// file header has a format number above Log_format::CURRENT, so a stock
// server refuses the directory instead of recreating local redo over it.
#include "redo.h"
#include "status_array.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <mysql/status_var.h>

#include "backend.h"
#include "backend_logservice.h"
#include "fault.h"
#include "local_nodes.h"
#include "log0chkp.h"
#include "log0consumer.h"
#include "log0files_governor.h"
#include "log0files_io.h"
#include "log0log.h"
#include "log0meb.h"
#include "log0sys.h"
#include "meta.h"
#include "srv0mon.h"
#include "srv0srv.h"
#include "ut0log.h"

extern bool opt_initialize;  // sql/mysqld.h: mysqld --initialize

namespace strata::redo {

char *cfg_addresses = nullptr;
ulong cfg_transport = 0;
uint cfg_write_quorum = 2;
char *cfg_volume = nullptr;
char *cfg_cluster_id = nullptr;
char *cfg_secret_file = nullptr;
char *cfg_secret = nullptr;
unsigned long long cfg_max_inflight = 64ULL << 20;
uint cfg_stall_timeout = 0;
unsigned long cfg_debug_fault = kFaultOff;
bool cfg_test_faults = false;

bool g_enabled = false;

namespace {

constexpr const char *kPointerCreator = "Strata log service";

/* Set by validate_params(), read-only afterwards. */
std::string g_dir_path;               // dir:// target, empty for a node list
std::vector<std::string> g_nodes;     // host:port list
std::string g_secret;                 // never logged
std::string g_local_cluster_id;       // innodb_log_service_local_nodes

/* The volume, from sys_init() to shutdown(). */
std::unique_ptr<Backend> g_backend;
Metadata g_meta;                      // as last written / read
Pointer g_pointer;
lsn_t g_checkpoint_lsn = 0;           // from the volume at start
bool g_created_now = false;           // this process ran --initialize

/* Status counters. */
std::atomic<uint64_t> g_epoch{0};
std::atomic<uint64_t> g_shipped_lsn{0};
std::atomic<uint64_t> g_shipped_bytes{0};
std::atomic<uint64_t> g_appends{0};
std::atomic<uint64_t> g_tail_puts{0};
std::atomic<uint64_t> g_durable_waits{0};
std::atomic<uint64_t> g_durable_wait_us{0};
std::atomic<uint64_t> g_checkpoint_written{0};
std::atomic<uint64_t> g_released_lsn{0};

/* Commit anatomy: stage clocks on InnoDB's side of the client (relaxed
atomics; sums in nanoseconds). The log writer's hand-off (write_blocks:
Append/PutTail, copy and post to the nodes), the flusher's wait for the
quorum (wait_durable), and the committing threads' wait for
flushed_to_disk_lsn (log_write_up_to, the hook in log0write.cc), each with
a histogram (Latency_histogram) and the context switches of the thread
that waited (getrusage RUSAGE_THREAD, two calls per wait). */
struct Latency_histogram {
  static constexpr int kBuckets = ClientWriteStats::kBuckets;
  std::atomic<uint64_t> counts[kBuckets] = {};
  /* Bucket b: [2^b, 2^(b+1)) us; bucket 0 also below 1 us. */
  void add(uint64_t ns) {
    uint64_t us = ns / 1000;
    int b = 0;
    while (us > 1 && b < kBuckets - 1) {
      us >>= 1;
      ++b;
    }
    counts[b].fetch_add(1, std::memory_order_relaxed);
  }
};
struct Stage {
  std::atomic<uint64_t> count{0}, ns{0}, csw{0}, loops{0};
  Latency_histogram hist;
  void add(uint64_t dt_ns, uint64_t switches, uint64_t wait_loops) {
    count.fetch_add(1, std::memory_order_relaxed);
    ns.fetch_add(dt_ns, std::memory_order_relaxed);
    csw.fetch_add(switches, std::memory_order_relaxed);
    loops.fetch_add(wait_loops, std::memory_order_relaxed);
    hist.add(dt_ns);
  }
};
Stage g_handoff;       /* write_blocks: bytes handed to the client */
Stage g_durable_wait;  /* wait_durable: the flusher waits for the quorum */
Stage g_commit_wait;   /* log_write_up_to(flush): a committing thread waits */

uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}
/* Voluntary + involuntary context switches of the calling thread. */
uint64_t thread_switches() {
  struct rusage ru;
  if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
  return static_cast<uint64_t>(ru.ru_nvcsw + ru.ru_nivcsw);
}

std::string volume_name() { return cfg_volume != nullptr ? cfg_volume : ""; }
std::string cluster_id() {
  if (!g_local_cluster_id.empty()) return g_local_cluster_id;
  return cfg_cluster_id != nullptr ? cfg_cluster_id : "";
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/* Parses innodb_log_service_addresses into g_dir_path or g_nodes. */
bool parse_addresses(const std::string &value, std::string *why) {
  if (value.rfind("dir://", 0) == 0) {
    g_dir_path = value.substr(6);
    if (g_dir_path.empty()) {
      *why = "dir:// needs a path, e.g. dir:///var/lib/strata/redo";
      return false;
    }
    return true;
  }
  size_t pos = 0;
  while (pos <= value.size()) {
    const auto comma = value.find(',', pos);
    std::string node = trim(value.substr(
        pos, comma == std::string::npos ? std::string::npos : comma - pos));
    pos = comma == std::string::npos ? value.size() + 1 : comma + 1;
    const std::string given = node;  // the client takes scheme://host:port too
    for (const char *scheme : {"tcp://", "rdma://", "auto://"}) {
      if (node.rfind(scheme, 0) == 0) node = node.substr(strlen(scheme));
    }
    if (node.find("://") != std::string::npos) {
      *why = "'" + given + "' has an unknown scheme (use tcp://, rdma:// or host:port)";
      return false;
    }
    const auto colon = node.rfind(':');
    if (node.empty() || colon == std::string::npos || colon == 0 ||
        colon + 1 == node.size()) {
      *why = "'" + node + "' is not host:port";
      return false;
    }
    char *end = nullptr;
    const unsigned long port = strtoul(node.c_str() + colon + 1, &end, 10);
    if (*end != '\0' || port == 0 || port > 65535) {
      *why = "'" + node + "' has no valid port";
      return false;
    }
    for (const auto &seen : g_nodes) {
      if (seen == given) {
        *why = "'" + given + "' is listed twice";
        return false;
      }
    }
    g_nodes.push_back(given);
  }
  const size_t n = g_nodes.size();
  if (cfg_write_quorum <= n / 2 || cfg_write_quorum > n) {
    *why = "innodb_log_service_write_quorum=" + std::to_string(cfg_write_quorum) +
           " must be between " + std::to_string(n / 2 + 1) + " and " +
           std::to_string(n) + " for " + std::to_string(n) + " nodes";
    return false;
  }
  return true;
}

bool read_secret(std::string *why) {
  if (cfg_secret_file != nullptr && cfg_secret_file[0] != '\0') {
    const int fd = ::open(cfg_secret_file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *why = std::string("cannot open innodb_log_service_secret_file ") +
             cfg_secret_file + ": " + strerror(errno);
      return false;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (st.st_mode & 077) != 0) {
      ::close(fd);
      *why = std::string("innodb_log_service_secret_file ") + cfg_secret_file +
             " must not be readable by group or others (chmod 600)";
      return false;
    }
    char buf[1024];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    ::close(fd);
    if (n <= 0) {
      *why = std::string("innodb_log_service_secret_file ") + cfg_secret_file +
             " is empty or unreadable";
      return false;
    }
    g_secret = trim(std::string(buf, static_cast<size_t>(n)));
    memset(buf, 0, sizeof buf);
  } else if (cfg_secret != nullptr && cfg_secret[0] != '\0') {
    g_secret = cfg_secret;
    /* The value stays out of the process's variable from now on. */
    memset(cfg_secret, 0, strlen(cfg_secret));
  }
  return true;
}

std::unique_ptr<Backend> make_backend() {
  if (!g_dir_path.empty()) {
    std::string path = g_dir_path;
    if (path.back() != '/') path += '/';
    return make_dir_backend(path + volume_name());
  }
  LogServiceConfig cfg;
  cfg.nodes = g_nodes;
  cfg.transport = static_cast<unsigned>(cfg_transport);
  cfg.write_quorum = cfg_write_quorum;
  cfg.volume = volume_name();
  cfg.cluster_id = cluster_id();
  cfg.secret = g_secret;
  cfg.max_inflight_bytes = cfg_max_inflight;
  cfg.max_rewind_bytes = srv_log_buffer_size;
  cfg.stall_timeout_seconds = [] { return cfg_stall_timeout; };
  /* The client's events (node down, sealed, fenced, recovery) are rare and
  worth having in the error log next to InnoDB's own messages. */
  cfg.log = [](std::string_view line) {
    if (line.rfind("redo stalled", 0) == 0) {
      ib::warn(ER_IB_MSG_1260) << "log service: " << std::string(line);
    } else {
      ib::info(ER_IB_MSG_1258) << "log service client: " << std::string(line);
    }
  };
  return make_logservice_backend(std::move(cfg));
}

/* A crash point (fault.h): when armed, says where the redo stood and exits
at once, like a kill -9 at this step. */
void fault_point(Fault point, const char *name) {
  if (!cfg_test_faults ||
      __atomic_load_n(&cfg_debug_fault, __ATOMIC_RELAXED) != point)
    return;
  ib::info(ER_IB_MSG_1258) << "STRATA_FAULT " << name
                           << " shipped_lsn=" << g_shipped_lsn.load()
                           << " durable_lsn=" << g_backend->durable_lsn();
  fflush(stderr);
  _exit(3);
}

}  // namespace

void commit_fault_point(THD *thd) {
  if (!cfg_test_faults || !enabled() || thd == nullptr ||
      !session_crash_after_commit(thd))
    return;
  ib::info(ER_IB_MSG_1258) << "STRATA_FAULT trx_commit_after_redo_durable"
                           << " shipped_lsn=" << g_shipped_lsn.load()
                           << " durable_lsn=" << g_backend->durable_lsn();
  fflush(stderr);
  _exit(3);
}

namespace {

/* Strata: what the operator runs before another --initialize when the volume
holds redo of an earlier (failed) one. A node list holds one volume per
cluster (innodb_log_service_volume only names it in the pointer file), so
only emptying it on the nodes helps: logservicectl drop-volume, then
create-volume (logservice/README.md, "Re-running --initialize"). */
std::string reinitialize_advice() {
  if (!g_dir_path.empty()) {
    return "remove the directory '" + volume_name() + "' in " + g_dir_path +
           " (or set another innodb_log_service_volume) and run --initialize again";
  }
  if (!g_local_cluster_id.empty()) {
    return "empty this data directory (its #log_service holds the nodes) and run "
           "--initialize again";
  }
  std::string nodes;
  for (const auto &n : g_nodes) nodes += (nodes.empty() ? "" : ",") + n;
  return "the nodes " + nodes +
         " keep one volume per cluster, so another innodb_log_service_volume "
         "does not help. If no data directory uses that redo any more (dropping "
         "it destroys it), run "
         "'logservicectl drop-volume --admin=<each node's admin_listen host:port> "
         "--token_file=<the nodes' admin_token_file> --cluster_id=" +
         cluster_id() +
         "', then 'logservicectl create-volume --admin=<the same> "
         "--token_file=<the same>', then run --initialize again";
}

/* Logs a backend error once, at the place it is handled. */
void log_error(const std::string &what, const Status &s) {
  ib::error(ER_IB_MSG_1259) << "log service volume " << g_backend->describe()
                            << ": " << what << ": " << s.message();
}

[[noreturn]] void fatal(const std::string &what, const Status &s) {
  if (s.code() == Code::kFenced) {
    ib::fatal(UT_LOCATION_HERE, ER_IB_MSG_1259)
        << "log service volume " << g_backend->describe()
        << " was taken over by another writer (" << s.message()
        << "); this server must stop";
  }
  ib::fatal(UT_LOCATION_HERE, ER_IB_MSG_1259)
      << "log service volume " << g_backend->describe() << ": " << what
      << " failed: " << s.message();
  abort(); /* not reached: ib::fatal does not return */
}

Metadata metadata_for(const log_t &log) {
  Metadata m = g_meta;
  m.log_format = to_int(log.m_format);
  m.creator = log.m_creator_name;
  m.log_flags = log.m_log_flags;
  m.log_uuid = log.m_log_uuid;
  return m;
}

uint64_t now_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

dberr_t write_pointer_file(const log_t &log, lsn_t block_lsn) {
  std::vector<byte> file(kPointerFileSize, 0);
  Log_file_header header;
  header.m_format = to_int(Log_format::CURRENT);
  header.m_start_lsn = block_lsn;
  header.m_creator_name = kPointerCreator;
  header.m_log_flags = 0;
  header.m_log_uuid = log.m_log_uuid;
  log_file_header_serialize(header, file.data());
  /* The serializer accepts only formats InnoDB writes: put ours in after it. */
  mach_write_to_4(file.data() + LOG_HEADER_FORMAT, kPointerFileFormat);
  log_block_set_checksum(file.data(), log_block_calc_checksum_crc32(file.data()));
  if (!serialize_pointer(g_pointer, file.data() + OS_FILE_LOG_BLOCK_SIZE)) {
    ib::error(ER_IB_MSG_1259) << "innodb_log_service_volume or _cluster_id is "
                                 "too long for the pointer file";
    return DB_ERROR;
  }
  const std::string tmp = log_file_path_for_unused_file(log.m_files_ctx, 0);
  const std::string dst = log_file_path(log.m_files_ctx, 0);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  bool ok = fd >= 0 &&
            ::write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size()) &&
            ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  ok = ok && ::rename(tmp.c_str(), dst.c_str()) == 0;
  if (ok) {
    const std::string dir = log_directory_path(log.m_files_ctx);
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ok = dfd >= 0 && ::fsync(dfd) == 0;
    if (dfd >= 0) ::close(dfd);
  }
  if (!ok) {
    ib::error(ER_IB_MSG_1259) << "cannot write the log service pointer file "
                              << dst << ": " << strerror(err != 0 ? err : errno);
    return DB_ERROR;
  }
  return DB_SUCCESS;
}

dberr_t read_pointer_file(const log_t &log) {
  ut::vector<Log_file_id> ids;
  if (log_list_existing_files(log.m_files_ctx, ids) != DB_SUCCESS) {
    return DB_ERROR;
  }
  const std::string dir = log_directory_path(log.m_files_ctx);
  if (ids.size() != 1 || ids[0] != 0) {
    ib::error(ER_IB_MSG_1259)
        << dir << " must hold exactly the log service pointer file #ib_redo0; "
        << (ids.empty() ? "it is empty (was this data directory initialized "
                          "with innodb_log_service_addresses?)"
                        : "it holds local redo files; Strata with the log "
                          "service cannot adopt local redo in this version");
    return DB_ERROR;
  }
  const std::string path = log_file_path(log.m_files_ctx, 0);
  byte buf[2 * OS_FILE_LOG_BLOCK_SIZE];
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? ::pread(fd, buf, sizeof buf, 0) : -1;
  if (fd >= 0) ::close(fd);
  if (n != static_cast<ssize_t>(sizeof buf)) {
    ib::error(ER_IB_MSG_1259) << "cannot read the log service pointer file " << path;
    return DB_ERROR;
  }
  Log_file_header header;
  if (!log_file_header_deserialize(buf, header)) {
    ib::error(ER_IB_MSG_1259) << path << ": header checksum mismatch";
    return DB_ERROR;
  }
  if (header.m_format != kPointerFileFormat) {
    ib::error(ER_IB_MSG_1259)
        << "this data directory has local redo (" << path
        << "); Strata with the log service cannot adopt local redo in this version";
    return DB_ERROR;
  }
  std::string why;
  if (!parse_pointer(buf + OS_FILE_LOG_BLOCK_SIZE, OS_FILE_LOG_BLOCK_SIZE, &g_pointer, &why)) {
    ib::error(ER_IB_MSG_1259) << path << ": " << why;
    return DB_ERROR;
  }
  if (g_pointer.volume != volume_name() || g_pointer.cluster_id != cluster_id()) {
    ib::error(ER_IB_MSG_1259)
        << "this data directory belongs to log service volume '" << g_pointer.volume
        << "' of cluster '" << g_pointer.cluster_id
        << "', but innodb_log_service_volume='" << volume_name()
        << "' and innodb_log_service_cluster_id='" << cluster_id() << "'";
    return DB_ERROR;
  }
  return DB_SUCCESS;
}

dberr_t sys_init_create(log_t &log, lsn_t flushed_lsn, lsn_t &new_files_lsn) {
  Checkpoint cp;
  Status s = g_backend->read_checkpoint(&cp);
  bool overwrite = false;
  if (s.ok()) {
    Metadata old;
    std::string why;
    if (parse_metadata(cp.metadata, &old, &why) && old.bootstrap_complete) {
      ib::error(ER_IB_MSG_1259)
          << "log service volume " << g_backend->describe()
          << " already holds the redo of log_uuid " << old.log_uuid
          << " (volume_uuid " << old.volume_uuid << "); " << reinitialize_advice();
      return DB_ERROR;
    }
    overwrite = true;
    ib::warn(ER_IB_MSG_1260) << "log service volume " << g_backend->describe()
                             << " holds an unfinished initialization; overwriting it";
  } else if (s.code() != Code::kNotFound) {
    log_error("reading the checkpoint record", s);
    return DB_ERROR;
  }

  log_files_initialize_on_empty_redo(log);
  ut_a(log.m_format == Log_format::CURRENT);
  log.m_log_flags = Log_flags{0};
  log_file_header_set_flag(log.m_log_flags, LOG_HEADER_FLAG_NOT_INITIALIZED);
  log.m_log_uuid = log_generate_uuid();

  WriterInfo info;
  s = g_backend->acquire_writer(&info);
  if (!s.ok()) {
    log_error("becoming its writer", s);
    return DB_ERROR;
  }
  g_epoch.store(info.epoch);
  if (overwrite || info.log_end > 0) {
    s = g_backend->truncate(0);
    if (!s.ok()) {
      ib::error(ER_IB_MSG_1259)
          << "log service volume " << g_backend->describe()
          << " holds redo of an earlier --initialize that did not finish, and "
             "it cannot be emptied from here ("
          << s.message() << "); " << reinitialize_advice();
      return DB_ERROR;
    }
  }

  /* The first, empty block, as log_files_write_first_data_block_low() makes it. */
  ut_a(flushed_lsn % OS_FILE_LOG_BLOCK_SIZE == LOG_BLOCK_HDR_SIZE);
  const lsn_t block_lsn = flushed_lsn - LOG_BLOCK_HDR_SIZE;
  Log_data_block_header block_header;
  block_header.set_lsn(block_lsn);
  block_header.m_first_rec_group = block_header.m_data_len = LOG_BLOCK_HDR_SIZE;
  byte block[OS_FILE_LOG_BLOCK_SIZE] = {};
  log_data_block_header_serialize(block_header, block);
  memcpy(log.buf + block_lsn % log.buf_size, block, OS_FILE_LOG_BLOCK_SIZE);
  s = g_backend->put_tail(block_lsn, block, flushed_lsn);
  if (s.ok()) s = g_backend->wait_durable(flushed_lsn);
  if (!s.ok()) {
    log_error("writing the first block", s);
    return DB_ERROR;
  }

  g_meta = Metadata{};
  g_meta.volume_uuid = new_uuid();
  g_meta.initial_lsn = flushed_lsn;
  g_meta.created_at = now_seconds();
  g_meta.bootstrap_complete = false;
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  g_meta.created_by = host;

  ut_a(log.last_checkpoint_lsn.load() == 0);
  log.last_checkpoint_lsn.store(flushed_lsn);
  if (write_checkpoint(log, flushed_lsn) != DB_SUCCESS) {
    return DB_ERROR;
  }

  g_pointer = Pointer{};
  g_pointer.log_uuid = log.m_log_uuid;
  g_pointer.initial_lsn = flushed_lsn;
  g_pointer.created_at = g_meta.created_at;
  g_pointer.cluster_id = cluster_id();
  g_pointer.volume = volume_name();
  g_pointer.volume_uuid = g_meta.volume_uuid;
  if (write_pointer_file(log, block_lsn) != DB_SUCCESS) {
    return DB_ERROR;
  }

  /* Clears NOT_INITIALIZED through log_files_persist_flags (H8). */
  log_persist_initialized(log);
  g_created_now = true;
  g_checkpoint_lsn = flushed_lsn;
  ib::info(ER_IB_MSG_LOG_FILES_INITIALIZED, ulonglong{flushed_lsn});
  ib::info(ER_IB_MSG_1258) << "InnoDB redo is in log service volume "
                           << g_backend->describe() << " (volume_uuid "
                           << g_meta.volume_uuid << ", epoch " << info.epoch << ")";
  new_files_lsn = flushed_lsn;
  return DB_SUCCESS;
}

dberr_t sys_init_existing(log_t &log) {
  /* The pointer file was read and checked by sys_init(). */
  Checkpoint cp;
  Status s = g_backend->read_checkpoint(&cp);
  if (s.code() == Code::kNotFound) {
    ib::error(ER_IB_MSG_1259)
        << "log service volume " << g_backend->describe()
        << " is empty, but this data directory was initialized against it "
           "(volume_uuid "
        << g_pointer.volume_uuid << ")";
    return DB_ERROR;
  }
  if (!s.ok()) {
    log_error("reading the checkpoint record", s);
    return DB_ERROR;
  }
  std::string why;
  if (!parse_metadata(cp.metadata, &g_meta, &why)) {
    ib::error(ER_IB_MSG_1259) << "log service volume " << g_backend->describe()
                              << ": checkpoint metadata: " << why;
    return DB_ERROR;
  }
  if (g_meta.volume_uuid != g_pointer.volume_uuid || g_meta.log_uuid != g_pointer.log_uuid) {
    ib::error(ER_IB_MSG_1259)
        << "log service volume " << g_backend->describe() << " holds volume_uuid "
        << g_meta.volume_uuid << " log_uuid " << g_meta.log_uuid
        << ", but this data directory belongs to volume_uuid " << g_pointer.volume_uuid
        << " log_uuid " << g_pointer.log_uuid;
    return DB_ERROR;
  }
  if (g_meta.log_format != to_int(Log_format::CURRENT)) {
    ib::error(ER_IB_MSG_1259) << "log service volume " << g_backend->describe()
                              << " has redo format " << g_meta.log_format
                              << ", this server writes " << to_int(Log_format::CURRENT);
    return DB_ERROR;
  }
  if (log_file_header_check_flag(g_meta.log_flags, LOG_HEADER_FLAG_NOT_INITIALIZED)) {
    ib::error(ER_IB_MSG_1259) << "log service volume " << g_backend->describe()
                              << " was not completely initialized; run --initialize again";
    return DB_ERROR;
  }
  log.m_format = Log_format::CURRENT;
  log.m_creator_name = g_meta.creator;
  log.m_log_flags = g_meta.log_flags;
  log.m_log_uuid = g_meta.log_uuid;
  g_checkpoint_lsn = cp.lsn;
  g_checkpoint_written.store(cp.lsn);
  g_epoch.store(cp.epoch);
  return DB_SUCCESS;
}

}  // namespace

/* innodb_log_service_local_nodes: start our own nodes (local_nodes.cc) and
use them as if their addresses had been configured. */
bool start_local(std::string *why) {
  if (cfg_addresses != nullptr && cfg_addresses[0] != '\0') {
    *why = "innodb_log_service_local_nodes and innodb_log_service_addresses "
           "cannot be combined: the first runs the log service inside this "
           "server's data directory, the second names an external one";
    return false;
  }
  if ((cfg_secret != nullptr && cfg_secret[0] != '\0') ||
      (cfg_secret_file != nullptr && cfg_secret_file[0] != '\0')) {
    *why = "innodb_log_service_local_nodes generates its own secret; do not "
           "set innodb_log_service_secret or innodb_log_service_secret_file";
    return false;
  }
  if (srv_redo_log_encrypt) {
    *why = "innodb_redo_log_encrypt is not supported with the log service";
    return false;
  }
  LocalCluster local;
  if (!start_local_nodes(opt_initialize, &local, why)) {
    *why = "innodb_log_service_local_nodes: " + *why;
    return false;
  }
  g_nodes = local.addresses;
  g_secret = local.secret;
  g_local_cluster_id = local.cluster_id;
  /* SHOW VARIABLES tells the truth (g_local_cluster_id lives as long as
  the process; the option is read-only and not MEMALLOC). */
  cfg_cluster_id = const_cast<char *>(g_local_cluster_id.c_str());
  cfg_write_quorum = static_cast<uint>(g_nodes.size() / 2 + 1);
  std::string list;
  for (const auto &a : g_nodes) list += (list.empty() ? "" : ",") + a;
  ib::info(ER_IB_MSG_1258) << "log service: started " << g_nodes.size()
                           << " local nodes in " << local.root << " (" << list
                           << ", cluster " << g_local_cluster_id << ", write quorum "
                           << cfg_write_quorum << ")";
  return true;
}

bool validate_params() {
  g_enabled = false;
  std::string why;
  if (cfg_local_nodes > 0) {
    if (!start_local(&why)) {
      ib::error(ER_IB_MSG_1259) << why;
      return false;
    }
    g_enabled = true;
    return true;
  }
  if (cfg_addresses == nullptr || cfg_addresses[0] == '\0') {
    return true;
  }
  if (!parse_addresses(trim(cfg_addresses), &why)) {
    ib::error(ER_IB_MSG_1259) << "innodb_log_service_addresses: " << why;
    return false;
  }
  if (volume_name().empty() || volume_name().find('/') != std::string::npos ||
      volume_name()[0] == '.') {
    ib::error(ER_IB_MSG_1259) << "innodb_log_service_volume must be a plain name";
    return false;
  }
  if (srv_redo_log_encrypt) {
    ib::error(ER_IB_MSG_1259)
        << "innodb_redo_log_encrypt is not supported with innodb_log_service_addresses";
    return false;
  }
  if (!read_secret(&why)) {
    ib::error(ER_IB_MSG_1259) << why;
    return false;
  }
  if (g_dir_path.empty() && g_secret.empty()) {
    ib::error(ER_IB_MSG_1259)
        << "the log service nodes need their shared secret: set "
           "innodb_log_service_secret_file (or innodb_log_service_secret)";
    return false;
  }
  g_enabled = true;
  return true;
}

dberr_t sys_init(log_t &log, bool expect_no_files, lsn_t flushed_lsn,
                 lsn_t &new_files_lsn) {
  new_files_lsn = 0;
  if (srv_force_recovery >= SRV_FORCE_NO_LOG_REDO && !expect_no_files) {
    /* As upstream: no redo at all; the volume is not touched. */
    return DB_SUCCESS;
  }
  /* Identity first: a data directory bound to another volume or cluster is
  refused before anything is contacted or created. */
  if (!expect_no_files && read_pointer_file(log) != DB_SUCCESS) {
    return DB_ERROR;
  }
  g_backend = make_backend();
  ut_a(g_backend != nullptr);
  const Status s = g_backend->open(expect_no_files);
  if (!s.ok()) {
    log_error("opening", s);
    return DB_ERROR;
  }
  return expect_no_files ? sys_init_create(log, flushed_lsn, new_files_lsn)
                         : sys_init_existing(log);
}

size_t how_much_to_write(size_t buffer_size, bool &write_from_log_buffer) {
  /* Completed blocks and a partial one that fit the write-ahead buffer go
  out as one write (copied there, where the partial block's header is
  completed), so write_blocks() hands them to the nodes as one message and
  one fdatasync. Stock writes the completed blocks first and the partial
  block in a second write, which here would be two round trips. */
  if (buffer_size > OS_FILE_LOG_BLOCK_SIZE &&
      buffer_size % OS_FILE_LOG_BLOCK_SIZE != 0 &&
      buffer_size <= srv_log_write_ahead_size) {
    write_from_log_buffer = false;
    MONITOR_INC(MONITOR_LOG_PARTIAL_BLOCK_WRITES);
    return buffer_size;
  }
  /* No files, no write-ahead: everything ready, up to 1 MiB per call. */
  size_t size = std::min<size_t>(buffer_size, 1024 * 1024);
  write_from_log_buffer = size >= OS_FILE_LOG_BLOCK_SIZE;
  if (write_from_log_buffer) {
    size = ut_uint64_align_down(size, OS_FILE_LOG_BLOCK_SIZE);
    MONITOR_INC(MONITOR_LOG_FULL_BLOCK_WRITES);
  } else {
    MONITOR_INC(MONITOR_LOG_PARTIAL_BLOCK_WRITES);
  }
  return size;
}

dberr_t write_blocks(log_t &log, byte *buf, size_t size, lsn_t start_lsn,
                     lsn_t end_lsn) {
  ut_ad(log_writer_mutex_own(log));
  ut_a(start_lsn % OS_FILE_LOG_BLOCK_SIZE == 0);
  ut_a(size % OS_FILE_LOG_BLOCK_SIZE == 0);
  ut_a(end_lsn > start_lsn && end_lsn <= start_lsn + size);
  const lsn_t full_end = ut_uint64_align_down(end_lsn, OS_FILE_LOG_BLOCK_SIZE);
  fault_point(kFaultBeforeAppend, "redo_before_append");
  /* The nodes' early "written" replies serve =2 only (below); under 1 and 0
  they would be one more message per append per node. The log writer mutex
  is held: one thread at a time here. */
  static int written_acks = -1;
  const int want_written = srv_flush_log_at_trx_commit == 2 ? 1 : 0;
  if (want_written != written_acks) {
    g_backend->set_written_acks(want_written == 1);
    written_acks = want_written;
  }
  const uint64_t handoff_start = now_ns();
  if (full_end > start_lsn && end_lsn > full_end) {
    /* Completed blocks and a partial one: handed over together, so each node
    writes and syncs them as one. */
    const Status s = g_backend->append_with_tail(
        start_lsn, buf, full_end - start_lsn, buf + (full_end - start_lsn),
        end_lsn);
    if (!s.ok()) fatal("appending redo", s);
    g_appends.fetch_add(1, std::memory_order_relaxed);
    g_tail_puts.fetch_add(1, std::memory_order_relaxed);
  } else if (full_end > start_lsn) {
    const Status s = g_backend->append(start_lsn, buf, full_end - start_lsn);
    if (!s.ok()) fatal("appending redo", s);
    g_appends.fetch_add(1, std::memory_order_relaxed);
  } else if (end_lsn > full_end) {
    const Status s = g_backend->put_tail(full_end, buf + (full_end - start_lsn), end_lsn);
    if (!s.ok()) fatal("writing the tail block", s);
    g_tail_puts.fetch_add(1, std::memory_order_relaxed);
  }
  g_handoff.add(now_ns() - handoff_start, 0, 0);
  /* innodb_flush_log_at_trx_commit=2 waits for write_lsn, which stock
  advances once the OS holds the bytes, so a commit survives a mysqld crash.
  Here the bytes are only copied into the client until a write quorum of
  nodes has written them: wait for that before write_lsn moves. (1 waits
  for durable redo in the flusher anyway; 0 promises nothing per commit.) */
  if (srv_flush_log_at_trx_commit == 2) {
    const Status s = g_backend->wait_written(end_lsn);
    if (!s.ok()) fatal("waiting for written redo", s);
  }
  g_shipped_bytes.fetch_add(size, std::memory_order_relaxed);
  g_shipped_lsn.store(end_lsn, std::memory_order_relaxed);
  fault_point(kFaultAfterAppend, "redo_after_append");
  meb::redo_log_archive_produce(buf, size);
  return DB_SUCCESS;
}

void wait_durable(log_t &, lsn_t lsn) {
  const auto start = std::chrono::steady_clock::now();
  const uint64_t switches = thread_switches();
  const Status s = g_backend->wait_durable(lsn);
  if (!s.ok()) fatal("waiting for durable redo", s);
  fault_point(kFaultDurableBeforeFlushed, "redo_durable_before_flushed_lsn");
  g_durable_waits.fetch_add(1, std::memory_order_relaxed);
  const auto waited = std::chrono::steady_clock::now() - start;
  g_durable_wait_us.fetch_add(
      std::chrono::duration_cast<std::chrono::microseconds>(waited).count(),
      std::memory_order_relaxed);
  g_durable_wait.add(
      std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count(),
      thread_switches() - switches, 0);
}

Commit_wait::Commit_wait(const log_t &log, lsn_t end_lsn, bool flush_to_disk,
                         const Wait_stats &stats)
    : m_stats(stats) {
  if (!enabled() || !flush_to_disk ||
      log.flushed_to_disk_lsn.load(std::memory_order_relaxed) >= end_lsn)
    return;
  m_switches = thread_switches();
  m_start_ns = now_ns();
}

Commit_wait::~Commit_wait() {
  if (m_start_ns == 0) return;
  g_commit_wait.add(now_ns() - m_start_ns, thread_switches() - m_switches,
                    m_stats.wait_loops);
}

dberr_t write_checkpoint(log_t &log, lsn_t lsn) {
  const Metadata m = metadata_for(log);
  const Status s = g_backend->write_checkpoint(lsn, serialize_metadata(m));
  if (s.code() == Code::kFenced) fatal("writing a checkpoint", s);
  if (!s.ok()) {
    log_error("writing a checkpoint", s);
    return DB_ERROR;
  }
  g_meta = m;
  g_checkpoint_written.store(lsn, std::memory_order_relaxed);
  return DB_SUCCESS;
}

dberr_t persist_flags(log_t &log, Log_flags flags) {
  const Log_flags old = log.m_log_flags;
  log.m_log_flags = flags;
  const dberr_t err = write_checkpoint(log, log.last_checkpoint_lsn.load());
  if (err != DB_SUCCESS) log.m_log_flags = old;
  return err;
}

dberr_t recovery_begin(log_t &log, lsn_t flushed_lsn, lsn_t &checkpoint_lsn) {
  lsn_t log_end = 0;
  if (!srv_read_only_mode) {
    WriterInfo info;
    const Status s = g_backend->acquire_writer(&info);
    if (!s.ok()) {
      log_error("becoming its writer", s);
      return DB_ERROR;
    }
    g_epoch.store(info.epoch);
    log_end = info.log_end;
    if (flushed_lsn > log_end) {
      ib::error(ER_IB_MSG_1259)
          << "the data files (flushed_lsn " << flushed_lsn
          << ") are newer than the redo in log service volume "
          << g_backend->describe() << " (it ends at " << log_end
          << "); refusing to start on a stale volume";
      return DB_ERROR;
    }
  }
  checkpoint_lsn = g_checkpoint_lsn;
  log.last_checkpoint_lsn.store(checkpoint_lsn);
  ib::info(ER_IB_MSG_1258) << "Using checkpoint LSN " << checkpoint_lsn
                           << " of log service volume " << g_backend->describe()
                           << " (epoch " << g_epoch.load() << ", log ends at "
                           << log_end << ")";
  return DB_SUCCESS;
}

lsn_t read(log_t &log, byte *buf, lsn_t start_lsn, lsn_t end_lsn) {
  ut_a(start_lsn < end_lsn);
  size_t got = 0;
  const Status s = g_backend->read(start_lsn, buf, end_lsn - start_lsn, &got);
  if (!s.ok()) {
    log_error("reading redo at " + std::to_string(start_lsn), s);
    return 0;
  }
  ++log.n_log_ios;
  return start_lsn + got;
}

dberr_t read_block(log_t &, lsn_t block_lsn, byte *block) {
  size_t got = 0;
  const Status s = g_backend->read(block_lsn, block, OS_FILE_LOG_BLOCK_SIZE, &got);
  if (!s.ok()) {
    log_error("reading the block at " + std::to_string(block_lsn), s);
    return DB_ERROR;
  }
  if (got < OS_FILE_LOG_BLOCK_SIZE) {
    /* The log ends exactly at this block: log_start() fills in its header. */
    memset(block, 0, OS_FILE_LOG_BLOCK_SIZE);
  }
  return DB_SUCCESS;
}

dberr_t start_writer(log_t &log) {
  ut_a(!srv_read_only_mode);
  const lsn_t start_lsn = log.write_lsn.load();
  const lsn_t block_lsn = ut_uint64_align_down(start_lsn, OS_FILE_LOG_BLOCK_SIZE);
  ut_a(start_lsn > block_lsn);
  const byte *block = log.buf + block_lsn % log.buf_size;
  /* First the trimmed block becomes the tail, then what a crashed writer
  left after it goes: a crash in between recovers to the same LSN, because
  the scan stops at the trimmed (partial) block either way. */
  Status s = g_backend->put_tail(block_lsn, block, start_lsn);
  if (s.ok()) s = g_backend->wait_durable(start_lsn);
  if (s.ok()) s = g_backend->truncate(block_lsn + OS_FILE_LOG_BLOCK_SIZE);
  if (!s.ok()) {
    log_error("preparing the tail at " + std::to_string(start_lsn), s);
    return DB_ERROR;
  }
  g_shipped_lsn.store(start_lsn);
  if (!g_created_now && !g_meta.bootstrap_complete) {
    g_meta.bootstrap_complete = true;
    if (write_checkpoint(log, log.last_checkpoint_lsn.load()) != DB_SUCCESS) {
      return DB_ERROR;
    }
  }
  return DB_SUCCESS;
}

void governor_tick(log_t &log) {
  lsn_t oldest = 0;
  if (log_consumer_get_oldest(log, oldest) == nullptr) return;
  oldest = std::min<lsn_t>(oldest, log.last_checkpoint_lsn.load());
  const lsn_t upto = ut_uint64_align_down(oldest, OS_FILE_LOG_BLOCK_SIZE);
  if (upto <= g_released_lsn.load(std::memory_order_relaxed)) return;
  const Status s = g_backend->release(upto);
  if (!s.ok()) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) log_error("releasing space", s);
    return;
  }
  g_released_lsn.store(upto, std::memory_order_relaxed);
}

void set_max_inflight(unsigned long long bytes) {
  cfg_max_inflight = bytes;
  if (enabled() && g_backend != nullptr) g_backend->set_max_inflight(bytes);
}

void shutdown() {
  g_backend.reset();
  g_secret.assign(g_secret.size(), '\0');
  /* After the last redo write: the local nodes may go now. */
  stop_local_nodes();
}

std::vector<NodeHealth> node_rows() {
  if (!enabled() || g_backend == nullptr) return {};
  return g_backend->health().nodes;
}

/* SHOW STATUS LIKE 'Innodb_log_service%': an empty array unless enabled,
so upstream results do not change. */
namespace {
char status_text[16] = "OFF";
char *status_ptr = status_text;
char reason_text[512] = "";
char *reason_ptr = reason_text;
long long st_nodes, st_nodes_up, st_write_quorum;
long long st_epoch, st_shipped_lsn, st_shipped_bytes, st_durable_lsn,
    st_checkpoint_lsn, st_released_lsn, st_appends, st_tail_puts,
    st_durable_waits, st_durable_wait_avg_us;

/* Commit anatomy (the stage clocks above and the client's WriteStats). */
long long st_handoffs, st_handoff_ns, st_durable_wait_ns, st_durable_wait_csw,
    st_durable_wait_p50_us, st_durable_wait_p99_us, st_commit_waits,
    st_commit_wait_ns, st_commit_wait_loops, st_commit_wait_csw,
    st_commit_wait_p50_us, st_commit_wait_p99_us;
long long st_c_appends, st_c_tails, st_c_window_wait_ns, st_c_posts,
    st_c_post_ns, st_c_first_acks, st_c_first_ack_ns, st_c_second_acks,
    st_c_second_ack_ns, st_c_durable_groups, st_c_durable_ns,
    st_c_durable_p50_us, st_c_durable_p99_us, st_c_waits, st_c_wait_ns,
    st_c_wait_wakeups, st_c_wake_ns;
/* Histograms as "n0,n1,...": bucket b counts [2^b, 2^(b+1)) us. */
char hist_text[3][ClientWriteStats::kBuckets * 21] = {"", "", ""};
char *hist_ptr[3] = {hist_text[0], hist_text[1], hist_text[2]};

/* The q-quantile of a bucket histogram in us, interpolated linearly inside
its bucket (so within a factor of two of the truth). */
long long quantile_us(const uint64_t *counts, double q) {
  uint64_t total = 0;
  for (int b = 0; b < ClientWriteStats::kBuckets; ++b) total += counts[b];
  if (total == 0) return 0;
  const double rank = q * static_cast<double>(total);
  double seen = 0;
  for (int b = 0; b < ClientWriteStats::kBuckets; ++b) {
    if (counts[b] == 0) continue;
    if (seen + static_cast<double>(counts[b]) >= rank) {
      const double lo = b == 0 ? 0.0 : static_cast<double>(1ULL << b);
      const double hi = static_cast<double>(1ULL << (b + 1));
      return static_cast<long long>(
          lo + (hi - lo) * (rank - seen) / static_cast<double>(counts[b]));
    }
    seen += static_cast<double>(counts[b]);
  }
  return static_cast<long long>(1ULL << ClientWriteStats::kBuckets);
}

void hist_string(const uint64_t *counts, char *out, size_t size) {
  size_t at = 0;
  out[0] = '\0';
  for (int b = 0; b < ClientWriteStats::kBuckets && at < size; ++b) {
    const int n = snprintf(out + at, size - at, b == 0 ? "%llu" : ",%llu",
                           static_cast<unsigned long long>(counts[b]));
    if (n < 0) break;
    at += static_cast<size_t>(n);
  }
}

/* A Stage's histogram as plain numbers. */
void stage_hist(const Stage &st, uint64_t *counts) {
  for (int b = 0; b < ClientWriteStats::kBuckets; ++b)
    counts[b] = st.hist.counts[b].load(std::memory_order_relaxed);
}

#define STRATA_LL STRATA_STATUS_LL

SHOW_VAR status_vars[] = {
    {"status", (char *)&status_ptr, SHOW_CHAR_PTR, SHOW_SCOPE_GLOBAL},
    {"stall_reason", (char *)&reason_ptr, SHOW_CHAR_PTR, SHOW_SCOPE_GLOBAL},
    {"nodes", (char *)&st_nodes, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"nodes_up", (char *)&st_nodes_up, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"write_quorum", (char *)&st_write_quorum, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"epoch", (char *)&st_epoch, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"shipped_lsn", (char *)&st_shipped_lsn, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"shipped_bytes", (char *)&st_shipped_bytes, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"durable_lsn", (char *)&st_durable_lsn, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"checkpoint_lsn", (char *)&st_checkpoint_lsn, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"trimmed_lsn", (char *)&st_released_lsn, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"appends", (char *)&st_appends, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"tail_writes", (char *)&st_tail_puts, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"durable_waits", (char *)&st_durable_waits, SHOW_LONGLONG, SHOW_SCOPE_GLOBAL},
    {"durable_wait_avg_us", (char *)&st_durable_wait_avg_us, SHOW_LONGLONG,
     SHOW_SCOPE_GLOBAL},
    STRATA_LL("handoffs", st_handoffs),
    STRATA_LL("handoff_ns", st_handoff_ns),
    STRATA_LL("durable_wait_ns", st_durable_wait_ns),
    STRATA_LL("durable_wait_csw", st_durable_wait_csw),
    STRATA_LL("durable_wait_p50_us", st_durable_wait_p50_us),
    STRATA_LL("durable_wait_p99_us", st_durable_wait_p99_us),
    {"durable_wait_hist", (char *)&hist_ptr[0], SHOW_CHAR_PTR, SHOW_SCOPE_GLOBAL},
    STRATA_LL("commit_waits", st_commit_waits),
    STRATA_LL("commit_wait_ns", st_commit_wait_ns),
    STRATA_LL("commit_wait_loops", st_commit_wait_loops),
    STRATA_LL("commit_wait_csw", st_commit_wait_csw),
    STRATA_LL("commit_wait_p50_us", st_commit_wait_p50_us),
    STRATA_LL("commit_wait_p99_us", st_commit_wait_p99_us),
    {"commit_wait_hist", (char *)&hist_ptr[1], SHOW_CHAR_PTR, SHOW_SCOPE_GLOBAL},
    STRATA_LL("client_appends", st_c_appends),
    STRATA_LL("client_tails", st_c_tails),
    STRATA_LL("client_window_wait_ns", st_c_window_wait_ns),
    STRATA_LL("client_posts", st_c_posts),
    STRATA_LL("client_post_ns", st_c_post_ns),
    STRATA_LL("client_first_acks", st_c_first_acks),
    STRATA_LL("client_first_ack_ns", st_c_first_ack_ns),
    STRATA_LL("client_second_acks", st_c_second_acks),
    STRATA_LL("client_second_ack_ns", st_c_second_ack_ns),
    STRATA_LL("client_durable_groups", st_c_durable_groups),
    STRATA_LL("client_durable_ns", st_c_durable_ns),
    STRATA_LL("client_durable_p50_us", st_c_durable_p50_us),
    STRATA_LL("client_durable_p99_us", st_c_durable_p99_us),
    {"client_durable_hist", (char *)&hist_ptr[2], SHOW_CHAR_PTR, SHOW_SCOPE_GLOBAL},
    STRATA_LL("client_waits", st_c_waits),
    STRATA_LL("client_wait_ns", st_c_wait_ns),
    STRATA_LL("client_wait_wakeups", st_c_wait_wakeups),
    STRATA_LL("client_wake_ns", st_c_wake_ns),
    STRATA_STATUS_END};
#undef STRATA_LL
}  // namespace

int show_status(THD *, SHOW_VAR *var, char *) {
  if (!enabled() || g_backend == nullptr)
    return strata::show_status_array(var, nullptr);
  /* OK: every node takes redo; DEGRADED: fewer, but a write quorum;
  STALLED: no write quorum, commits wait (stall_reason says why); FENCED:
  another server took the volume over. */
  const Health h = g_backend->health();
  const char *state = h.fenced                         ? "FENCED"
                      : h.nodes_up < h.write_quorum    ? "STALLED"
                      : h.nodes_up < h.nodes.size()    ? "DEGRADED"
                                                       : "OK";
  snprintf(status_text, sizeof status_text, "%s", state);
  snprintf(reason_text, sizeof reason_text, "%s", h.reason.c_str());
  st_nodes = static_cast<long long>(h.nodes.size());
  st_nodes_up = static_cast<long long>(h.nodes_up);
  st_write_quorum = static_cast<long long>(h.write_quorum);
  st_epoch = static_cast<long long>(g_epoch.load());
  st_shipped_lsn = static_cast<long long>(g_shipped_lsn.load());
  st_shipped_bytes = static_cast<long long>(g_shipped_bytes.load());
  st_durable_lsn = static_cast<long long>(g_backend->durable_lsn());
  st_checkpoint_lsn = static_cast<long long>(g_checkpoint_written.load());
  st_released_lsn = static_cast<long long>(g_released_lsn.load());
  st_appends = static_cast<long long>(g_appends.load());
  st_tail_puts = static_cast<long long>(g_tail_puts.load());
  const uint64_t waits = g_durable_waits.load();
  st_durable_waits = static_cast<long long>(waits);
  st_durable_wait_avg_us =
      waits == 0 ? 0 : static_cast<long long>(g_durable_wait_us.load() / waits);
  auto ll = [](const std::atomic<uint64_t> &a) {
    return static_cast<long long>(a.load(std::memory_order_relaxed));
  };
  uint64_t counts[ClientWriteStats::kBuckets];
  st_handoffs = ll(g_handoff.count);
  st_handoff_ns = ll(g_handoff.ns);
  st_durable_wait_ns = ll(g_durable_wait.ns);
  st_durable_wait_csw = ll(g_durable_wait.csw);
  stage_hist(g_durable_wait, counts);
  st_durable_wait_p50_us = quantile_us(counts, 0.5);
  st_durable_wait_p99_us = quantile_us(counts, 0.99);
  hist_string(counts, hist_text[0], sizeof hist_text[0]);
  st_commit_waits = ll(g_commit_wait.count);
  st_commit_wait_ns = ll(g_commit_wait.ns);
  st_commit_wait_loops = ll(g_commit_wait.loops);
  st_commit_wait_csw = ll(g_commit_wait.csw);
  stage_hist(g_commit_wait, counts);
  st_commit_wait_p50_us = quantile_us(counts, 0.5);
  st_commit_wait_p99_us = quantile_us(counts, 0.99);
  hist_string(counts, hist_text[1], sizeof hist_text[1]);
  const ClientWriteStats c = g_backend->write_stats();
  st_c_appends = static_cast<long long>(c.appends);
  st_c_tails = static_cast<long long>(c.tails);
  st_c_window_wait_ns = static_cast<long long>(c.window_wait_ns);
  st_c_posts = static_cast<long long>(c.posts);
  st_c_post_ns = static_cast<long long>(c.post_ns);
  st_c_first_acks = static_cast<long long>(c.first_acks);
  st_c_first_ack_ns = static_cast<long long>(c.first_ack_ns);
  st_c_second_acks = static_cast<long long>(c.second_acks);
  st_c_second_ack_ns = static_cast<long long>(c.second_ack_ns);
  st_c_durable_groups = static_cast<long long>(c.durable_groups);
  st_c_durable_ns = static_cast<long long>(c.durable_ns);
  st_c_durable_p50_us = quantile_us(c.durable_hist, 0.5);
  st_c_durable_p99_us = quantile_us(c.durable_hist, 0.99);
  hist_string(c.durable_hist, hist_text[2], sizeof hist_text[2]);
  st_c_waits = static_cast<long long>(c.waits);
  st_c_wait_ns = static_cast<long long>(c.wait_ns);
  st_c_wait_wakeups = static_cast<long long>(c.wait_wakeups);
  st_c_wake_ns = static_cast<long long>(c.wake_ns);
  return strata::show_status_array(var, status_vars);
}

std::string service_cluster_id() { return cluster_id(); }
std::string service_secret() { return g_secret; }

}  // namespace strata::redo
