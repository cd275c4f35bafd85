// strata: the page server's redo-apply helper, `mysqld --strata-page-apply`
// (docs/design/page-server.md, section 5).
//
// Why mysqld and not a re-implementation: the page server must rebuild
// InnoDB pages exactly as crash recovery would, and the only code that
// knows every redo record type is InnoDB's own. So the helper is this same
// binary, entered through main() before anything of the server starts, with
// just the parts of InnoDB that recovery needs in memory: the buffer pool,
// the tablespace cache (no files), recovery's hash. No data directory, no
// options file, no plugins, no network; after start-up a seccomp filter
// allows reading the request pipe, writing the reply pipe and stderr, and
// memory management, nothing else.
//
// One request at a time over stdin/stdout (helper_protocol.h):
//   PARSE  recovery's scanner (recv_scan_log_recs) over whole log blocks from
//          a mini-transaction boundary; the records it would hash are
//          returned per page, with recovery's LSNs, and the hash emptied.
//          Block checks (number, checksum, epoch) and "an unknown record
//          type is corrupt log" are InnoDB's.
//   APPLY  per page: its records go into recovery's hash, its base image is
//          staged, and buf_read_page_low() reads it "from disk": the I/O
//          completion runs the checks a disk read gets and then
//          recv_recover_page(), exactly the crash-recovery path. The result
//          is stamped by buf_flush_init_for_writing() as a flush would, then
//          dropped from the pool without a write: nothing is kept between
//          requests, so a restarted helper loses nothing.
// A request the helper cannot serve (corrupt log, a page that fails its
// checks) is answered with an error; a broken frame ends the process, and
// the page server restarts it.
#include "page_apply.h"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "btr0types.h"
#include "buf0buf.h"
#include "buf0flu.h"
#include "buf0lru.h"
#include "buf0rea.h"
#include "dict0dict.h"
#include "fil0fil.h"
#include "fsp0fsp.h"
#include "log0files_io.h"
#include "log0recv.h"
#include "log0sys.h"
#include "fsp0types.h"
#include "mach0data.h"
#include "mtr0mtr.h"
#include "page0page.h"
#include "my_sys.h"
#include "mysql/strings/m_ctype.h"
#include "mysql_version.h"
#include "os0event.h"
#include "srv0srv.h"
#include "ut0crc32.h"
#include "ut0new.h"

#include "mysql/components/services/registry.h"
#include "mysql/plugin.h"
#include "sql/sql_plugin_var.h"

#include "pageserver/helper/helper_protocol.h"

/* Entry points into recovery, defined in log/log0recv.cc (patch 0007). */
void strata_recv_parse_begin(lsn_t from);
bool strata_recv_scan(const byte *buf, size_t len, lsn_t start_lsn,
                      lsn_t *read_upto_lsn);
void strata_recv_add(mlog_id_t type, space_id_t space_id, page_no_t page_no,
                     const byte *body, const byte *rec_end, lsn_t start_lsn,
                     lsn_t end_lsn);
void strata_recv_copy_body(byte *buf, recv_t *recv);
void strata_recv_forget();

/* InnoDB's plugin declaration (handler/ha_innodb.cc): its system variables
carry the defaults of the srv_* globals. */
extern struct st_mysql_plugin builtin_innobase_plugin[];

/* The server's component registry (sql/mysqld.cc): the tablespace cache
registers its SQL procedures through it at creation, and finds no UDF
service here, which is what we want. */
extern SERVICE_TYPE_NO_CONST(registry) * srv_registry;
extern bool initialize_minimal_chassis(SERVICE_TYPE_NO_CONST(registry) *
                                       *registry);
void udf_init_globals();

