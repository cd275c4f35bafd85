// strata::full_pages: pages InnoDB writes without redo go into the redo as
// whole pages when page servers follow the log (docs/design/page-server.md,
// section 6).
//
// A page server knows a page only from the redo. InnoDB writes some pages
// with no redo at all (MTR_LOG_NO_REDO): sorted index builds (ALTER TABLE ...
// ADD INDEX, table rebuilds, the bulk of CREATE INDEX), the LOB pages they
// write, the dictionary header's id for a temporary table. Stock MySQL makes
// those durable by flushing the pages before the DDL commits (a flush
// observer); a page server would keep the page as the logged allocation left
// it, empty. So, in page-service mode, when a no-redo mini-transaction that
// wrote pages of a logged tablespace commits, it is turned into a logged one
// whose records are the images of the pages it holds X-latched: one hook in
// mtr_t::commit catches every such writer, present and future, instead of a
// hunk per caller. What the page server then rebuilds is the page exactly as
// the compute holds it at that commit, at that commit's LSN.
//
// The record forms, chosen so that stock recovery (the page server's helper
// runs it) accepts them on a page in any state:
//   - an uncompressed page: a 2-byte write of FIL_PAGE_TYPE (the page may
//     still be typed "allocated" on the apply side, where a debug build
//     accepts no other write), then MLOG_WRITE_STRING in pieces of at most
//     32 KiB (its length field has 2 bytes) from FIL_PAGE_OFFSET to the
//     trailer; the checksum fields and the page LSN are written at flush;
//   - a compressed index page: MLOG_ZIP_PAGE_COMPRESS carrying the whole
//     compressed page (no separate trailer), which the apply side copies and
//     decompresses into the frame;
//   - a compressed page of another type (compressed LOB pages): one
//     MLOG_WRITE_STRING of the compressed bytes, which the apply side copies
//     into both copies of the page.
// Page 0 of a tablespace is never written with MLOG_WRITE_STRING (the parse
// side reads that record on page 0 as encryption information); no no-redo
// writer touches it outside IMPORT TABLESPACE, which is refused in this mode.
// Should one appear it is counted (unlogged_writes) and logged, and the
// compare mode will name the page.
//
// Temporary tablespaces are never logged: a mini-transaction that holds any
// of their pages is left as it is.
#pragma once
#include <cstdint>
#include <vector>

#include "univ.i"

class mtr_t;
struct buf_block_t;
struct mtr_memo_slot_t;

namespace strata::full_pages {

/** @return true iff pages written without redo must be put into the redo:
the page service is on (compare or on), redo logging is enabled, and the
server is past recovery and writable. */
bool required();

/** Collects, over a mini-transaction's memo, the blocks its commit would put
on the flush list (as Add_dirty_blocks_to_flush_list in mtr0mtr.cc chooses
them): X- or SX-latched ones, and buffer-fixed ones made dirty without a
latch. */
struct WrittenBlocks {
  std::vector<buf_block_t *> blocks;
  bool operator()(const mtr_memo_slot_t *slot);
};

/** Called by mtr_t::commit for a no-redo mini-transaction that modified
pages, when required(): switches `mtr` to logging and writes the images of
`blocks`, unless one of them belongs to a temporary tablespace (then nothing
changes). */
void log_written_pages(mtr_t *mtr, const std::vector<buf_block_t *> &blocks);

/** Counters for SHOW STATUS (Innodb_page_service_full_page_*). */
struct Counters {
  uint64_t pages;          // page images written
  uint64_t bytes;          // bytes of page image records
  uint64_t unlogged;       // pages that could not be logged (page 0)
};
Counters counters();

}  // namespace strata::full_pages
