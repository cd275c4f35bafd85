/* Strata strong sync, replica side: plugin `strata_sync_replica`.

   Runs in the replica's receiver (I/O) thread of each channel; no threads of
   its own. Design: docs/design/strong-sync.md; wire format:
   strata_sync_protocol.h.

   - before_request_transmit: if strata_sync_replica_enabled, check that the
     source has strata_sync_source (its enabled variable exists), then set
     @strata_sync_replica on the source connection. From then on every event
     packet carries the 2-byte header.
   - after_read_event: check and strip the header; remember the ack flag.
   - after_queue_event: the event is in the relay log (written and flushed to
     the OS; synced as sync_relay_log says); send the ack (source file, end
     position of the flagged event) on the same connection. Only flagged
     events are acknowledged, never heartbeats: the source counts an ack only
     for the ack points it sent on this connection and refuses a position
     past the last one (docs/design/strong-sync.md, section 3a). Acks are
     coalesced: if the next
     packet is already in the connection's read buffer (read by the same
     recv(), so no system call to find out), the ack waits for it and one
     ack for the later position covers both, up to kMaxDeferredEvents events
     or kMaxDeferredBytes bytes. So a burst of commit groups read at once
     costs one ack (one write here, one wake-up of the source's ack reader)
     and delays no ack behind a packet that has not arrived.
   - With strata_sync_replica_realtime_receiver (ON by default) a receiver
     streaming with strong sync runs as a SCHED_RR thread until it stops or
     reconnects (strata_sync_realtime.h says why): on busy CPUs it would
     otherwise wait for a CPU before every acknowledgement.
   Per-channel state is thread-local: one receiver thread per channel, from
   start to stop. A send failure is logged and not fatal: the source sees the
   connection drop or times out per its policy. */

#include <mysql.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>

#include <mysql/components/services/log_builtins.h>
#include <mysql/plugin.h>
#include "my_inttypes.h"
#include "mysql/binlog/event/binlog_event.h"
#include "mysqld_error.h"
#include "plugin/strata_sync/strata_sync_protocol.h"
#include "plugin/strata_sync/strata_sync_realtime.h"
#include "sql/replication.h"
#include "violite.h"

static SERVICE_TYPE(registry) *reg_srv = nullptr;
SERVICE_TYPE(log_builtins) *log_bi = nullptr;
SERVICE_TYPE(log_builtins_string) *log_bs = nullptr;