namespace strata {
namespace page_apply {

bool g_active = false;

namespace {

namespace proto = strata::pageserver::helper;
using strata::logservice::repl::ByteReader;
using strata::logservice::repl::ByteWriter;

/* The page the current APPLY reads "from disk". */
struct Staged {
  page_id_t id{0, 0};
  std::string image;  // physical size; all zero for a page never written
  bool set = false;
} g_staged;

ut::aligned_pointer<log_t, ut::INNODB_CACHE_LINE_SIZE> g_log;

/* Tablespace operations of the current PARSE (helper_protocol.h, kParsed). */
struct SpaceOp {
  proto::SpaceOpKind kind;
  std::uint32_t space = 0;
  std::uint32_t flags = 0;
  std::uint64_t size = 0;  // kExtend: file size in bytes; kSize: pages
  std::string name;
  lsn_t lsn = 0;
};
std::vector<SpaceOp> g_space_ops;

void say(const std::string &line) {
  const std::string s = "page-apply[" + std::to_string(getpid()) + "]: " +
                        line + "\n";
  /* stderr is a pipe the page server logs line by line. */
  [[maybe_unused]] ssize_t n = write(2, s.data(), s.size());
}

[[noreturn]] void die(const std::string &why) {
  say("fatal: " + why);
  _exit(2);
}

std::uint32_t crc32c(std::string_view s) {
  return ut_crc32(reinterpret_cast<const byte *>(s.data()), s.size());
}

/* ---- pipes ---- */

bool read_exact(int fd, char *p, size_t n) {
  while (n > 0) {
    const ssize_t r = read(fd, p, n);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

void write_exact(int fd, const char *p, size_t n) {
  while (n > 0) {
    const ssize_t r = write(fd, p, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) die("reply pipe closed");
    p += r;
    n -= static_cast<size_t>(r);
  }
}

/* False at a clean end of input; dies on a broken frame. */
bool read_request(proto::FrameHeader *h, std::string *payload) {
  char raw[proto::kHeaderSize];
  if (!read_exact(0, raw, sizeof raw)) return false;
  const char *why = nullptr;
  if (!proto::DecodeHeader(std::string_view(raw, sizeof raw), h, &why))
    die(why);
  payload->resize(h->payload_len);
  if (!read_exact(0, payload->data(), payload->size()))
    die("request pipe closed inside a frame");
  if (crc32c(*payload) != h->crc) die("request payload CRC mismatch");
  return true;
}

void reply(const proto::FrameHeader &req, std::uint16_t type,
           const std::string &payload) {
  proto::FrameHeader h;
  h.type = type;
  h.request_id = req.request_id;
  h.payload_len = static_cast<std::uint32_t>(payload.size());
  h.crc = crc32c(payload);
  const std::string head = proto::EncodeHeader(h);
  write_exact(1, head.data(), head.size());
  write_exact(1, payload.data(), payload.size());
}

void reply_error(const proto::FrameHeader &req, const std::string &why) {
  ByteWriter w;
  w.Str(why.substr(0, 60000));
  reply(req, proto::kError, w.out());
}

/* ---- InnoDB, without the server ---- */

/* Every InnoDB global that backs a system variable gets its default, as
plugin loading would do: most of InnoDB assumes them (array sizes, spin
rounds, checksum algorithm, LRU ratios). Nothing is read from options. */
template <typename Var>
void set_default(SYS_VAR *var) {
  auto *v = reinterpret_cast<Var *>(var);
  using Value = std::remove_reference_t<decltype(*v->value)>;
  /* A string default is a literal; the variable's type is char *. */
  *v->value = (Value)(v->def_val);
}

void apply_innodb_defaults() {
  for (SYS_VAR **v = builtin_innobase_plugin[0].system_vars;
       v != nullptr && *v != nullptr; ++v) {
    SYS_VAR *var = *v;
    if (var->flags & PLUGIN_VAR_THDLOCAL) continue;
    switch (var->flags & PLUGIN_VAR_TYPEMASK) {
      case PLUGIN_VAR_BOOL:
        set_default<sysvar_bool_t>(var);
        break;
      case PLUGIN_VAR_INT:
        set_default<sysvar_int_t>(var);
        break;
      case PLUGIN_VAR_LONG:
        set_default<sysvar_long_t>(var);
        break;
      case PLUGIN_VAR_LONGLONG:
        set_default<sysvar_longlong_t>(var);
        break;
      case PLUGIN_VAR_STR:
        set_default<sysvar_str_t>(var);
        break;
      case PLUGIN_VAR_ENUM:
        set_default<sysvar_enum_t>(var);
        break;
      case PLUGIN_VAR_SET:
        set_default<sysvar_set_t>(var);
        break;
      case PLUGIN_VAR_DOUBLE:
        set_default<sysvar_double_t>(var);
        break;
      default:
        break;
    }
  }
}

bool init_innodb(std::uint32_t page_size, std::string *why) {
  apply_innodb_defaults();
  srv_page_size = page_size;
  srv_page_size_shift = page_size_validate(page_size);
  if (srv_page_size_shift == 0) {
    *why = "unsupported page size " + std::to_string(page_size);
    return false;
  }
  /* What innodb_init_params() derives from the options. One thread here;
  the wait array only needs to exist. */
  srv_max_n_threads = 64;
  log_checksum_algorithm_ptr.store(srv_log_checksums
                                       ? log_block_calc_checksum_crc32
                                       : log_block_calc_checksum_none);
  univ_page_size.copy_from(page_size_t(srv_page_size, srv_page_size, false));

  /* One small pool: a batch is at most 64 pages, and nothing stays. */
  srv_buf_pool_instances = 1;
  srv_buf_pool_chunk_unit = 32 << 20;
  srv_buf_pool_size = 32 << 20;
  srv_read_only_mode = false;
  srv_force_recovery = 0;
  btr_search_enabled = false;
  srv_btr_search_enabled = false;

  /* mysqld_main()'s first steps that InnoDB's start-up leans on: the
  system character set, the registry, and the UDF table that the tablespace
  cache registers its procedures in (in this process nothing calls them). */
  system_charset_info = &my_charset_utf8mb3_general_ci;
  if (initialize_minimal_chassis(&srv_registry) || srv_registry == nullptr) {
    *why = "the component registry did not start";
    return false;
  }
  udf_init_globals();
  ut_new_boot();
  os_event_global_init();
  srv_boot();
  fil_init(1000);
  if (buf_pool_init(srv_buf_pool_size, srv_buf_pool_instances) !=
      DB_SUCCESS) {
    *why = "buffer pool initialisation failed";
    return false;
  }
  fsp_init();
  /* MLOG_TABLE_DYNAMIC_META parses through the persisters' table. */
  dict_persist_init();

  /* A log_t that no thread runs: recovery's scanner takes one by reference
  and, with unlimited hash memory, never uses it. */
  g_log.alloc_withkey(UT_NEW_THIS_FILE_PSI_KEY);
  log_sys = g_log;

  recv_sys_create();
  recv_sys_init();
  /* recv_needed_recovery before the first scan, else the scanner starts
  "crash recovery" (log files, dblwr); recv_recover_page asserts it too. */
  recv_recovery_on = true;
  recv_needed_recovery = true;
  recv_lsn_checks_on = false;
  g_active = true;
  return true;
}

/* SPACES: the helper's tablespace cache, without files. */
std::string handle_spaces(ByteReader &r) {
  std::uint32_t n;
  if (!r.U32(&n)) return "bad SPACES request";
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t id, flags, size;
    if (!r.U32(&id) || !r.U32(&flags) || !r.U32(&size))
      return "bad SPACES request";
    if (!fsp_flags_is_valid(flags)) {
      /* One bad entry must not stop the others (every child gets the list
      at start): it is skipped, and a page of it created from its image. */
      say("tablespace " + std::to_string(id) + ": invalid flags " +
          std::to_string(flags) + ", skipped");
      continue;
    }
    fil_space_t *space = fil_space_get(id);
    if (space == nullptr) {
      const std::string name = "strata_space_" + std::to_string(id);
      space = fil_space_create(name.c_str(), id, flags, FIL_TYPE_TABLESPACE);
      if (space == nullptr)
        return "cannot create tablespace " + std::to_string(id);
    }
    /* Never zero: a zero size makes the tablespace cache open files. */
    space->size = std::max<std::uint32_t>(size, 1);
    space->size_in_header = space->size;
    space->flags = flags;
  }
  return "";
}

/* A 4-byte write of FSP_SIZE on page 0 changes the tablespace's size: the
page server's tablespace directory follows it (design note, section 6). */
void note_size_write(space_id_t space, const recv_t *recv,
                     const std::string &body) {
  if (recv->type != MLOG_4BYTES || body.size() < 3) return;
  const byte *p = reinterpret_cast<const byte *>(body.data());
  if (mach_read_from_2(p) != FSP_HEADER_OFFSET + FSP_SIZE) return;
  const byte *v = p + 2;
  const uint32_t pages = mach_parse_compressed(&v, p + body.size());
  if (v == nullptr) return;
  g_space_ops.push_back(
      SpaceOp{proto::kSpaceSize, space, 0, pages, "", recv->end_lsn});
}

/* Serialises and forgets what recovery's scanner hashed. */
void take_records(ByteWriter &w, std::uint32_t *count) {
  std::string body;
  for (auto &space : *recv_sys->spaces) {
    for (auto &page : space.second.m_pages) {
      recv_addr_t *addr = page.second;
      for (recv_t *recv : addr->rec_list) {
        body.resize(recv->len);
        if (recv->len > 0)
          strata_recv_copy_body(reinterpret_cast<byte *>(body.data()), recv);
        if (addr->page_no == 0) note_size_write(addr->space, recv, body);
        w.U32(addr->space);
        w.U32(addr->page_no);
        w.U8(static_cast<std::uint8_t>(recv->type));
        w.U64(recv->start_lsn);
        w.U64(recv->end_lsn);
        w.Bytes(body);
        ++*count;
      }
    }
  }
  strata_recv_forget();
}

/* PARSE: recovery's scanner over whole blocks from a group boundary. */
std::string handle_parse(ByteReader &r, std::string *out) {
  std::uint64_t from, block_lsn;
  std::string blocks;
  if (!r.U64(&from) || !r.U64(&block_lsn) ||
      !r.Bytes(&blocks, proto::kMaxPayload) || !r.done())
    return "bad PARSE request";
  if (block_lsn % OS_FILE_LOG_BLOCK_SIZE != 0 ||
      from / OS_FILE_LOG_BLOCK_SIZE != block_lsn / OS_FILE_LOG_BLOCK_SIZE ||
      blocks.empty() || blocks.size() % OS_FILE_LOG_BLOCK_SIZE != 0)
    return "PARSE wants whole 512-byte blocks from the block holding `from`";

  g_space_ops.clear();
  strata_recv_parse_begin(from);
  lsn_t scanned_to = 0;
  strata_recv_scan(reinterpret_cast<const byte *>(blocks.data()),
                   blocks.size(), block_lsn, &scanned_to);
  if (recv_sys->found_corrupt_log || recv_sys->found_corrupt_fs) {
    const lsn_t at = recv_sys->recovered_lsn;
    strata_recv_forget();
    return "corrupt redo (an unknown record type or a record that does not "
           "parse) after LSN " +
           std::to_string(at);
  }
  ByteWriter w;
  /* recovered_lsn: the end of the last complete mini-transaction. Before
  the scanner found a group start it is still `from`. */
  w.U64(std::max<lsn_t>(recv_sys->recovered_lsn, from));
  /* Where the scanner stopped: before the end of whole blocks, a block
  failed InnoDB's checks (number, checksum, epoch), which recovery takes for
  the end of the log; the page server decides whether it may be. */
  w.U64(scanned_to);
  ByteWriter recs;
  std::uint32_t n = 0;
  take_records(recs, &n);
  w.U32(n);
  w.out().append(recs.out());
  std::stable_sort(g_space_ops.begin(), g_space_ops.end(),
                   [](const SpaceOp &a, const SpaceOp &b) { return a.lsn < b.lsn; });
  w.U32(static_cast<std::uint32_t>(g_space_ops.size()));
  for (const auto &op : g_space_ops) {
    w.U8(op.kind);
    w.U32(op.space);
    w.U32(op.flags);
    w.U64(op.size);
    w.Str(op.name);
    w.U64(op.lsn);
  }
  *out = std::move(w.out());
  return "";
}

struct ApplyPage {
  page_id_t id{0, 0};
  std::string base;  // empty: never written
  struct Rec {
    mlog_id_t type;
    lsn_t start, end;
    std::string body;
  };
  std::vector<Rec> recs;
};

/* The tablespace of a page to apply. One the page server did not name
(seeded from images, never created in the redo it followed) is created from
what the page needs: its page size, which the base image's size gives
(smaller than the logical size: compressed). The cache never limits a page
number: the size grows to cover it. */
fil_space_t *space_for(const ApplyPage &p, std::string *why) {
  fil_space_t *space = fil_space_get(p.id.space());
  if (space == nullptr) {
    const std::size_t physical = p.base.empty() ? srv_page_size : p.base.size();
    if (physical > srv_page_size || physical < 1024 ||
        (physical & (physical - 1)) != 0) {
      *why = "a base image of " + std::to_string(physical) + " bytes";
      return nullptr;
    }
    const page_size_t size(physical, srv_page_size, physical < srv_page_size);
    const uint32_t flags = fsp_flags_init(size, true, false, false, false);
    const std::string name = "strata_space_" + std::to_string(p.id.space());
    space = fil_space_create(name.c_str(), p.id.space(), flags,
                             FIL_TYPE_TABLESPACE);
    if (space == nullptr) {
      *why = "cannot create tablespace " + std::to_string(p.id.space());
      return nullptr;
    }
  }
  if (space->size <= p.id.page_no()) {
    space->size = p.id.page_no() + 1;
    space->size_in_header = space->size;
  }
  return space;
}

/* One page through the crash-recovery read path. */
std::string apply_one(const ApplyPage &p, ByteWriter &w) {
  std::string why;
  fil_space_t *space = space_for(p, &why);
  if (space == nullptr) return why;
  const page_size_t page_size(space->flags);
  if (!p.base.empty() && p.base.size() != page_size.physical())
    return "base image of " + std::to_string(p.base.size()) +
           " bytes, the tablespace's pages have " +
           std::to_string(page_size.physical());

  recv_sys->apply_log_recs = false;
  for (const auto &rec : p.recs) {
    const byte *b = reinterpret_cast<const byte *>(rec.body.data());
    strata_recv_add(rec.type, p.id.space(), p.id.page_no(), b,
                    b + rec.body.size(), rec.start, rec.end);
  }
  g_staged.id = p.id;
  g_staged.image = p.base.empty()
                       ? std::string(page_size.physical(), '\0')
                       : p.base;
  g_staged.set = true;
  recv_sys->apply_log_recs = true;

  dberr_t err = DB_SUCCESS;
  const ulint read =
      buf_read_page_low(&err, true, 0, BUF_READ_ANY_PAGE, p.id, page_size,
                        true);
  g_staged.set = false;
  recv_sys->apply_log_recs = false;
  /* The page's entry in recovery's hash is now "processed": a later APPLY
  of the same page would add to it and apply nothing. Every page starts
  from an empty hash. */
  strata_recv_forget();
  if (read == 0 || err != DB_SUCCESS) {
    return "the base image failed InnoDB's read checks (its checksum)";
  }

  mtr_t mtr;
  mtr_start(&mtr);
  mtr_set_log_mode(&mtr, MTR_LOG_NONE);
  buf_block_t *block =
      buf_page_get(p.id, page_size, RW_X_LATCH, UT_LOCATION_HERE, &mtr);
  lsn_t lsn = block->page.get_newest_lsn();
  if (lsn == 0) lsn = mach_read_from_8(block->frame + FIL_PAGE_LSN);
  /* recv_recover_page's rule: a record applies when it starts at or above
  the page's LSN (an MLOG_INIT_FILE_PAGE resets it; counted as applied). */
  const lsn_t base_lsn =
      p.base.empty() ? 0 : mach_read_from_8(
                               reinterpret_cast<const byte *>(p.base.data()) +
                               FIL_PAGE_LSN);
  std::uint32_t applied = 0;
  for (const auto &rec : p.recs)
    if (rec.start >= base_lsn) ++applied;
  page_zip_des_t *zip =
      page_size.is_compressed() ? &block->page.zip : nullptr;
  buf_flush_init_for_writing(block, block->frame, zip, lsn,
                             fsp_is_checksum_disabled(p.id.space()), true);
  std::string image(page_size.physical(), '\0');
  memcpy(image.data(), zip != nullptr ? zip->data : block->frame,
         image.size());
  mtr_commit(&mtr);

  w.U8(1);
  w.Str("");
  w.U64(lsn);
  w.U32(applied);
  w.Bytes(image);
  return "";
}

std::string handle_apply(ByteReader &r, std::string *out) {
  std::uint32_t n;
  if (!r.U32(&n) || n > proto::kMaxApplyPages) return "bad APPLY request";
  std::vector<ApplyPage> pages(n);
  for (auto &p : pages) {
    std::uint32_t space, page, nrec;
    bool has_base;
    if (!r.U32(&space) || !r.U32(&page) || !r.Bool(&has_base) ||
        !r.Bytes(&p.base, proto::kMaxPageSize) || !r.U32(&nrec) ||
        nrec > proto::kMaxPayload / 21)  // a record takes at least 21 bytes
      return "bad APPLY request";
    if (!has_base) p.base.clear();
    p.id = page_id_t(space, page);
    p.recs.resize(nrec);
    for (auto &rec : p.recs) {
      std::uint8_t type;
      if (!r.U8(&type) || !r.U64(&rec.start) || !r.U64(&rec.end) ||
          !r.Bytes(&rec.body, proto::kMaxPayload))
        return "bad APPLY request";
      rec.type = static_cast<mlog_id_t>(type);
    }
  }
  if (!r.done()) return "bad APPLY request";

  ByteWriter w;
  w.U32(n);
  std::vector<space_id_t> touched;
  for (const auto &p : pages) {
    const std::string failed = apply_one(p, w);
    if (!failed.empty()) {
      w.U8(0);
      w.Str(failed);
      w.U64(0);
      w.U32(0);
      w.Bytes("");
    }
    touched.push_back(p.id.space());
  }
  /* Nothing stays in the pool between requests, and nothing is written. */
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (space_id_t id : touched)
    buf_LRU_flush_or_remove_pages(id, BUF_REMOVE_ALL_NO_WRITE, nullptr);
  *out = std::move(w.out());
  return "";
}

/* ---- seccomp ---- */

/* Allow-list after start-up (design section 5.1): the pipes, memory, time
and sleeping (InnoDB waits for a free block with a sleep), and leaving. Not
tgkill: an assertion's abort() ends in SIGSYS, after its message. Anything else kills the process (or, with --seccomp=log, is
logged by the kernel, for measuring the list). */
bool enter_seccomp(bool log_only, std::string *why) {
#if defined(__x86_64__)
  const unsigned kAllowed[] = {
      SYS_read,          SYS_write,        SYS_futex,    SYS_mmap,
      SYS_munmap,        SYS_mremap,       SYS_madvise,  SYS_brk,
      SYS_clock_gettime, SYS_gettid,       SYS_getpid,   SYS_sched_yield,
      SYS_rt_sigreturn,  SYS_exit_group,   SYS_exit,     SYS_mprotect,
      SYS_rt_sigprocmask, SYS_clock_nanosleep, SYS_nanosleep,
      SYS_restart_syscall, SYS_gettimeofday, SYS_time};
  std::vector<sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                          offsetof(struct seccomp_data, arch)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  prog.push_back(
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  for (unsigned nr : kAllowed) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, log_only ? SECCOMP_RET_LOG
                                                    : SECCOMP_RET_KILL_PROCESS));
  sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    *why = std::string("PR_SET_NO_NEW_PRIVS: ") + strerror(errno);
    return false;
  }
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog) != 0) {
    *why = std::string("seccomp: ") + strerror(errno);
    return false;
  }
  return true;
#else
  (void)log_only;
  *why = "the seccomp allow-list is written for x86-64 only";
  return false;
#endif
}

