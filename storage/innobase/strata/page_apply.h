// strata: the page-apply helper's hooks in upstream InnoDB files
// (docs/design/page-server.md, sections 5 and 11). When mysqld runs as
// `mysqld --strata-page-apply` (page_apply.cc) there is no data directory:
//   - recovery's file operations are parsed, never carried out;
//   - every tablespace is "known" to recovery's scanner;
//   - a page read returns the base image the page server handed over.
// In a normal mysqld active() is false and every hook is a no-op.
#ifndef STRATA_PAGE_APPLY_H
#define STRATA_PAGE_APPLY_H

#include "buf0types.h"
#include "db0err.h"
#include "log0types.h"
#include "mtr0types.h"
#include "page0size.h"
#include "univ.i"

namespace strata {
namespace page_apply {

extern bool g_active;

/** True in the page-apply helper process only. */
inline bool active() { return g_active; }

/** Copies the staged base image of page_id (the physical page size) to dst.
@return DB_SUCCESS, or DB_ERROR when page_id is not the staged page */
dberr_t read_staged(const page_id_t &page_id, const page_size_t &page_size,
                    void *dst);

/** Notes a tablespace operation found by recovery's scanner in a complete
mini-transaction (MLOG_FILE_CREATE, _DELETE, _RENAME, _EXTEND); other record
types are ignored. The helper reports them with the PARSE answer.
@param[in]  type     record type
@param[in]  space_id tablespace
@param[in]  body     record body (after type, space and page)
@param[in]  end      end of the record
@param[in]  end_lsn  end LSN of its mini-transaction */
void file_event(mlog_id_t type, space_id_t space_id, const byte *body,
                const byte *end, lsn_t end_lsn);

}  // namespace page_apply
}  // namespace strata

#endif
