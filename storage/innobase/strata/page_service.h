// strata::page_service: the compute's read path to the page servers
// (docs/design/page-server.md, section 9), in `compare` mode: InnoDB reads
// every page from its local file as always, and each page read after crash
// recovery is also asked of a page server and compared. A page that differs
// (other than in what a flush writes, or a page LSN a mini-transaction moved
// without logging for that page) is reported with both images, and stops the
// server unless innodb_page_service_compare_action=log. This is how the read
// path is proven before the compute stops writing pages (issue 34).
//
// Threads: compare_read() runs in whichever thread completes a page read
// (a user thread, an I/O thread); threads share eight page server sessions.
//
// `on` mode (innodb_page_service=on) reads pages from the page servers
// instead of the files, which the compute still writes (issue 34 stops
// that). See page_service.cc for the LSNs it asks at.
#pragma once
#include "buf0types.h"
#include "page0size.h"
#include "univ.i"

class THD;
struct SHOW_VAR;

namespace strata::page_service {

/* Configuration: the innodb_page_service* system variables (sysvars.ic). */
extern ulong cfg_mode;            // 0 off, 1 compare, 2 on
extern char *cfg_addresses;       // tcp://host:port[,...]
extern ulong cfg_compare_action;  // 0 abort, 1 log
extern bool g_comparing;
extern bool g_serving;

/** @return true iff page reads are compared with a page server. */
inline bool comparing() { return g_comparing; }

/** @return true iff pages are read from the page servers (`on`). */
inline bool serving() { return g_serving; }

/** Checks the innodb_page_service* options (in innodb_init_params, after the
log service's): compare needs the log service, page server addresses and
innodb_change_buffering=none; on is not built yet.
@return false (after logging why) if the server must not start */
bool validate_params();

/** A page read finished and passed InnoDB's checks; `frame` is its physical
image of page_size.physical() bytes as read from the file. */
void compare_read(const page_id_t &page_id, const page_size_t &page_size,
                  const byte *frame);

/** innodb_page_service=on: reads a page from a page server into `dst`
(page_size.physical() bytes), in place of the file read; InnoDB's checks
then run on it as on a page read from disk. Waits while no page server
answers, and stops the server if none does within a minute or one says it
lacks the page (a page server must never be worked around by reading the
file, which issue 34 removes).
@return false for a page that is not served (temporary tablespaces): read
the file */
bool read_page(const page_id_t &page_id, const page_size_t &page_size,
               void *dst);

/** A page leaves the buffer pool (buf_LRU_free_page): its newest LSN goes
into the last-written-LSN cache, which says how far a page server must have
ingested before it can answer for the page (`on`). */
void note_evicted(const buf_page_t *bpage);

/** SHOW STATUS: the Innodb_page_service_* variables (empty when off). */
int show_status(THD *thd, SHOW_VAR *var, char *buff);

}  // namespace strata::page_service
