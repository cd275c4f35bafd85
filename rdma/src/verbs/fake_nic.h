// FakeNic: an in-process RC fabric for the verbs connection engine.
//
// These machines have no RDMA device and no Soft-RoCE, so this is the only
// place the engine's verbs state machine runs. It is built to be at least
// as unforgiving as a real NIC about what the verbs contract leaves to the
// consumer, so that buffer-reuse and ordering bugs fail tests here instead
// of corrupting data on a NIC:
//
//   - Asynchronous: Post* only queues a work request. A NIC thread (one per
//     FakeNic) transmits it later, reading the source buffer at transmit
//     time, not at post time, and generates completions later still. Each
//     transmission and acknowledgement may be delayed (delay_probability,
//     max_delay), so posters run ahead of the "wire" and queues overtake
//     each other.
//   - Ordering as on RC hardware: the send queue of one QP transmits and
//     completes in posting order; receives are consumed in posting order;
//     everything else is free. The NIC thread picks its next step at random
//     among all QPs (transmit the head of a send queue, or acknowledge the
//     oldest transmitted request of one), so completions are reordered across
//     queue pairs and between a QP's send and receive queues (the peer may
//     handle a message before the sender sees its send completion). A CQ holds
//     completions in the order they were generated.
//   - Buffer ownership (FakeNicOptions::poison): a posted receive buffer is
//     filled with a poison pattern and holds it until its completion is
//     generated (the tail past byte_len stays poisoned); a send buffer is
//     checksummed at post and checked at transmit, then poisoned, and the
//     poison must still be intact when its completion is generated. Any
//     write by the consumer in between is recorded as a violation (and the
//     peer sees the poison or the changed bytes, as it would see whatever
//     a real NIC fetched or retransmitted).
//   - Queue limits: posting beyond the send or receive queue depth fails with
//     ENOMEM; a slot is freed when its completion is polled, as in providers.
//   - RNR: a SEND or WRITE_WITH_IMM with no receive posted at the peer waits
//     (rnr_retry_count 7 = forever, as verbs_backend.cc connects) and is
//     counted; with rnr_retry_forever off it fails IBV_WC_RNR_RETRY_EXC_ERR.
//   - Errors: a failed completion moves its QP to the error state; all its
//     outstanding work then completes with IBV_WC_WR_FLUSH_ERR, in order.
//     Disconnect (rdma_disconnect) errors the local QP at once and the peer
//     a little later (the DREQ), after the peer's already-delivered requests
//     are acknowledged. Remote writes are checked against the target's
//     registered regions and rkeys (IBV_WC_REM_ACCESS_ERR).
//   - Fault injection (FakeFault) from the seed: failed posts, failed polls,
//     completions with IBV_WC_RETRY_EXC_ERR / IBV_WC_REM_ACCESS_ERR, a QP
//     moving to the error state, the link dropping (both ends disconnected,
//     as rdma_cm tears a connection down). Whether the nth event of a QP
//     faults is a pure function of (seed, pair, side, kind, n), so a failing
//     seed replays the same faults whatever the thread timing; the NIC
//     thread's scheduling is drawn from the same seed. Two switches sit on
//     top and are not part of that function: max_faults (a budget: once
//     spent nothing fires) and SetFaultsEnabled (a test turns faults off to
//     check what survived them). Events are counted while faults are off, so
//     turning them back on does not shift which events fault.
//
// Not modelled: packet loss and retransmission timing, async events
// (ibv_get_async_event), memory windows, atomics, RDMA READ.
//
// Thread-safety: all of it behind one fabric mutex; Post* from any thread,
// Poll/ArmAndAck from the owner's I/O thread (QueuePair contract). A
// QueuePair may outlive the FakeNic that made it (the fabric is shared).
#pragma once

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "verbs/queue_pair.h"

