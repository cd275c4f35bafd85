/* Strata strong sync, source side: performance_schema.strata_sync_replicas,
   one row per strong-sync dump connection, through the server's plugin
   table service. Rows are a snapshot taken under Source::m_mutex when the
   table is opened. */

#include <mysql/components/services/pfs_plugin_table_service.h>

#include "plugin/strata_sync/strata_sync_source.h"

namespace strata::sync {
namespace {

/* ---- performance_schema.strata_sync_replicas --------------------------- */

/* One row per strong-sync dump connection (a replica that stopped stays until
   its dump thread leaves, CONNECTED = 'NO'). The source's counters are status
   variables, in performance_schema.global_status. Rows are a snapshot taken
   when the table is opened. */
struct PfsRow {
  std::uint32_t server_id;
  bool connected;
  bool has_ack;
  std::string file;
  std::uint64_t pos, acks;
};
struct PfsPos {
  unsigned int index;
};
static_assert(std::is_trivially_copyable_v<PfsPos>);
struct PfsHandle {
  std::vector<PfsRow> rows;
  PfsPos pos{0}, next{0};
};

SERVICE_TYPE(registry) *pfs_reg = nullptr;
my_h_service pfs_h_table = nullptr, pfs_h_int = nullptr, pfs_h_bigint = nullptr,
             pfs_h_string = nullptr;
SERVICE_TYPE(pfs_plugin_table_v1) *pfs_table = nullptr;
SERVICE_TYPE(pfs_plugin_column_integer_v1) *pfs_int = nullptr;
SERVICE_TYPE(pfs_plugin_column_bigint_v1) *pfs_bigint = nullptr;
SERVICE_TYPE(pfs_plugin_column_string_v2) *pfs_string = nullptr;
PFS_engine_table_share_proxy pfs_share;
PFS_engine_table_share_proxy *pfs_shares[1] = {&pfs_share};

PSI_table_handle *pfs_open(PSI_pos **pos) {
  auto *h = new (std::nothrow) PfsHandle;
  if (h == nullptr) return nullptr;
  g_source->read([h](Source &s) {
    for (const auto &r : s.replicas)
      h->rows.push_back({r.second.server_id, r.second.connected,
                         r.second.has_ack, r.second.acked.file,
                         r.second.acked.pos, r.second.acks});
    return 0;
  });
  *pos = reinterpret_cast<PSI_pos *>(&h->pos);
  return reinterpret_cast<PSI_table_handle *>(h);
}

void pfs_close(PSI_table_handle *handle) {
  delete reinterpret_cast<PfsHandle *>(handle);
}

int pfs_rnd_init(PSI_table_handle *handle, bool) {
  auto *h = reinterpret_cast<PfsHandle *>(handle);
  h->pos.index = h->next.index = 0;
  return 0;
}

int pfs_rnd_next(PSI_table_handle *handle) {
  auto *h = reinterpret_cast<PfsHandle *>(handle);
  h->pos = h->next;
  if (h->pos.index >= h->rows.size()) return PFS_HA_ERR_END_OF_FILE;
  h->next.index = h->pos.index + 1;
  return 0;
}

int pfs_rnd_pos(PSI_table_handle *handle) {
  auto *h = reinterpret_cast<PfsHandle *>(handle);
  return h->pos.index < h->rows.size() ? 0 : PFS_HA_ERR_END_OF_FILE;
}

void pfs_reset_position(PSI_table_handle *handle) {
  auto *h = reinterpret_cast<PfsHandle *>(handle);
  h->pos.index = h->next.index = 0;
}

int pfs_read_column(PSI_table_handle *handle, PSI_field *field,
                    unsigned int index) {
  auto *h = reinterpret_cast<PfsHandle *>(handle);
  if (h->pos.index >= h->rows.size()) return PFS_HA_ERR_END_OF_FILE;
  const PfsRow &row = h->rows[h->pos.index];
  switch (index) {
    case 0:
      pfs_int->set_unsigned(field, PSI_uint{row.server_id, false});
      break;
    case 1:
      pfs_string->set_varchar_utf8mb4(field, row.connected ? "YES" : "NO");
      break;
    case 2:
      if (row.has_ack)
        pfs_string->set_varchar_utf8mb4(field, row.file.c_str());
      else
        pfs_string->set_varchar_utf8mb4(field, nullptr);
      break;
    case 3:
      pfs_bigint->set_unsigned(field, PSI_ubigint{row.pos, !row.has_ack});
      break;
    case 4:
      pfs_bigint->set_unsigned(field, PSI_ubigint{row.acks, false});
      break;
    default:
      break;
  }
  return 0;
}

unsigned long long pfs_row_count() {
  return g_source->read([](Source &s) { return s.replicas.size(); });
}

void pfs_release() {
  if (pfs_reg == nullptr) return;
  for (my_h_service *h : {&pfs_h_table, &pfs_h_int, &pfs_h_bigint, &pfs_h_string})
    if (*h != nullptr) pfs_reg->release(*h), *h = nullptr;
  pfs_table = nullptr;
  mysql_plugin_registry_release(pfs_reg);
  pfs_reg = nullptr;
}

}  // namespace

/* Not fatal: without the Performance Schema the status variables remain. */
void pfs_register() {
  pfs_reg = mysql_plugin_registry_acquire();
  if (pfs_reg == nullptr ||
      pfs_reg->acquire("pfs_plugin_table_v1", &pfs_h_table) ||
      pfs_reg->acquire("pfs_plugin_column_integer_v1", &pfs_h_int) ||
      pfs_reg->acquire("pfs_plugin_column_bigint_v1", &pfs_h_bigint) ||
      pfs_reg->acquire("pfs_plugin_column_string_v2", &pfs_h_string)) {
    pfs_release();
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: no Performance Schema table services; "
                    "performance_schema.strata_sync_replicas is not created");
    return;
  }
  pfs_table = reinterpret_cast<SERVICE_TYPE(pfs_plugin_table_v1) *>(pfs_h_table);
  pfs_int = reinterpret_cast<SERVICE_TYPE(pfs_plugin_column_integer_v1) *>(pfs_h_int);
  pfs_bigint = reinterpret_cast<SERVICE_TYPE(pfs_plugin_column_bigint_v1) *>(pfs_h_bigint);
  pfs_string = reinterpret_cast<SERVICE_TYPE(pfs_plugin_column_string_v2) *>(pfs_h_string);