namespace strata::sync {
namespace {

namespace wire = strata::sync::wire;

static_assert(wire::kHeartbeatType == mysql::binlog::event::HEARTBEAT_LOG_EVENT);
static_assert(wire::kHeartbeatV2Type ==
              mysql::binlog::event::HEARTBEAT_LOG_EVENT_V2);
static_assert(wire::kEventTypeOffset == EVENT_TYPE_OFFSET);

bool opt_enabled = false;
bool opt_coalesce = true;
bool opt_realtime_receiver = true;
std::atomic<long long> n_realtime_receivers{0};
thread_local ThreadPriority tl_priority;
std::atomic<long long> n_acks_sent{0};
std::atomic<long long> n_acks_coalesced{0};  // acks folded into a later one
/* Acks that could not be written, almost always because the connection
   went away with events still in this side's buffer (a KILL of the dump
   thread, a source restart): each of those events fails its ack. Counted
   here; only a connection's first failure is logged. */
std::atomic<long long> n_acks_failed{0};
/* Time from reading a flagged event to sending its ack (relay-log write,
   any fsync sync_relay_log asks for, coalescing): the replica's share of
   the source's ack round trip. */
std::atomic<long long> n_ack_latency_us{0}, max_ack_latency_us{0};
thread_local std::chrono::steady_clock::time_point tl_flag_read;
thread_local bool tl_flag_timed = false;
std::atomic<long long> n_channels{0};  // channels streaming with strong sync

thread_local bool tl_active = false;     // this channel uses strong sync
thread_local bool tl_need_ack = false;   // the last event read asked for one
thread_local bool tl_ack_due = false;    // an ack is owed (deferred)
/* The position an owed ack names: the end of the last flagged event
   queued (a coalesced ack names the last of the flagged events it covers).
   Never a heartbeat's position or that of an event the source did not flag:
   the source refuses an ack past the last point it flagged. */
thread_local char tl_due_file[wire::kMaxFileNameLength + 1];
thread_local unsigned long long tl_due_pos = 0;
thread_local unsigned tl_deferred_events = 0;
thread_local unsigned long tl_deferred_bytes = 0;
thread_local bool tl_ack_failure_logged = false;  // on this connection

constexpr unsigned kMaxDeferredEvents = 64;
constexpr unsigned long kMaxDeferredBytes = 256 * 1024;

/* 1: the source has strata_sync_source; 0: it has not; -1: query failed. */
int source_has_plugin(MYSQL *mysql) {
  const char *query = "SELECT @@global.strata_sync_source_enabled";
  if (mysql_real_query(mysql, query, static_cast<unsigned long>(strlen(query)))) {
    if (mysql_errno(mysql) == ER_UNKNOWN_SYSTEM_VARIABLE) return 0;
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: '%s' failed on the source: %u %s", query,
                    mysql_errno(mysql), mysql_error(mysql));
    return -1;
  }
  mysql_free_result(mysql_store_result(mysql));
  return 1;
}

/* The receiver's scheduling: realtime while it streams with strong sync
   (if the setting says so), its old policy otherwise. */
void set_receiver_priority(bool realtime, const char *channel) {
  const bool was = tl_priority.realtime();
  const int err = tl_priority.set_realtime(realtime);
  if (tl_priority.realtime() != was)
    n_realtime_receivers += tl_priority.realtime() ? 1 : -1;
  if (err != 0)
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: channel '%s': cannot %s the receiver "
                    "thread: %s%s",
                    channel,
                    realtime ? "give realtime scheduling (SCHED_RR) to"
                             : "restore normal scheduling of",
                    strerror(err),
                    realtime ? "; it runs at normal priority "
                               "(strata_sync_replica_realtime_receiver needs "
                               "CAP_SYS_NICE or RLIMIT_RTPRIO >= 1)"
                             : "");
}

void deactivate() {
  if (tl_priority.realtime()) set_receiver_priority(false, "");
  if (tl_active) n_channels--;
  tl_active = false;
  tl_need_ack = false;
  tl_flag_timed = false;
  tl_ack_due = false;
  tl_deferred_events = 0;
  tl_deferred_bytes = 0;
  tl_ack_failure_logged = false;
}

int on_thread_start(Binlog_relay_IO_param *) {
  deactivate();
  return 0;
}

int on_thread_stop(Binlog_relay_IO_param *) {
  deactivate();
  return 0;
}

int on_applier(Binlog_relay_IO_param *) { return 0; }
int on_applier_stop(Binlog_relay_IO_param *, bool) { return 0; }
int on_applier_log_event(Binlog_relay_IO_param *, Trans_param *, int &) {
  return 0;
}

int on_request_transmit(Binlog_relay_IO_param *param, uint32) {
  deactivate();  // a reconnect starts over
  if (!opt_enabled) return 0;
  const int has = source_has_plugin(param->mysql);
  if (has < 0) return 1;
  if (has == 0) {
    LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: source %s:%u has no strata_sync_source "
                    "plugin; channel '%s' replicates asynchronously",
                    param->host, param->port, param->channel_name);
    return 0;
  }
  char query[64];
  snprintf(query, sizeof(query), "SET @%s = %u", wire::kHandshakeVariable,
           static_cast<unsigned>(wire::kProtocolVersion));
  if (mysql_real_query(param->mysql, query,
                       static_cast<unsigned long>(strlen(query)))) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: '%s' failed on the source: %u %s", query,
                    mysql_errno(param->mysql), mysql_error(param->mysql));
    return 1;
  }
  mysql_free_result(mysql_store_result(param->mysql));
  tl_active = true;
  n_channels++;
  if (opt_realtime_receiver)
    set_receiver_priority(true, param->channel_name);
  return 0;
}

