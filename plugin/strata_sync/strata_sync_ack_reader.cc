/* Strata strong sync, source side: reading the replicas' acks.

   The ack reader thread (strata_ackread, one per source, never a pool
   worker) and the dump threads' reads of their own connection (TLS read
   turns, strata_sync_ack_stream.h); what an ack counts for (apply_ack:
   refused past what its connection was sent, otherwise for the ack points
   sent to that replica server, strata_sync_ack_ledger.h). Threads,
   ordering and the KILL rules: the top of strata_sync_source.cc and
   docs/design/strong-sync.md, sections 3 and 3a. */

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "plugin/strata_sync/strata_sync_source.h"

namespace strata::sync {

/* The ack reader thread. Plain-TCP replicas (Replica::reader): polls their
   sockets for input and reads every ack as it arrives (read_socket_locked),
   so an ack never waits for the dump thread, and a batch of acks read in
   one round moves the quorum once. TLS replicas: polls their sockets for
   input while their dump thread waits (the read turn is given) or while
   no input is marked seen; on input it takes the turn and reads the acks
   (read_turn_acks), or, if the dump thread has it, marks the input seen
   for the dump thread and stops watching the input until the dump thread
   has read it (it wakes this thread then, and when it gives the turn with
   input marked). Every socket is polled for hang-up, so a stopped replica
   shows at once. */
void Source::ack_reader_loop() {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;
  std::vector<std::pair<std::uint64_t, std::shared_ptr<ReplicaConnection>>>
      turn_reads;
  while (!m_stop) {
    follow_realtime_setting(tl_realtime, opt_realtime_ack_path,
                            "ack reader");
    fds.clear();
    ids.clear();
    fds.push_back({m_pipe[0], POLLIN, 0});
    ids.push_back(0);
    int timeout_ms = 1000;
    {
      std::lock_guard<std::mutex> lk(m_mutex);
      for (const auto &r : replicas)
        if (r.second.connected) {
          const ReadTurn &turn = r.second.conn->turn;
          const bool watch_input = r.second.reader ||
                                   !turn.input_seen.load() || turn.given();
          fds.push_back(
              {r.second.conn->fd,
               static_cast<short>(watch_input ? POLLIN | POLLRDHUP : POLLRDHUP),
               0});
          ids.push_back(r.first);
        }
      timeout_ms = parked_poll_timeout_ms();
    }
    const int n = poll(fds.data(), fds.size(), timeout_ms);
    {
      std::lock_guard<std::mutex> lk(m_mutex);
      check_parked_locked();
    }
    if (n < 0 && errno != EINTR) {
      LogPluginErrMsg(WARNING_LEVEL, ER_LOG_PRINTF_MSG,
                      "strata_sync: poll() in the ack reader failed: %s",
                      strerror(errno));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (n <= 0) continue;
    if (fds[0].revents) {
      char buf[64];
      while (::read(m_pipe[0], buf, sizeof(buf)) > 0) {
      }
    }
    turn_reads.clear();
    {
      std::lock_guard<std::mutex> lk(m_mutex);
      bool acked = false;
      for (std::size_t i = 1; i < fds.size(); i++) {
        if (fds[i].revents == 0) continue;
        // Registered under m_mutex: its dump thread has not left, so the fd
        // is still this replica's connection.
        auto it = replicas.find(ids[i]);
        if (it == replicas.end() || !it->second.connected) continue;
        Replica &r = it->second;
        if (r.reader) {
          const std::uint64_t before = r.acks;
          read_socket_locked(r);  // also notices EOF and errors
          acked |= r.acks != before;
          continue;
        }
        if (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) {
          lost_locked(r, AckStream::kClosedWhy);
          continue;
        }
        if (fds[i].revents & POLLIN) turn_reads.emplace_back(it->first, r.conn);
      }
      if (acked) recompute_quorum();
    }
    for (auto &[id, conn] : turn_reads) {
      if (conn->turn.try_take()) {
        read_turn_acks(id, *conn, false);
        conn->turn.give_back();
      } else {
        conn->turn.input_seen.store(true);  // the dump thread reads it
      }
    }
  }
}

/* One SSL_read of an open TLS connection that does not block. */
ReadResult ssl_read_open(ReplicaConnection &c, unsigned char *buf,
                         std::size_t capacity, std::size_t *n) {
  SSL *ssl = static_cast<SSL *>(c.vio->ssl_arg);
  if (c.poll_before_read && SSL_pending(ssl) == 0) {
    pollfd p{c.fd, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0) return ReadResult::kWouldBlock;
  }
  ERR_clear_error();
  const int got = SSL_read(ssl, buf, static_cast<int>(capacity));
  if (got > 0) {
    *n = static_cast<std::size_t>(got);
    return ReadResult::kBytes;
  }
  switch (SSL_get_error(ssl, got)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return ReadResult::kWouldBlock;
    case SSL_ERROR_ZERO_RETURN:
      return ReadResult::kClosed;
    default:
      ERR_clear_error();
      return ReadResult::kFailed;
  }
}

/* The holder of c's read turn, TLS. SSL_read goes through the Vio's own
   descriptor and SSL session, both of which a KILL of the dump thread
   tears down from the killer's thread (THD::shutdown_active_vio:
   SSL_shutdown, then the socket is shut down and closed) while the turn
   may be ours. The killer holds the dump thread's LOCK_thd_data for that,
   so we read under it and only while the Vio is open: never at the same
   time as SSL_shutdown, never from a closed (maybe already reused)
   descriptor. Lock order: the turn, then LOCK_thd_data; no thread holding
   LOCK_thd_data waits for a turn. The lock is held for one non-blocking
   read, which the killer waits for at most. */
ReadResult read_tls(ReplicaConnection &c, unsigned char *buf,
                    std::size_t capacity, std::size_t *n) {
  mysql_mutex_lock(&c.thd->LOCK_thd_data);
  const ReadResult result = c.vio->inactive
                                ? ReadResult::kClosed
                                : ssl_read_open(c, buf, capacity, n);
  mysql_mutex_unlock(&c.thd->LOCK_thd_data);
  return result;
}

/* One read of a replica connection that does not block: SSL_read on TLS
   (by the holder of the read turn), recv() on plain TCP (from our own
   descriptor: after a KILL it reads the end of the connection, never
   another one's bytes). */
ReadResult read_connection(ReplicaConnection &c, unsigned char *buf,
                           std::size_t capacity, std::size_t *n) {
  if (vio_type(c.vio) == VIO_TYPE_SSL) return read_tls(c, buf, capacity, n);
  for (;;) {
    const ssize_t got = ::recv(c.fd, buf, capacity, MSG_DONTWAIT);
    if (got > 0) {
      *n = static_cast<std::size_t>(got);
      return ReadResult::kBytes;
    }
    if (got == 0) return ReadResult::kClosed;
    if (errno == EINTR) continue;
    // EWOULDBLOCK == EAGAIN on Linux.
    return errno == EAGAIN ? ReadResult::kWouldBlock : ReadResult::kFailed;
  }
}

/* m_mutex held: replica r can carry no more acks (EOF, a read error,
   COM_QUIT, a malformed packet); it no longer counts. After garbage the
   socket is shut down, so that its dump thread ends at its next write. */
void Source::lost_locked(Replica &r, const char *why) {
  if (!r.connected) return;
  r.connected = false;
  if (AckStream::orderly_end(why))
    LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: replica server_id %u closed its "
                    "connection",
                    r.server_id);
  else
    LogPluginErrMsg(INFORMATION_LEVEL, ER_LOG_PRINTF_MSG,
                    "strata_sync: no more acks from replica server_id %u (%s)",
                    r.server_id, why);
  if (!AckStream::orderly_end(why)) ::shutdown(r.conn->fd, SHUT_RDWR);
}

/* Ack reader, m_mutex held, r.reader: reads what the socket holds without
   blocking (the dump thread never reads this socket) and applies each ack;
   the caller recomputes the quorum once. */
void Source::read_socket_locked(Replica &r) {
  ReplicaConnection &c = *r.conn;
  bool short_read = false;  // the socket is drained: spare a recv()
  const char *bad = c.stream.read_available(
      [&](unsigned char *buf, std::size_t cap, std::size_t *n) {
        if (short_read) return ReadResult::kWouldBlock;
        const ReadResult got = read_connection(c, buf, cap, n);
        short_read = got == ReadResult::kBytes && *n < cap;
        return got;
      },
      [&](const Pos &p) { (void)apply_ack(r, p); });
  if (bad != nullptr) lost_locked(r, bad);
}

/* The holder of c's read turn (its dump thread, or the ack reader that took
   it): reads what arrived without blocking and applies the acks to replica
   id, moving the quorum once. */
void Source::read_turn_acks(std::uint64_t id, ReplicaConnection &c,
                            bool by_dump_thread) {
  thread_local std::vector<Pos> got;
  got.clear();
  c.turn.input_seen.store(false);  // before the read: later input is seen
  const char *bad = c.stream.read_available(
      [&c](unsigned char *buf, std::size_t cap, std::size_t *n) {
        return read_connection(c, buf, cap, n);
      },
      [](const Pos &p) { got.push_back(p); });
  std::lock_guard<std::mutex> lk(m_mutex);
  auto it = replicas.find(id);
  if (it == replicas.end()) return;
  Replica &r = it->second;
  for (const Pos &p : got) (void)apply_ack(r, p);
  if (by_dump_thread) n_dump_thread_acks += got.size();
  if (bad != nullptr) lost_locked(r, bad);
  if (!got.empty() || bad != nullptr) recompute_quorum();
}

/* m_mutex held: one ack from replica r (does not recompute the quorum).
   An ack of a position after the last point flagged on this connection was
   not asked for: refused, counted, logged once per connection. An accepted
   one counts only for the points sent to r's server (AckLedger::confirm).
   Returns whether it was accepted. */
bool Source::apply_ack(Replica &r, const Pos &got) {
  if (!r.last_flagged || *r.last_flagged < got) {
    n_acks_refused++;
    if (!r.refusal_logged) {
      r.refusal_logged = true;
      LogPluginErrMsg(
          WARNING_LEVEL, ER_LOG_PRINTF_MSG,
          "strata_sync: refused an acknowledgement of %s:%llu from replica "
          "server_id %u: this connection sent no ack point up to there (the "
          "last it sent: %s:%llu); it acknowledges nothing "
          "(Strata_sync_source_acks_refused counts these; logged once per "
          "connection)",
          got.file.c_str(), (unsigned long long)got.pos, r.server_id,
          r.last_flagged ? r.last_flagged->file.c_str() : "(none)",
          (unsigned long long)(r.last_flagged ? r.last_flagged->pos : 0));
    }
    return false;
  }
  if (!r.has_ack || r.acked < got) r.acked = got;
  r.has_ack = true;
  r.acks++;
  n_acks++;
  (void)m_ledger.confirm(r.server, got);
  if (r.sent.empty() || got < r.sent.front().first) return true;
  const auto now = Clock::now();
  while (!r.sent.empty() && r.sent.front().first <= got) {
    rtt_hist.add(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(
            now - r.sent.front().second)
            .count()));
    r.sent.pop_front();
  }
  return true;
}

