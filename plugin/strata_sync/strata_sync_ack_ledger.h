/* Strata strong sync: which replica servers hold which commit groups, and
   the quorum.

   Pure logic, no MySQL headers (tests/ack_ledger_test.cc). The source keeps
   one AckLedger under its mutex. See docs/design/strong-sync.md, section 3a.

   Why: the replica must not decide what counts as acknowledged. A dump's
   starting position and an ack are the replica's claims; taken alone, a
   replica that connects at the binary log's end, or one forged ack, would
   release every waiting commit. So a claim counts only for what the source
   itself sent to that replica:

   - The outstanding ack points (ends of commit groups that no quorum
     covers yet) are the only positions commits wait for. When a dump
     thread sends the event that ends at one, it records the point as sent
     to its replica server (sent()).
   - A server holds a point once the point was sent to it and it then
     claimed a position at or past it (confirm()): an ack, or the start of a
     later dump of the same server (a replica whose connection broke after
     it wrote the group to its relay log, before its ack arrived, reconnects
     after the group and is never sent it again; without this it would
     never be counted for it). A point never sent to a server is never held
     by it, whatever it claims.
   - With GTID auto-positioning a reconnecting replica claims transactions,
     not a position: the GTID set in its dump request. The dump thread that
     sends a point records which transaction ends there (its GTID, as
     text); a server holds a point sent to it whose transaction it claims
     (confirm_transactions()). Such a claim is how an ack lost with a broken
     connection still counts on an idle source: the new dump skips what the
     replica has, so the point is never sent, nor acked, again.
   - Servers, not connections: a server is its UUID (the server id where a
     replica sends none); servers that share a server id are counted once
     too (group_servers), so two connections of one replica, e.g. while a
     reconnecting replica's old dump thread has not left yet, are one vote.
     Merging too much only makes commits wait longer.
   - The quorum walks the outstanding points in binary log order and stops
     at the first one that fewer than N servers hold (advance()); every
     point up to where it stopped is covered. Work per call: the points it
     passes plus one, each a look at its holders; never the waiters.

   Which acks a connection may send at all (not past what it was sent) is
   checked by the caller per connection. Thread-safety: none here; the
   caller serialises (Source::m_mutex). */
#ifndef STRATA_SYNC_ACK_LEDGER_H
#define STRATA_SYNC_ACK_LEDGER_H

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "strata_sync_position.h"

