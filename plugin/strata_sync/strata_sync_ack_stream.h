/* Strata strong sync: the acknowledgements coming back on one replica
   connection, and whose turn it is to read them.

   A TLS connection is one SSL session, which two threads must not use at
   once, and the dump thread writes events to it. Upstream's semisync lets
   its ack receiver read while the dump thread writes; we do not. Instead
   the connection has a read turn:

   - the dump thread holds it while it runs (it reads the acks that arrived
     before it builds its next packet);
   - it gives the turn away while it waits for the binary log to grow, which
     under a commit load is where it is when an ack comes back, and the
     source's ack reader thread, which polls the socket, takes the turn and
     reads the ack at once. No thread hop, no wake-up of the dump thread.

   When the reader finds the turn taken it marks the input seen (the dump
   thread reads it before its next packet, or as it gives the turn away) and
   stops watching the socket's input until the dump thread has read it. The
   dump thread marks the turn given before it unlocks and looks at the mark
   after, the reader the other way round, so that one of them always sees
   the other (sequentially consistent atomics).

   Either thread reads with AckStream, without blocking: whatever the socket
   holds, split into protocol packets that may end in a later read, maybe by
   the other thread, which is why the splitter belongs to the connection.
   No MySQL headers: the read itself is a callback. */
#ifndef STRATA_SYNC_ACK_STREAM_H
#define STRATA_SYNC_ACK_STREAM_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string_view>

#include "strata_sync_position.h"
#include "strata_sync_protocol.h"

namespace strata::sync {

/* What one non-blocking read of the connection gave. */
enum class ReadResult { kBytes, kWouldBlock, kClosed, kFailed };

class AckStream {
 public:
  /* Rounds of reads per call: a replica flooding us cannot keep a thread in
     here; what is left is read at the next call (the socket stays
     readable). */
  static constexpr int kMaxReads = 64;

  /* read(buf, capacity, &n) reads without blocking; on_ack(const Pos &) is
     called for every complete ack. Returns nullptr when the connection has
     nothing more for now, otherwise why it can carry no more acks (closed,
     COM_QUIT, a malformed packet, a read error). */
  template <class Read, class OnAck>
  const char *read_available(Read &&read, OnAck &&on_ack) {
    if (m_error != nullptr) return m_error;
    unsigned char buf[wire::PacketSplitter::kMaxFeed];
    for (int i = 0; i < kMaxReads; i++) {
      std::size_t n = 0;
      switch (read(buf, sizeof(buf), &n)) {
        case ReadResult::kWouldBlock:
          return nullptr;
        case ReadResult::kClosed:
          return m_error = kClosedWhy;
        case ReadResult::kFailed:
          return m_error = "connection error";
        case ReadResult::kBytes:
          break;
      }
      m_splitter.feed(buf, n);
      std::size_t len = 0;
      while (const unsigned char *pkt = m_splitter.next(&len)) {
        if (len == 1 && pkt[0] == wire::kComQuit) return m_error = kQuitWhy;
        char name[wire::kMaxFileNameLength + 1];
        std::uint64_t pos = 0;
        if (const char *bad = wire::parse_ack(pkt, len, name, &pos))
          return m_error = bad;
        on_ack(Pos{name, pos});
      }
      if (m_splitter.error() != nullptr) return m_error = m_splitter.error();
    }
    return nullptr;
  }

  /* The replica went away in order (not garbage on the stream). */
  static bool orderly_end(std::string_view why) {
    return why == kClosedWhy || why == kQuitWhy;
  }

  static constexpr const char *kClosedWhy = "connection closed";
  static constexpr const char *kQuitWhy = "COM_QUIT";

 private:
  wire::PacketSplitter m_splitter;
  const char *m_error = nullptr;
};

/* Whose turn it is to read a connection: see the top of this file. The
   dump thread calls take/give/close (from transmit start to stop), the ack
   reader try_take/give_back. */
class ReadTurn {
 public:
  ReadTurn() = default;
  ReadTurn(const ReadTurn &) = delete;
  ReadTurn &operator=(const ReadTurn &) = delete;

  /* Dump thread. Both may be called twice in a row (a heartbeat sent from
     inside the wait takes the turn, an error may skip the give). */
  void take() {
    if (m_dump_holds) return;
    m_given.store(false);
    m_mutex.lock();
    m_dump_holds = true;
  }
  void give() {
    if (!m_dump_holds) return;
    m_given.store(true);
    m_dump_holds = false;
    m_mutex.unlock();
  }
  /* Dump thread, when it stops: the reader never reads again (the
     connection's buffers go away after this). */
  void close() {
    take();
    m_closed = true;
    m_given.store(false);
    m_dump_holds = false;
    m_mutex.unlock();
  }

  /* Ack reader. */
  bool try_take() {
    if (!m_mutex.try_lock()) return false;
    if (!m_closed) return true;
    m_mutex.unlock();
    return false;
  }
  void give_back() { m_mutex.unlock(); }

  /* Either: the dump thread waits and the reader may take the turn. */
  bool given() const { return m_given.load(); }

  /* Input arrived that the turn's holder has not read (see the top). */
  std::atomic<bool> input_seen{false};

 private:
  std::mutex m_mutex;
  std::atomic<bool> m_given{false};
  bool m_dump_holds = false;  // the dump thread's own record
  bool m_closed = false;      // under m_mutex
};

}  // namespace strata::sync

#endif  // STRATA_SYNC_ACK_STREAM_H
