// performance_schema.innodb_log_service_nodes: one row per node of the redo
// volume, as the writer sees it (design note, section 8). Built like
// InnoDB's own innodb_redo_log_files (log/log0pfs.cc), whose acquired
// services it reuses; created and dropped next to that table (patch
// innodb-log-service-pfs), only in remote mode, so stock results keep their
// list of performance_schema tables.
#include <cstring>
#include <memory>
#include <vector>

#include <mysql/components/services/pfs_plugin_table_service.h>

#include "backend.h"
#include "pfs_nodes.h"
#include "redo.h"

#include "sql/auto_thd.h"                   /* Auto_THD */
#include "sql/dd/cache/dictionary_client.h" /* Dictionary_client */
#include "sql/pfs_priv_util.h"              /* drop_native_table_for_pfs */
#include "sql/sql_plugin.h"                 /* end_transaction */
#include "sql/table.h"                      /* PERFORMANCE_SCHEMA_DB_NAME */
#include "sql/thd_raii.h"                   /* Disable_autocommit_guard */

/* Acquired by log_pfs_acquire_services() (log/log0pfs.cc). */
extern SERVICE_TYPE_NO_CONST(pfs_plugin_table_v1) * pfs_table;
extern SERVICE_TYPE_NO_CONST(pfs_plugin_column_tiny_v1) * pfs_col_tinyint;
extern SERVICE_TYPE_NO_CONST(pfs_plugin_column_bigint_v1) * pfs_col_bigint;
extern SERVICE_TYPE_NO_CONST(pfs_plugin_column_string_v2) * pfs_col_string;

void pfs_sdi_enable();
void pfs_sdi_disable();

namespace strata::redo {

/* From redo.cc: the nodes of the open volume (empty when there is none). */
std::vector<NodeHealth> node_rows();

namespace {

bool g_created = false;

/* One open scan: a snapshot of the nodes taken at rnd_init. */
class Nodes_table {
 public:
  int rnd_init() {
    m_rows = node_rows();
    m_position = 0;
    return 0;
  }
  int rnd_next() {
    if (m_position >= m_rows.size()) return PFS_HA_ERR_END_OF_FILE;
    ++m_position;
    return 0;
  }
  int rnd_pos() {
    return m_position > 0 && m_position <= m_rows.size() ? 0 : PFS_HA_ERR_END_OF_FILE;
  }
  void reset_pos() { m_position = 0; }
  uint32_t *position_address() { return &m_position; }

  int read_column_value(PSI_field *field, uint32_t index) {
    const NodeHealth &r = m_rows[m_position - 1];
    switch (index) {
      case 0: { /* NODE_ID */
        PSI_ulonglong v{m_position, false};
        pfs_col_bigint->set_unsigned(field, v);
        break;
      }
      case 1: /* ADDRESS */
        pfs_col_string->set_varchar_utf8mb4(field, r.address.c_str());
        break;
      case 2: /* STATE */
        pfs_col_string->set_varchar_utf8mb4(
            field, r.in_quorum ? "UP" : r.connected ? "CATCHING_UP" : "DOWN");
        break;
      case 3: { /* ACKED_LSN */
        PSI_ulonglong v{r.acked_lsn, false};
        pfs_col_bigint->set_unsigned(field, v);
        break;
      }
      case 4: /* LAST_ERROR */
        pfs_col_string->set_varchar_utf8mb4(field, r.last_error.c_str());
        break;
      default:
        return 0;
    }
    return 0;
  }

 private:
  std::vector<NodeHealth> m_rows;
  uint32_t m_position{0};
};

Nodes_table *table_of(PSI_table_handle *h) { return reinterpret_cast<Nodes_table *>(h); }

class Nodes_share : public PFS_engine_table_share_proxy {
 public:
  static constexpr const char *TABLE_NAME = "innodb_log_service_nodes";

  Nodes_share() {
    m_table_name = TABLE_NAME;
    m_table_name_length = strlen(TABLE_NAME);
    m_table_definition =
        "`NODE_ID` BIGINT UNSIGNED NOT NULL"
        " COMMENT 'Position of the node in innodb_log_service_addresses (1-based).',\n"
        "`ADDRESS` VARCHAR(512) NOT NULL COMMENT 'Address of the node.',\n"
        "`STATE` VARCHAR(16) NOT NULL"
        " COMMENT 'UP: takes redo in the writer epoch; CATCHING_UP: connected, not"
        " yet sealed; DOWN: unreachable.',\n"
        "`ACKED_LSN` BIGINT UNSIGNED NOT NULL"
        " COMMENT 'Redo durable on this node, as it last reported.',\n"
        "`LAST_ERROR` VARCHAR(1024) NOT NULL COMMENT 'Last error seen from the node.'\n";
    m_ref_length = sizeof(uint32_t);
    m_acl = READONLY;
    delete_all_rows = nullptr;
    get_row_count = [] { return 1ULL * node_rows().size(); };

    auto &t = m_proxy_engine_table;
    t.open_table = [](PSI_pos **pos) {
      auto *table = new Nodes_table();
      *reinterpret_cast<uint32_t **>(pos) = table->position_address();
      return reinterpret_cast<PSI_table_handle *>(table);
    };
    t.close_table = [](PSI_table_handle *h) { delete table_of(h); };
    t.rnd_init = [](PSI_table_handle *h, bool) { return table_of(h)->rnd_init(); };
    t.rnd_next = [](PSI_table_handle *h) { return table_of(h)->rnd_next(); };
    t.rnd_pos = [](PSI_table_handle *h) { return table_of(h)->rnd_pos(); };
    t.read_column_value = [](PSI_table_handle *h, PSI_field *f, uint32_t i) {
      return table_of(h)->read_column_value(f, i);
    };
    t.reset_position = [](PSI_table_handle *h) { table_of(h)->reset_pos(); };
    t.index_init = nullptr;
    t.index_read = nullptr;
    t.index_next = nullptr;
    t.write_column_value = nullptr;
    t.write_row_values = nullptr;
    t.update_column_value = nullptr;
    t.update_row_values = nullptr;
    t.delete_row_values = nullptr;
  }
};

Nodes_share g_share;

}  // namespace

bool pfs_create_nodes_table() {
  if (!enabled() || pfs_table == nullptr) return true;
  Auto_THD auto_thd;
  THD *thd = auto_thd.thd;
  thd->variables.transaction_read_only = false;
  thd->tx_read_only = false;
  pfs_sdi_disable();
  bool ok = true;
  {
    /* A row left by a server that was killed with the table registered. */
    Disable_autocommit_guard autocommit_guard{thd};
    Disable_binlog_guard disable_binlog(thd);
    dd::cache::Dictionary_client::Auto_releaser releaser(thd->dd_client());
    ok = !drop_native_table_for_pfs(PERFORMANCE_SCHEMA_DB_NAME.str, Nodes_share::TABLE_NAME);
    end_transaction(thd, !ok);
  }
  if (ok) {
    Disable_autocommit_guard autocommit_guard{thd};
    dd::cache::Dictionary_client::Auto_releaser releaser(thd->dd_client());
    PFS_engine_table_share_proxy *shares = &g_share;
    ok = pfs_table->add_tables(&shares, 1) == 0;
    end_transaction(thd, !ok);
  }
  pfs_sdi_enable();
  g_created = ok;
  return ok;
}

void pfs_delete_nodes_table() {
  if (!g_created) return;
  PFS_engine_table_share_proxy *shares = &g_share;
  pfs_table->delete_tables(&shares, 1);
  g_created = false;
}

}  // namespace strata::redo