namespace strata::sync {

/** Who a replica connection says it is: its server UUID (may be empty) and
    server id. */
struct ReplicaIdentity {
  std::string uuid;
  std::uint32_t server_id = 0;
};

/** Groups identities into servers: those that share a non-empty UUID or a
    server id are one server (transitively). Returns, for each identity, the
    index of its server's first identity. */
inline std::vector<std::size_t> group_servers(
    const std::vector<const ReplicaIdentity *> &ids) {
  std::vector<std::size_t> root(ids.size());
  for (std::size_t i = 0; i < ids.size(); i++) root[i] = i;
  const auto find = [&root](std::size_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (std::size_t i = 0; i < ids.size(); i++)
    for (std::size_t j = 0; j < i; j++) {
      const bool same =
          (!ids[i]->uuid.empty() && ids[i]->uuid == ids[j]->uuid) ||
          ids[i]->server_id == ids[j]->server_id;
      if (!same) continue;
      const std::size_t a = find(i), b = find(j);
      if (a != b) root[std::max(a, b)] = std::min(a, b);
    }
  for (std::size_t i = 0; i < ids.size(); i++) root[i] = find(i);
  return root;
}

/** Number of distinct servers among the identities (group_servers). */
inline std::size_t count_servers(
    const std::vector<const ReplicaIdentity *> &ids) {
  const std::vector<std::size_t> server = group_servers(ids);
  std::size_t n = 0;
  for (std::size_t i = 0; i < server.size(); i++) n += server[i] == i;
  return n;
}

class AckLedger {
 public:
  using ServerId = std::size_t;

  /** The server an identity belongs to (added on first sight): by UUID, or
      by server id when there is no UUID. Server ids are stable until
      clear(). */
  ServerId server(const ReplicaIdentity &id) {
    for (ServerId s = 0; s < m_servers.size(); s++) {
      const ReplicaIdentity &known = m_servers[s].identity;
      const bool same = id.uuid.empty() ? known.uuid.empty() &&
                                              known.server_id == id.server_id
                                        : known.uuid == id.uuid;
      if (same)
        return s;
    }
    m_servers.push_back(Server{id, {}});
    return m_servers.size() - 1;
  }

  const ReplicaIdentity &identity(ServerId s) const {
    return m_servers[s].identity;
  }

  /** A commit group ended at p (binary log order: p is after every point
      added before). */
  void add_point(const Pos &p) { m_points.insert(p); }

  /** The outstanding points, in binary log order. */
  const std::set<Pos> &points() const { return m_points; }

  /** Drops the oldest outstanding point (a bound on memory; a commit still
      waiting for it is covered when the quorum passes a later point). */
  void drop_oldest() {
    if (m_points.empty()) return;
    const Pos p = *m_points.begin();
    m_points.erase(m_points.begin());
    m_holders.erase(p);
    m_transactions.erase(p);
    for (Server &s : m_servers) s.sent.erase(p);
  }

  /** The event that ends at outstanding point p is sent to server s.
      `transaction`, unless empty, names the transaction that ends at p (its
      GTID); the first name given for p is kept. */
  void sent(ServerId s, const Pos &p, const std::string &transaction = {}) {
    if (m_points.count(p) == 0) return;
    m_servers[s].sent.insert(p);
    if (!transaction.empty()) m_transactions.emplace(p, transaction);
  }

  /** The name of the transaction that ends at outstanding point p, or ""
      if no sent() named it. */
  std::string transaction(const Pos &p) const {
    auto it = m_transactions.find(p);
    return it == m_transactions.end() ? std::string() : it->second;
  }

  /** Server s claims to hold everything up to a: it holds each outstanding
      point up to a that was sent to it. Returns how many it newly holds. */
  std::size_t confirm(ServerId s, const Pos &a) {
    std::set<Pos> &sent = m_servers[s].sent;
    std::size_t n = 0;
    while (!sent.empty() && *sent.begin() <= a) {
      std::vector<ServerId> &holders = m_holders[*sent.begin()];
      if (std::find(holders.begin(), holders.end(), s) == holders.end())
        holders.push_back(s);
      sent.erase(sent.begin());
      n++;
    }
    return n;
  }

  /** Server s claims to hold every transaction for which claims(name) is
      true (a replica's GTID set). It holds each outstanding point sent to
      it whose transaction it claims. Returns how many it newly holds; adds
      to *overreaching (optional) the outstanding points it claims by their
      transaction that were never sent to it (those count for nothing).
      Points whose transaction is not known are not looked at. Work: the
      outstanding points with a known transaction, a claims() call each. */
  template <class Claims>
  std::size_t confirm_transactions(ServerId s, const Claims &claims,
                                   std::vector<Pos> *overreaching = nullptr) {
    std::set<Pos> &sent = m_servers[s].sent;
    std::size_t n = 0;
    for (const auto &[p, transaction] : m_transactions) {
      if (!claims(transaction)) continue;
      auto it = sent.find(p);
      if (it == sent.end()) {
        if (overreaching != nullptr && !holds(s, p))
          overreaching->push_back(p);
        continue;
      }
      std::vector<ServerId> &holders = m_holders[p];
      if (std::find(holders.begin(), holders.end(), s) == holders.end())
        holders.push_back(s);
      sent.erase(it);
      n++;
    }
    return n;
  }

  /** True if server s holds outstanding point p. */
  bool holds(ServerId s, const Pos &p) const {
    auto it = m_holders.find(p);
    return it != m_holders.end() &&
           std::find(it->second.begin(), it->second.end(), s) !=
               it->second.end();
  }

  /** Walks the outstanding points from the first and stops at the first
      that fewer than n distinct servers hold; drops the points passed and
      returns the last of them, or nothing if none was passed. `visited`
      (optional) counts the points looked at. */
  std::optional<Pos> advance(std::size_t n, std::size_t *visited = nullptr) {
    if (n == 0) return std::nullopt;
    std::vector<const ReplicaIdentity *> ids;
    for (const Server &s : m_servers) ids.push_back(&s.identity);
    const std::vector<std::size_t> group = group_servers(ids);
    std::optional<Pos> passed;
    std::vector<std::size_t> seen;
    for (const Pos &p : m_points) {
      if (visited != nullptr) ++*visited;
      auto it = m_holders.find(p);
      if (it == m_holders.end()) break;
      seen.clear();
      for (ServerId s : it->second)
        if (std::find(seen.begin(), seen.end(), group[s]) == seen.end())
          seen.push_back(group[s]);
      if (seen.size() < n) break;
      passed = p;
    }
    if (passed) erase_through(*passed);
    return passed;
  }

  /** Forgets every point (strong sync disabled: no commit waits). */
  void clear_points() {
    m_points.clear();
    m_holders.clear();
    m_transactions.clear();
    for (Server &s : m_servers) s.sent.clear();
  }

  /** Positions start over (RESET BINARY LOGS AND GTIDS). */
  void clear() { *this = AckLedger(); }

 private:
  struct Server {
    ReplicaIdentity identity;
    std::set<Pos> sent;  // outstanding points sent to it, not held yet
  };

  void erase_through(const Pos &q) {
    m_points.erase(m_points.begin(), m_points.upper_bound(q));
    m_holders.erase(m_holders.begin(), m_holders.upper_bound(q));
    m_transactions.erase(m_transactions.begin(),
                         m_transactions.upper_bound(q));
    for (Server &s : m_servers)
      s.sent.erase(s.sent.begin(), s.sent.upper_bound(q));
  }

  std::set<Pos> m_points;
  std::map<Pos, std::vector<ServerId>> m_holders;
  /* The transaction that ends at an outstanding point, once a dump thread
     that sent it named it. */
  std::map<Pos, std::string> m_transactions;
  std::vector<Server> m_servers;
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_ACK_LEDGER_H