  pfs_share.m_table_name = "strata_sync_replicas";
  pfs_share.m_table_name_length = sizeof("strata_sync_replicas") - 1;
  pfs_share.m_table_definition =
      "SERVER_ID INT UNSIGNED NOT NULL, CONNECTED VARCHAR(3) NOT NULL, "
      "ACKED_FILE VARCHAR(512), ACKED_POS BIGINT UNSIGNED, "
      "ACKS BIGINT UNSIGNED NOT NULL";
  pfs_share.m_ref_length = sizeof(PfsPos);
  pfs_share.m_acl = READONLY;
  pfs_share.delete_all_rows = nullptr;
  pfs_share.get_row_count = pfs_row_count;
  pfs_share.m_proxy_engine_table = PFS_engine_table_proxy{};
  pfs_share.m_proxy_engine_table.rnd_next = pfs_rnd_next;
  pfs_share.m_proxy_engine_table.rnd_init = pfs_rnd_init;
  pfs_share.m_proxy_engine_table.rnd_pos = pfs_rnd_pos;
  pfs_share.m_proxy_engine_table.read_column_value = pfs_read_column;
  pfs_share.m_proxy_engine_table.reset_position = pfs_reset_position;
  pfs_share.m_proxy_engine_table.open_table = pfs_open;
  pfs_share.m_proxy_engine_table.close_table = pfs_close;
  if (pfs_table->add_tables(pfs_shares, 1)) {
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: cannot add "
                    "performance_schema.strata_sync_replicas");
    pfs_release();
  }
}

void pfs_unregister() {
  if (pfs_table != nullptr) (void)pfs_table->delete_tables(pfs_shares, 1);
  pfs_release();
}

}  // namespace strata::sync
