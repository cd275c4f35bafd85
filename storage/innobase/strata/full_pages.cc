// strata::full_pages: see full_pages.h.
#include "full_pages.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include "buf0buf.h"
#include "fil0fil.h"
#include "fsp0fsp.h"
#include "log0recv.h"
#include "mach0data.h"
#include "mtr0log.h"
#include "mtr0mtr.h"
#include "page0zip.h"
#include "page_service.h"
#include "redo.h"
#include "srv0srv.h"
#include "ut0log.h"

namespace strata::full_pages {

namespace {

std::atomic<uint64_t> g_pages{0}, g_bytes{0}, g_unlogged{0};

/* MLOG_WRITE_STRING carries its length in 2 bytes. */
constexpr ulint kMaxPiece = 32 * 1024;

/* Room for a record's header: type, compressed space id and page number,
and two 2-byte fields. */
constexpr ulint kHeaderRoom = 1 + 5 + 5 + 2 + 2;

/* One MLOG_WRITE_STRING of `len` bytes at page offset `offset`, taken from
`src`, for the page `id`. Unlike mlog_log_string() the bytes need not come
from the frame, so a compressed page's own bytes can be logged. */
void write_string(const page_id_t &id, ulint offset, const byte *src,
                  ulint len, mtr_t *mtr) {
  byte *log_ptr = nullptr;
  if (!mlog_open(mtr, kHeaderRoom, log_ptr)) return;
  log_ptr = mlog_write_initial_log_record_low(MLOG_WRITE_STRING, id.space(),
                                              id.page_no(), log_ptr, mtr);
  mach_write_to_2(log_ptr, offset);
  mach_write_to_2(log_ptr + 2, len);
  mlog_close(mtr, log_ptr + 4);
  mlog_catenate_string(mtr, src, len);
}

/* A 2-byte write of the page type: the first record for a page that the
apply side may still have typed "allocated" (a debug build's apply accepts
only a type change on such a page). */
void write_type(const page_id_t &id, const byte *page, mtr_t *mtr) {
  byte *log_ptr = nullptr;
  if (!mlog_open(mtr, kHeaderRoom, log_ptr)) return;
  log_ptr = mlog_write_initial_log_record_low(MLOG_2BYTES, id.space(),
                                              id.page_no(), log_ptr, mtr);
  mach_write_to_2(log_ptr, FIL_PAGE_TYPE);
  log_ptr += 2;
  log_ptr += mach_write_compressed(log_ptr, mach_read_from_2(page + FIL_PAGE_TYPE));
  mlog_close(mtr, log_ptr);
}

/* A page's bytes from FIL_PAGE_OFFSET to its trailer, after its type: the
checksum fields and the page LSN are what a flush writes. */
void write_page(const page_id_t &id, const byte *page, ulint size, mtr_t *mtr) {
  write_type(id, page, mtr);
  const ulint end = size - FIL_PAGE_END_LSN_OLD_CHKSUM;
  for (ulint off = FIL_PAGE_OFFSET; off < end; off += kMaxPiece) {
    write_string(id, off, page + off, std::min(kMaxPiece, end - off), mtr);
  }
}

/* A compressed index page: MLOG_ZIP_PAGE_COMPRESS with the whole compressed
page as its "stream" and an empty trailer, so the apply side's copy is the
compute's byte for byte (page_zip_parse_compress copies, then decompresses). */
void log_compressed_index(buf_block_t *block, mtr_t *mtr) {
  const page_zip_des_t &zip = block->page.zip;
  const ulint size = page_zip_get_size(&zip);
  byte *log_ptr = nullptr;
  if (!mlog_open(mtr, kHeaderRoom, log_ptr)) return;
  log_ptr = mlog_write_initial_log_record_low(
      MLOG_ZIP_PAGE_COMPRESS, block->page.id.space(), block->page.id.page_no(),
      log_ptr, mtr);
  mach_write_to_2(log_ptr, size - FIL_PAGE_TYPE);
  mach_write_to_2(log_ptr + 2, 0);
  mlog_close(mtr, log_ptr + 4);
  mlog_catenate_string(mtr, zip.data + FIL_PAGE_PREV, 4);
  mlog_catenate_string(mtr, zip.data + FIL_PAGE_NEXT, 4);
  mlog_catenate_string(mtr, zip.data + FIL_PAGE_TYPE, size - FIL_PAGE_TYPE);
}

}  // namespace

bool required() {
  return strata::page_service::cfg_mode != 0 && strata::redo::enabled() &&
         !mtr_t::s_logging.is_disabled() && !recv_recovery_is_on() &&
         !srv_read_only_mode;
}

bool WrittenBlocks::operator()(const mtr_memo_slot_t *slot) {
  if (slot->object == nullptr) return true;
  auto *block = static_cast<buf_block_t *>(slot->object);
  const bool latched =
      slot->type == MTR_MEMO_PAGE_X_FIX || slot->type == MTR_MEMO_PAGE_SX_FIX;
  const bool dirty_unlatched =
      slot->type == MTR_MEMO_BUF_FIX && block->made_dirty_with_no_latch;
  if ((latched || dirty_unlatched) &&
      std::find(blocks.begin(), blocks.end(), block) == blocks.end()) {
    blocks.push_back(block);
  }
  return true;
}

void log_written_pages(mtr_t *mtr, const std::vector<buf_block_t *> &blocks) {
  for (const buf_block_t *block : blocks) {
    if (fsp_is_system_temporary(block->page.id.space())) return;
  }
  if (blocks.empty()) return;
  /* From no-redo to logging. The mode table of mtr_t::set_log_mode does not
  go from MTR_LOG_NO_REDO to MTR_LOG_ALL directly; through MTR_LOG_NONE is a
  path it allows, and nothing is written in between. */
  mtr->set_log_mode(MTR_LOG_NONE);
  mtr->set_log_mode(MTR_LOG_ALL);
  ut_a(mtr->get_log_mode() == MTR_LOG_ALL);
  const size_t before = mtr->get_log()->size();
  for (buf_block_t *block : blocks) {
    const page_id_t &id = block->page.id;
    if (id.page_no() == 0) {
      ++g_unlogged;
      ib::error(ER_IB_MSG_1259)
          << "page service: page " << id.space() << ":0 was written without "
             "redo and cannot be logged as a full page; the page servers' copy "
             "of it is now wrong";
      continue;
    }
    const page_zip_des_t &zip = block->page.zip;
    if (zip.data == nullptr) {
      write_page(id, block->frame, block->page.size.logical(), mtr);
    } else if (fil_page_index_page_check(zip.data)) {
      log_compressed_index(block, mtr);
    } else {
      /* A compressed LOB page: its compressed bytes, which the apply side
      writes into the compressed copy and the frame alike. */
      write_page(id, zip.data, page_zip_get_size(&zip), mtr);
    }
    ++g_pages;
  }
  const size_t written = mtr->get_log()->size() - before;
  if (written == 0) {
    /* Nothing could be logged: back to no-redo, so the commit still puts
    the pages on the flush list (a logged commit without records would
    not). */
    mtr->set_log_mode(MTR_LOG_NO_REDO);
  }
  g_bytes += written;
}

Counters counters() {
  return Counters{g_pages.load(), g_bytes.load(), g_unlogged.load()};
}

}  // namespace strata::full_pages