namespace strata::rdma {

struct FakeFault {
  enum class Kind : uint8_t {
    kPostSendFails,      // ibv_post_send returns `error` (SEND and WRITE_WITH_IMM posts count)
    kPostRecvFails,      // ibv_post_recv returns `error`
    kPollFails,          // ibv_poll_cq returns a negative value
    kRetryExceeded,      // a transmitted SEND/WRITE is never acknowledged: IBV_WC_RETRY_EXC_ERR
    kRemoteAccessError,  // a transmitted WRITE_WITH_IMM is NAKed: IBV_WC_REM_ACCESS_ERR
    kQpError,            // the QP moves to the error state at a transmit (as on IBV_EVENT_QP_FATAL)
    kDisconnect,         // the link drops at a transmit: this QP errors now, its peer after the DREQ
  };
  static constexpr int kKinds = 7;
  Kind kind = Kind::kPostSendFails;
  int side = -1;            // 0: first QP of a pair, 1: second, -1: both
  int pair = -1;            // CreatePair's index, -1: every pair
  uint64_t nth = 0;         // fire at exactly the nth matching event (1-based) ...
  double probability = 0;   // ... or, when nth == 0, at each with this probability
  int error = ENOMEM;       // posts: the errno returned
};

struct FakeNicOptions {
  // Drives scheduling and every probabilistic fault. Tests print it; see
  // FakeNicSeed() in the tests for replaying one from the environment.
  uint64_t seed = 1;
  // Poison receive buffers until completion and send buffers from transmit
  // to completion, and record consumer writes to either (violations()).
  bool poison = true;
  // Each transmission and each acknowledgement is delayed with this
  // probability by up to max_delay (drawn from the seed).
  double delay_probability = 0.2;
  std::chrono::microseconds max_delay{200};
  bool rnr_retry_forever = true;
  std::vector<FakeFault> faults;
  // At most this many faults fire on this NIC (0: no limit), so a test can
  // bound the damage a high probability does to a long run.
  uint64_t max_faults = 0;
};

struct FakeNicStats {
  uint64_t posted_sends = 0;
  uint64_t posted_recvs = 0;
  uint64_t transmitted = 0;
  uint64_t acknowledged = 0;
  uint64_t rnr_waits = 0;       // transmits that found no receive posted
  uint64_t flushed = 0;         // completions with IBV_WC_WR_FLUSH_ERR
  uint64_t faults_fired = 0;
  std::array<uint64_t, FakeFault::kKinds> faults_by_kind{};  // indexed by Kind
  // Bytes registered (ibv_reg_mr) by QPs that still exist: what the
  // consumers pin right now.
  uint64_t registered_bytes = 0;
};

class FakeNic {
 public:
  explicit FakeNic(FakeNicOptions options = {});
  ~FakeNic();
  FakeNic(const FakeNic&) = delete;
  FakeNic& operator=(const FakeNic&) = delete;

  // Two connected RC queue pairs (side 0, side 1) with these queue depths.
  // Pairs are numbered 0, 1, ... in creation order.
  std::pair<std::unique_ptr<QueuePair>, std::unique_ptr<QueuePair>> CreatePair(uint32_t send_depth = 256,
                                                                                uint32_t recv_depth = 4096);

  // Deterministic schedules for tests: while held, a QP's send queue is not
  // transmitted (kTransmit) or its transmitted requests are not acknowledged
  // (kAck). Releasing lets the NIC thread go on.
  enum class Stage : uint8_t { kTransmit, kAck };
  void Hold(int pair, int side, Stage stage, bool held);
  void AddFault(const FakeFault& fault);
  // Off: no fault fires (events are still counted). On by default.
  void SetFaultsEnabled(bool enabled);

  // Consumer writes to buffers the NIC owned, as readable lines (empty when
  // the engine kept to the verbs contract).
  std::vector<std::string> violations() const;
  FakeNicStats stats() const;
  uint64_t seed() const;

  struct Fabric;

 private:
  std::shared_ptr<Fabric> fabric_;
};

}  // namespace strata::rdma