int on_after_read_event(Binlog_relay_IO_param *param, const char *packet,
                        unsigned long len, const char **event_buf,
                        unsigned long *event_len) {
  if (!tl_active) return 0;
  const auto *p = reinterpret_cast<const unsigned char *>(packet);
  if (len < wire::kEventHeaderSize || p[0] != wire::kEventMagic) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: channel '%s': event packet from the source "
                    "without the strong-sync header (is strata_sync_source "
                    "still installed there?)",
                    param->channel_name);
    return 1;
  }
  tl_need_ack = (p[1] & wire::kFlagAckRequested) != 0;
  if (tl_need_ack && !tl_flag_timed) {
    tl_flag_read = std::chrono::steady_clock::now();
    tl_flag_timed = true;
  }
  *event_buf = packet + wire::kEventHeaderSize;
  *event_len = len - wire::kEventHeaderSize;
  return 0;
}

int on_after_queue_event(Binlog_relay_IO_param *param, const char *,
                         unsigned long event_len, uint32) {
  if (!tl_active) return 0;
  if (tl_need_ack) {
    tl_need_ack = false;
    if (tl_ack_due) n_acks_coalesced++;
    tl_ack_due = true;
    snprintf(tl_due_file, sizeof(tl_due_file), "%s", param->master_log_name);
    tl_due_pos = param->master_log_pos;
  }
  if (!tl_ack_due) return 0;
  Vio *vio = param->mysql->net.vio;
  if (opt_coalesce && vio != nullptr && vio->has_data(vio) &&
      ++tl_deferred_events < kMaxDeferredEvents &&
      (tl_deferred_bytes += event_len) < kMaxDeferredBytes)
    return 0;  // the next packet is here already: ack after it
  tl_ack_due = false;
  tl_deferred_events = 0;
  tl_deferred_bytes = 0;
  unsigned char buf[wire::kAckMaxSize];
  const std::size_t n = wire::encode_ack(buf, tl_due_file, tl_due_pos);
  if (n == 0) {
    LogPluginErrMsg(ERROR_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: channel '%s': bad source log name '%s'",
                    param->channel_name, tl_due_file);
    return 0;
  }
  /* Out of band: the ack goes with sequence number 0 and the event stream
     keeps its own numbering. The source does not read every ack at once
     (acks may wait in its socket a while), so acks must not move the sequence
     number the next event packet is checked against (a mismatch reads as
     "lost connection" and the receiver reconnects for ever). */
  NET *net = &param->mysql->net;
  const unsigned int stream_pkt_nr = net->pkt_nr;
  net_clear(net, false);
  const bool failed = my_net_write(net, buf, n) || net_flush(net);
  net->pkt_nr = stream_pkt_nr;
  if (failed) {
    n_acks_failed++;
    if (!tl_ack_failure_logged)
      LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_sync: channel '%s': sending the ack for "
                      "%s:%llu failed (error %u); later failures on this "
                      "connection are only counted "
                      "(Strata_sync_replica_acks_failed)",
                      param->channel_name, tl_due_file, tl_due_pos,
                      net->last_errno);
    tl_ack_failure_logged = true;
    net->last_errno = 0;
    return 0;
  }
  n_acks_sent++;
  if (tl_flag_timed) {
    tl_flag_timed = false;
    const long long us =
        std::chrono::duration_cast<std::chrono::microseconds>(
            std::chrono::steady_clock::now() - tl_flag_read)
            .count();
    n_ack_latency_us += us;
    if (us > max_ack_latency_us.load()) max_ack_latency_us = us;
  }
  return 0;
}

int on_after_reset_replica(Binlog_relay_IO_param *) { return 0; }

Binlog_relay_IO_observer relay_io_observer = {
    sizeof(Binlog_relay_IO_observer),
    on_thread_start,
    on_thread_stop,
    on_applier,
    on_applier_stop,
    on_request_transmit,
    on_after_read_event,
    on_after_queue_event,
    on_after_reset_replica,
    on_applier_log_event,
};

MYSQL_SYSVAR_BOOL(enabled, opt_enabled, PLUGIN_VAR_OPCMDARG,
                  "Strong sync on this replica: acknowledge the source's "
                  "transactions once they are in the relay log. Takes effect "
                  "when the receiver thread (re)connects.",
                  nullptr, nullptr, false);

