// A lock-free multi-producer, single-consumer ring of whole records, in
// record id order. Sessions (producers) never take a lock and never wait
// for each other on it; only the writer (consumer) can wait, for a producer
// that reserved a record and has not finished copying it.
//
// Why: with one mutex per record, on few CPUs a session preempted while
// holding the mutex stops every other session at its next record (lock-
// holder preemption); point selects lost a third of their throughput to it
// (docs/benchmarks/audit-overhead.md). Here a preempted session delays only
// the writer, by at most the time until the scheduler runs it again.
//
// Layout:
// - data_: `capacity` bytes. Record bytes are addressed by an absolute,
//   ever-growing byte position; the byte at position p lives at
//   data_[p % capacity]. A record may wrap from the end to the start.
// - slots_: one descriptor per record in flight, slot = id % slot count:
//   its length, an optional pointer to bytes kept outside the ring (records
//   bigger than the ring), and `seq`, which is id + 1 once the record is
//   complete (published), anything else before.
// - head_ (one 64-bit atomic): the next record id and the next free byte
//   position, packed: bit 63 closed, bits 33..62 the id modulo 2^30, bits
//   0..32 the position modulo 2^33.
// - tail_id_, tail_pos_: the first record (and its first byte) the writer
//   has not consumed yet; written by the writer only.
//
// Reserving (producers): load head_, recover the full id and position from
// the packed fields and the writer's tail (the head is never more than
// `slot count` ids and `capacity` bytes ahead of the tail, both below the
// field widths, so head - tail is the packed difference modulo the field
// size), ask the caller for the record's length for that id (it may
// depend on the id, e.g. if the id's digits are part of the bytes; AuditLog
// also takes the record's time here), check the ring has room for that many
// bytes and one slot, then compare-and-swap head_ from the loaded value to
// (id + 1, position + length). That one successful CAS gives the record its
// id and its bytes together: ids and byte ranges are handed out in the same
// order, so the bytes of id n + 1 start exactly where those of id n end,
// and the writer can write a run of consecutive ids as at most two spans.
// A failed CAS means another producer reserved first; the loop retries
// with the value the CAS returned (lock-free: every failure is someone
// else's success). A stale head (the tail has moved past it) gives a
// distance larger than the ring; it is reloaded, and could not pass the
// CAS anyway. ABA would need 2^30 records and exactly 2^33 bytes reserved
// between one producer's load and its CAS.
//
// Copying and publishing: after the CAS the producer owns its byte range
// and its slot exclusively (the writer does not touch them before the
// slot's seq says so, other producers reserve beyond them). It copies the
// record in, fills the slot, then stores seq = id + 1 with release; the
// writer loads seq with acquire, so it sees the bytes and the slot fields.
// A slot's old seq (id + 1 - slot count, or 0 after reset()) never equals
// the new one, so a record is never taken as published before it is.
//
// Consuming (one consumer at a time: AuditLog's writer thread, or a session
// draining a full buffer, both under AuditLog's file_mu_): starting at tail_id_, take slots
// while their seq is published, summing their lengths; stop at the first
// unpublished one (its producer is still copying: the writer waits for it,
// nobody else does). Write, then advance tail_pos_ and tail_id_ with
// seq_cst stores (release: producers that see the new tail also see that
// the writer has finished reading the bytes and slots it frees). So the file
// gets the records in id order, each one whole, whatever order producers
// finish copying in.
//
// Space: a producer loads the tail after the head; the tail only grows, so
// the free space it computes is never more than the real free space, and
// the CAS fails if any other record was reserved meanwhile. A full ring
// (bytes or slots) is reported to the caller, who waits or drops
// (AuditLog's strategies). A record longer than the whole ring can be
// reserved "by reference": it takes an id and a slot but no ring bytes, its
// bytes stay with the producer, which must keep them until the writer has
// consumed the record (consumed_id() > id).
//
// Closing: close() sets the closed bit with one atomic OR on head_; any CAS
// from an older head fails, so after close() returns no new record can be
// reserved, and the writer can drain up to a final head.
//
// Orderings beyond the above (for AuditLog's sleep/wake handshakes): the
// head CAS and the tail stores are seq_cst, so "producer: reserve, then
// check whether the writer sleeps" against "writer: say it sleeps, then
// check whether anything is reserved" cannot both miss (store-load,
// Dekker); the same holds for "producer: register as a waiter, then check
// the tail" against "writer: advance the tail, then check for waiters".
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

namespace strata_audit {

class RecordRing {
 public:
  // capacity: bytes, 1 .. 2^32. Slots: capacity / 128 rounded up to a
  // power of two, at least 64 and at most 2^21 (48 MiB of slots): records
  // are a few hundred bytes in every format, so slots run out about when
  // bytes do, except in buffers over 256 MiB, which hold at most 2^21
  // records.
  static constexpr size_t kMinSlots = 64;
  static constexpr size_t kMaxSlots = size_t{1} << 21;
  explicit RecordRing(size_t capacity);
  RecordRing(const RecordRing &) = delete;
  RecordRing &operator=(const RecordRing &) = delete;

  size_t capacity() const { return cap_; }
  size_t slot_count() const { return slot_mask_ + 1; }

  // Empties the ring, opens it and makes first_id the next id. Not
  // concurrent with anything else.
  void reset(uint64_t first_id);
  // No record can be reserved after this returns.
  void close();
  bool closed() const { return head_.load() & kClosedBit; }

  enum class Status { kOk, kFull, kTooBig, kClosed };
  struct Reservation {
    uint64_t id = 0;
    uint64_t pos = 0;  // absolute position of the first byte
    size_t len = 0;
    bool by_reference = false;  // bytes not in the ring (see top)
  };