int serve(const std::string &seccomp_mode) {
  proto::FrameHeader h;
  std::string payload;
  bool ready = false;
  while (read_request(&h, &payload)) {
    ByteReader r(payload);
    std::string out, failed;
    switch (h.type) {
      case proto::kHello: {
        std::uint32_t page_size;
        if (!r.U32(&page_size) || !r.done()) die("bad HELLO");
        if (ready) {
          if (page_size != srv_page_size) die("HELLO with another page size");
        } else {
          std::string why;
          if (!init_innodb(page_size, &why)) {
            reply_error(h, why);
            return 1;
          }
          if (seccomp_mode != "off" &&
              !enter_seccomp(seccomp_mode == "log", &why)) {
            reply_error(h, why);
            return 1;
          }
          ready = true;
        }
        ByteWriter w;
        w.U32(static_cast<std::uint32_t>(srv_page_size));
        w.U32(crc32c("123456789"));
        w.Str(MYSQL_SERVER_VERSION);
        out = std::move(w.out());
        reply(h, proto::kReady, out);
        continue;
      }
      case proto::kPing:
        reply(h, proto::kPong, "");
        continue;
      default:
        break;
    }
    if (!ready) {
      reply_error(h, "HELLO first");
      continue;
    }
    switch (h.type) {
      case proto::kSpaces:
        failed = handle_spaces(r);
        if (failed.empty()) reply(h, proto::kSpacesOk, "");
        break;
      case proto::kParse:
        failed = handle_parse(r, &out);
        if (failed.empty()) reply(h, proto::kParsed, out);
        break;
      case proto::kApply:
        failed = handle_apply(r, &out);
        if (failed.empty()) reply(h, proto::kApplied, out);
        break;
      default:
        failed = "unknown request type " + std::to_string(h.type);
    }
    if (!failed.empty()) reply_error(h, failed);
  }
  return 0;
}

}  // namespace

