// performance_schema.innodb_log_service_nodes (pfs_nodes.cc). Its own header,
// so the hook in log/log0pfs.cc does not make every file that includes
// redo.h recompile when this changes.
#pragma once

namespace strata::redo {

/** Created and dropped next to innodb_redo_log_files (log_pfs_create_tables /
log_pfs_delete_tables); both do nothing unless the log service is enabled.
@return false if the table could not be created */
bool pfs_create_nodes_table();
void pfs_delete_nodes_table();

}  // namespace strata::redo