  // Reserves the next id and its bytes. size_for(id) returns the record's
  // length for that id; it may be called several times (once per attempt)
  // and must have no effect that a later call does not supersede.
  // kFull: no room now (*need = the length). kTooBig: longer than the ring
  // and !allow_by_reference. kClosed: close() was called.
  template <class SizeFor>
  Status reserve(SizeFor &&size_for, bool allow_by_reference, Reservation *r,
                 size_t *need);

  // Copies part into the reserved bytes at offset (handles the wrap).
  void copy(const Reservation &r, size_t offset, std::string_view part) {
    size_t at = static_cast<size_t>((r.pos + offset) % cap_);
    const size_t first = std::min(part.size(), cap_ - at);
    std::memcpy(data_.get() + at, part.data(), first);
    if (first < part.size())
      std::memcpy(data_.get(), part.data() + first, part.size() - first);
  }
  // Publishes the record (after its bytes were copied). For a record
  // reserved by reference, bytes points to its len bytes, kept valid until
  // consumed_id() > r.id.
  void publish(const Reservation &r, const char *bytes = nullptr) {
    Slot &s = slots_[r.id & slot_mask_];
    s.len = r.len;
    s.ext = r.by_reference ? bytes : nullptr;
    // seq_cst (not just release): the producer then checks whether the
    // writer waits for this very record (AuditLog, Dekker with the writer's
    // "I wait for id" store followed by is_published()).
    s.seq.store(r.id + 1, std::memory_order_seq_cst);
  }
  bool is_published(uint64_t id) const {
    return slots_[id & slot_mask_].seq.load() == id + 1;
  }

  // True if a record of len bytes would fit now (or the ring is closed:
  // waiting for room is over).
  bool room_for(size_t len) const;

  // ---- the consumer (one thread at a time) ----

  // The published records from consumed_id() on, up to the first
  // unpublished one or the first by-reference one: records > 0 and the
  // bytes as a (wrapping at b). Or, if the first pending record is by
  // reference, records == 1 and a is its bytes.
  struct Batch {
    uint64_t records = 0;
    std::string_view a, b;
    bool by_reference = false;
  };
  Batch peek() const;
  // Frees what peek() returned.
  void consume(const Batch &b);

  uint64_t consumed_id() const { return tail_id_.load(); }
  uint64_t consumed_pos() const { return tail_pos_.load(); }
  // The next id to reserve: consumed_id() + records in flight.
  uint64_t next_id() const;
  // Bytes reserved and not yet consumed.
  uint64_t used() const;

 private:
  static constexpr int kPosBits = 33;
  static constexpr int kIdBits = 30;
  static constexpr uint64_t kPosMask = (uint64_t{1} << kPosBits) - 1;
  static constexpr uint64_t kIdMask = (uint64_t{1} << kIdBits) - 1;
  static constexpr uint64_t kClosedBit = uint64_t{1} << 63;

  static uint64_t pack(uint64_t id, uint64_t pos) {
    return ((id & kIdMask) << kPosBits) | (pos & kPosMask);
  }
  // Full id and position of packed head h relative to the tail; false if
  // h is older than the tail (stale).
  bool unpack(uint64_t h, uint64_t tail_id, uint64_t tail_pos, uint64_t *id,
              uint64_t *pos) const {
    const uint64_t did = (((h >> kPosBits) & kIdMask) - tail_id) & kIdMask;
    const uint64_t dpos = ((h & kPosMask) - tail_pos) & kPosMask;
    *id = tail_id + did;
    *pos = tail_pos + dpos;
    return did <= slot_mask_ + 1 && dpos <= cap_;
  }

  struct Slot {
    std::atomic<uint64_t> seq{0};
    size_t len = 0;
    const char *ext = nullptr;
  };

  const size_t cap_;
  size_t slot_mask_;
  std::unique_ptr<char[]> data_;
  std::unique_ptr<Slot[]> slots_;

  alignas(64) std::atomic<uint64_t> head_{0};
  alignas(64) std::atomic<uint64_t> tail_id_{0};
  std::atomic<uint64_t> tail_pos_{0};
};

template <class SizeFor>
RecordRing::Status RecordRing::reserve(SizeFor &&size_for,
                                       bool allow_by_reference,
                                       Reservation *r, size_t *need) {
  uint64_t h = head_.load(std::memory_order_acquire);
  for (;;) {
    if (h & kClosedBit) return Status::kClosed;
    const uint64_t tid = tail_id_.load(std::memory_order_acquire);
    const uint64_t tpos = tail_pos_.load(std::memory_order_acquire);
    uint64_t id, pos;
    if (!unpack(h, tid, tpos, &id, &pos)) {  // stale head
      h = head_.load(std::memory_order_acquire);
      continue;
    }
    const size_t len = size_for(id);
    const bool by_ref = len > cap_;
    if (by_ref && !allow_by_reference) return Status::kTooBig;
    const uint64_t bytes = by_ref ? 0 : len;
    if (id - tid >= slot_mask_ + 1 || pos + bytes - tpos > cap_) {
      // Full, unless the head moved meanwhile (then try again).
      const uint64_t h2 = head_.load(std::memory_order_acquire);
      if (h2 != h) {
        h = h2;
        continue;
      }
      *need = len;
      return Status::kFull;
    }
    if (head_.compare_exchange_weak(h, pack(id + 1, pos + bytes),
                                    std::memory_order_seq_cst,
                                    std::memory_order_acquire)) {
      r->id = id;
      r->pos = pos;
      r->len = len;
      r->by_reference = by_ref;
      return Status::kOk;
    }
  }
}

}  // namespace strata_audit
