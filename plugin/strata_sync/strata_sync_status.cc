/* Strata strong sync, source side: the status variables
   (SHOW GLOBAL STATUS LIKE 'Strata_sync_source%'), each read under
   Source::m_mutex. What they mean: docs/design/strong-sync.md, section 7. */

#include "plugin/strata_sync/strata_sync_source.h"

namespace strata::sync {

/* ---- status ------------------------------------------------------------ */

/* Called with m_mutex held. */
std::string Source::reason() {
  char buf[512];
  const std::size_t connected = connected_count();
  if (!opt_enabled) return "strata_sync_source_enabled is OFF";
  if (connected < opt_replicas)
    snprintf(buf, sizeof(buf),
             "%zu of %u required strong-sync replicas connected", connected,
             opt_replicas);
  else if (!m_waiters.empty())
    snprintf(buf, sizeof(buf),
             "%zu commit group(s) waiting for %u replica(s) to acknowledge "
             "%s:%llu; acknowledged up to %s:%llu",
             m_waiters.size(), opt_replicas,
             m_waiters.first()->pos.file.c_str(),
             (unsigned long long)m_waiters.first()->pos.pos,
             quorum_valid ? quorum.file.c_str() : "(none)",
             (unsigned long long)(quorum_valid ? quorum.pos : 0));
  else
    return "";
  return buf;
}

/* Called with m_mutex held. */
std::string Source::state() {
  if (!opt_enabled) return "OFF";
  if (degraded) return "DEGRADED";
  if (m_waiters.empty()) return "ON";
  const Clock::time_point oldest = m_waiters.oldest()->since;
  return Clock::now() - oldest >= std::chrono::milliseconds(opt_timeout_ms)
             ? "BLOCKED"
             : "WAITING";
}

namespace {

int show_string(SHOW_VAR *var, char *buf, const std::string &s) {
  var->type = SHOW_CHAR;
  var->value = buf;
  snprintf(buf, SHOW_VAR_FUNC_BUFF_SIZE, "%s", s.c_str());
  return 0;
}

int show_number(SHOW_VAR *var, char *buf, std::uint64_t v) {
  var->type = SHOW_LONGLONG;
  var->value = buf;
  *reinterpret_cast<long long *>(buf) = static_cast<long long>(v);
  return 0;
}

/* Longer than SHOW_VAR_FUNC_BUFF_SIZE: a per-thread buffer, which SHOW
   STATUS copies before this thread calls again. */
int show_long_string(SHOW_VAR *var, char *, const std::string &s) {
  thread_local std::string keep;
  keep = s;
  var->type = SHOW_CHAR;
  var->value = const_cast<char *>(keep.c_str());
  return 0;
}

#define STRATA_SHOW(name, kind, expr)                                  \
  int show_##name(MYSQL_THD, SHOW_VAR *var, char *buf) {               \
    return show_##kind(var, buf, g_source->read([](Source &s) {        \
      return expr;                                                     \
    }));                                                               \
  }

STRATA_SHOW(state, string, s.state())
STRATA_SHOW(reason, string, s.reason())
STRATA_SHOW(replicas_connected, number, (std::uint64_t)s.connected_count())
STRATA_SHOW(acked_file, string,
            s.quorum_valid ? s.quorum.file : std::string())
STRATA_SHOW(acked_pos, number, s.quorum_valid ? s.quorum.pos : 0)
STRATA_SHOW(waits, number, s.n_waits)
STRATA_SHOW(wait_time_us, number, s.wait_time_us)
STRATA_SHOW(waiting_sessions, number, (std::uint64_t)s.waiting)
STRATA_SHOW(parked_sessions, number, (std::uint64_t)s.parked)
STRATA_SHOW(acks, number, s.n_acks)
STRATA_SHOW(acks_refused, number, s.n_acks_refused)
STRATA_SHOW(timeouts, number, s.n_timeouts)
STRATA_SHOW(degradations, number, s.n_degradations)
STRATA_SHOW(unacked_commits, number, s.n_unacked_commits)
STRATA_SHOW(wait_avg_us, number,
            s.wait_hist.count() ? s.wait_hist.sum() / s.wait_hist.count() : 0)
STRATA_SHOW(wait_p50_us, number, s.wait_hist.quantile(0.5))
STRATA_SHOW(wait_p99_us, number, s.wait_hist.quantile(0.99))
STRATA_SHOW(wait_max_us, number, s.wait_hist.max())
STRATA_SHOW(wait_histogram, long_string, s.wait_hist.to_string())
STRATA_SHOW(ack_rtts, number, s.rtt_hist.count())
STRATA_SHOW(ack_rtt_time_us, number, s.rtt_hist.sum())
STRATA_SHOW(ack_rtt_p99_us, number, s.rtt_hist.quantile(0.99))
STRATA_SHOW(ack_rtt_histogram, long_string, s.rtt_hist.to_string())
int show_realtime_threads(MYSQL_THD, SHOW_VAR *var, char *buf) {
  return show_number(var, buf,
                     static_cast<std::uint64_t>(n_realtime_threads.load()));
}
STRATA_SHOW(dump_thread_acks, number, s.n_dump_thread_acks)
STRATA_SHOW(ack_reader_replicas, number, [&s] {
  std::uint64_t n = 0;
  for (const auto &r : s.replicas)
    n += r.second.reader && r.second.connected ? 1 : 0;
  return n;
}())

}  // namespace

#define STRATA_STATUS(name) \
  {"Strata_sync_source_" #name, (char *)&show_##name, SHOW_FUNC, SHOW_SCOPE_GLOBAL}

SHOW_VAR status_vars[] = {
    STRATA_STATUS(state),        STRATA_STATUS(reason),
    STRATA_STATUS(replicas_connected),
    STRATA_STATUS(acked_file),   STRATA_STATUS(acked_pos),
    STRATA_STATUS(waits),        STRATA_STATUS(wait_time_us),
    STRATA_STATUS(waiting_sessions), STRATA_STATUS(parked_sessions),
    STRATA_STATUS(acks),         STRATA_STATUS(acks_refused),
    STRATA_STATUS(timeouts),
    STRATA_STATUS(degradations), STRATA_STATUS(unacked_commits),
    STRATA_STATUS(wait_avg_us),  STRATA_STATUS(wait_p50_us),
    STRATA_STATUS(wait_p99_us),  STRATA_STATUS(wait_max_us),
    STRATA_STATUS(wait_histogram),
    STRATA_STATUS(ack_rtts),     STRATA_STATUS(ack_rtt_time_us),
    STRATA_STATUS(ack_rtt_p99_us),
    STRATA_STATUS(ack_rtt_histogram),
    STRATA_STATUS(ack_reader_replicas),
    STRATA_STATUS(dump_thread_acks),
    STRATA_STATUS(realtime_threads),
    {nullptr, nullptr, SHOW_LONG, SHOW_SCOPE_GLOBAL},
};

}  // namespace strata::sync
