// Named crash points on the redo path (design note, section 9), for tests
// that must kill mysqld at an exact step of a commit: SET GLOBAL
// innodb_log_service_debug_fault = 'redo_after_append' makes the next pass
// through that point log "STRATA_FAULT <name> ..." and _exit(3). They work in
// release builds (the fork is RelWithDebInfo, where DBUG_EXECUTE_IF is
// compiled out) and only with the log service on. A header of its own so
// that sysvars.ic and redo.cc share it without touching redo.h, which every
// hooked upstream file includes.
//
// A point that exits the server is a denial of service in the hands of any
// account that can set it (the session variable needs no privilege at all).
// So they are armed only on a server started with the read-only, test-only
// innodb_log_service_test_faults = ON: without it, SET of either variable is
// refused with an error that names the option, and a value given on the
// command line never fires.
#pragma once

class THD;

namespace strata::redo {

// In the order a commit's redo passes them; the names are the sysvar's values.
enum Fault : unsigned long {
  kFaultOff = 0,
  kFaultBeforeAppend,           // write_blocks: before the volume gets the bytes
  kFaultAfterAppend,            // write_blocks: after handing them over, before write_lsn moves
  kFaultDurableBeforeFlushed,   // wait_durable returned, flushed_to_disk_lsn not yet published
};

#define STRATA_REDO_FAULT_NAMES \
  "off", "redo_before_append", "redo_after_append", "redo_durable_before_flushed_lsn"

/* innodb_log_service_debug_fault (sysvars.ic). */
extern unsigned long cfg_debug_fault;
/* innodb_log_service_test_faults (sysvars.ic, read-only): arms the points. */
extern bool cfg_test_faults;

/* The committing session's own point (H15, trx0trx.cc): with
innodb_log_service_debug_crash_after_commit ON in that session, its commit
exits the server right after its redo became durable and before the client
hears of it; background transactions never fire it. */
void commit_fault_point(THD *thd);
/* That session variable (defined in sysvars.ic, where THDVAR is usable). */
bool session_crash_after_commit(THD *thd);

}  // namespace strata::redo