/* Dump thread holding its read turn, before it builds a packet: read the
   acks the ack reader saw arrive while this thread had the turn: acks of
   groups sent meanwhile, heartbeat acks (a heartbeat after skipped
   transactions, GTID auto-position, covers commits the replica already had
   but never acknowledged: it stopped between the relay-log write and the
   ack), and acks that must not pile up in the socket of an idle replica.
   Only once the ack reader saw input (ReadTurn::input_seen): a read per
   packet would cost more than the rest of our work per event. The read
   does not touch the connection's NET, so unflushed output stays as it
   is. Then the ack reader watches the input again. */
void Source::drain_acks() {
  ReplicaConnection *c = tl_conn;
  if (c == nullptr || !c->turn.input_seen.load()) return;
  read_turn_acks(tl_replica_id, *c, true);
  wake_ack_reader();
}

/* Dump thread, about to wait for the binary log to grow (its output
   flushed): reads what was marked seen, then gives the read turn to the
   ack reader. The ack reader does not watch the input of a socket whose
   input is marked seen while the turn is taken: wake it to watch again if
   this thread read that input, or if input was marked meanwhile. */
void Source::dump_wait_begin() {
  ReplicaConnection *c = tl_conn;
  if (c == nullptr) return;
  const bool read = c->turn.input_seen.load();
  if (read) read_turn_acks(tl_replica_id, *c, true);
  c->turn.give();
  if (read || c->turn.input_seen.load()) wake_ack_reader();
}

/* Dump thread, back from the wait (or about to send a heartbeat from it). */
void Source::dump_wait_end() {
  if (tl_conn != nullptr) tl_conn->turn.take();
}

}  // namespace strata::sync