MYSQL_SYSVAR_BOOL(coalesce_acks, opt_coalesce, PLUGIN_VAR_OPCMDARG,
                  "When the next event is already received, acknowledge "
                  "after it: one ack covers both (ON, the default).",
                  nullptr, nullptr, true);

MYSQL_SYSVAR_BOOL(realtime_receiver, opt_realtime_receiver,
                  PLUGIN_VAR_OPCMDARG,
                  "Run a receiver thread that streams with strong sync with "
                  "the realtime policy SCHED_RR, so that busy CPUs do not "
                  "delay its acknowledgements (ON, the default; needs "
                  "CAP_SYS_NICE or RLIMIT_RTPRIO >= 1, otherwise a warning "
                  "is logged and it runs at normal priority). Takes effect "
                  "when the receiver thread (re)connects.",
                  nullptr, nullptr, true);

SYS_VAR *system_vars[] = {MYSQL_SYSVAR(enabled), MYSQL_SYSVAR(coalesce_acks),
                          MYSQL_SYSVAR(realtime_receiver), nullptr};

int show_realtime_receivers(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = n_realtime_receivers.load();
  return 0;
}

int show_state(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_CHAR;
  var->value = buf;
  snprintf(buf, SHOW_VAR_FUNC_BUFF_SIZE, "%s",
           n_channels.load() > 0 ? "ON" : "OFF");
  return 0;
}

int show_acks_sent(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = n_acks_sent.load();
  return 0;
}

int show_acks_coalesced(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = n_acks_coalesced.load();
  return 0;
}

int show_acks_failed(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = n_acks_failed.load();
  return 0;
}

int show_ack_latency_us(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = n_ack_latency_us.load();
  return 0;
}

int show_ack_latency_max_us(MYSQL_THD, SHOW_VAR *var, char *buf) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = max_ack_latency_us.load();
  return 0;
}

SHOW_VAR status_vars[] = {
    {"Strata_sync_replica_state", (char *)&show_state, SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_acks_sent", (char *)&show_acks_sent, SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_acks_coalesced", (char *)&show_acks_coalesced,
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_acks_failed", (char *)&show_acks_failed, SHOW_FUNC,
     SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_ack_latency_us", (char *)&show_ack_latency_us,
     SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_ack_latency_max_us",
     (char *)&show_ack_latency_max_us, SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {"Strata_sync_replica_realtime_receivers",
     (char *)&show_realtime_receivers, SHOW_FUNC, SHOW_SCOPE_GLOBAL},
    {nullptr, nullptr, SHOW_LONG, SHOW_SCOPE_GLOBAL},
};

int plugin_init(void *p) {
  if (init_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs)) return 1;
  if (register_binlog_relay_io_observer(&relay_io_observer, p)) {
    deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
    return 1;
  }
  return 0;
}

int plugin_check_uninstall(void *) {
  if (n_channels.load() == 0) return 0;
  my_error(ER_PLUGIN_CANNOT_BE_UNINSTALLED, MYF(0), "strata_sync_replica",
           "Stop the replica's receiver threads first.");
  return 1;
}

int plugin_deinit(void *p) {
  unregister_binlog_relay_io_observer(&relay_io_observer, p);
  deinit_logging_service_for_plugin(&reg_srv, &log_bi, &log_bs);
  return 0;
}

Mysql_replication descriptor = {MYSQL_REPLICATION_INTERFACE_VERSION};

}  // namespace
}  // namespace strata::sync

mysql_declare_plugin(strata_sync_replica){
    MYSQL_REPLICATION_PLUGIN,
    &strata::sync::descriptor,
    "strata_sync_replica",
    "Strata",
    "Strong sync, replica side: acknowledges transactions once they are in "
    "the relay log.",
    PLUGIN_LICENSE_GPL,
    strata::sync::plugin_init,
    strata::sync::plugin_check_uninstall,
    strata::sync::plugin_deinit,
    0x0100,
    strata::sync::status_vars,
    strata::sync::system_vars,
    nullptr,
    0,
} mysql_declare_plugin_end;