namespace {
/* A file name in a tablespace record: u16 length, then the bytes (with
their terminating NUL). */
const byte *take_name(const byte *p, const byte *end, std::string *name) {
  if (end - p < 2) return nullptr;
  const ulint len = mach_read_from_2(p);
  p += 2;
  if (static_cast<ulint>(end - p) < len) return nullptr;
  name->assign(reinterpret_cast<const char *>(p), len);
  while (!name->empty() && name->back() == '\0') name->pop_back();
  return p + len;
}
}  // namespace

void file_event(mlog_id_t type, space_id_t space_id, const byte *body,
                const byte *end, lsn_t end_lsn) {
  SpaceOp op;
  op.space = space_id;
  op.lsn = end_lsn;
  switch (type) {
    case MLOG_FILE_CREATE:
      if (end - body < 4) return;
      op.kind = proto::kSpaceCreate;
      op.flags = mach_read_from_4(body);
      if (take_name(body + 4, end, &op.name) == nullptr) return;
      break;
    case MLOG_FILE_DELETE:
      op.kind = proto::kSpaceDelete;
      if (take_name(body, end, &op.name) == nullptr) return;
      break;
    case MLOG_FILE_RENAME: {
      std::string from;
      const byte *p = take_name(body, end, &from);
      op.kind = proto::kSpaceRename;
      if (p == nullptr || take_name(p, end, &op.name) == nullptr) return;
      break;
    }
    case MLOG_FILE_EXTEND:
      if (end - body < 16) return;
      op.kind = proto::kSpaceExtend;
      op.size = mach_read_from_8(body) + mach_read_from_8(body + 8);
      break;
    default:
      return;
  }
  g_space_ops.push_back(std::move(op));
}

dberr_t read_staged(const page_id_t &page_id, const page_size_t &page_size,
                    void *dst) {
  if (!g_staged.set || !(g_staged.id == page_id) ||
      g_staged.image.size() != page_size.physical()) {
    say("read of page " + std::to_string(page_id.space()) + ":" +
        std::to_string(page_id.page_no()) + " that was not handed over");
    return DB_ERROR;
  }
  memcpy(dst, g_staged.image.data(), g_staged.image.size());
  return DB_SUCCESS;
}

}  // namespace page_apply
}  // namespace strata

int strata_page_apply_main(int argc, char **argv) {
  std::string seccomp_mode = "kill";
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--seccomp=", 0) == 0) {
      seccomp_mode = a.substr(10);
      if (seccomp_mode != "kill" && seccomp_mode != "log" &&
          seccomp_mode != "off") {
        fprintf(stderr, "--seccomp takes kill, log or off\n");
        return 1;
      }
    } else {
      fprintf(stderr,
              "usage: mysqld --strata-page-apply [--seccomp=kill|log|off]\n"
              "  (started by pageserverd; speaks its pipe protocol on "
              "stdin/stdout)\n");
      return 1;
    }
  }
  /* The parent's death ends the helper, whatever it is doing. */
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (my_init()) {
    fprintf(stderr, "page-apply: my_init failed\n");
    return 1;
  }
  /* Frames are checked before InnoDB starts (srv_boot would do this). */
  ut_crc32_init();
  return strata::page_apply::serve(seccomp_mode);
}
