// FakeVerbsFabric: for tests only. An in-process RDMA fabric on the fake NIC
// (src/verbs/fake_nic.h) that every Transport created with
// TransportOptions::fake_verbs_for_tests pointing at it shares. Their
// rdma:// (and auto://) listeners and connections then run the real verbs
// engine (VerbsConnection: registration, receive slots, SEND, RDMA WRITE
// with immediate into the peer's ring, credits, handshake, admission) over
// the fake NIC, so nodes and clients of a cluster can talk verbs in one
// process on a machine without an RDMA device.
//
// Addresses: a fabric has its own port space; the host part is kept for
// names and logs but not resolved. Listen on port 0 picks a free fabric port
// (from 40000 up). Connect to a port nobody listens on fails with
// kUnavailable ("connection refused"), as an RDMA connect request that is
// rejected.
//
// Why a public type at all: logservice tests build their Transports through
// the log service's own options, outside rdma/src. Why it cannot switch a
// production process to the fake by accident: only a caller that creates a
// fabric (this header) and stores it in the options gets one; nothing parses
// it from a configuration; and such a Transport logs a warning saying so.
//
// Faults (FakeVerbsFaults, off by default): the NIC's seeded fault
// injection (src/verbs/fake_nic.h, FakeFault) with one probability per
// kind. Each surfaces in the verbs engine as the connection's error naming
// the verb ("ibv_post_send failed: ENOMEM ...") or the completion status
// ("completion error IBV_WC_RETRY_EXC_ERR ... on wr_id 0x... (SEND of DATA
// frame 7)", kClosed "... IBV_WC_WR_FLUSH_ERR" on the peer of a dropped
// link); what the Transport's user sees is that connection closing with
// that status, or a connect that fails. Whether the nth event of one side
// of one queue pair faults depends only on (seed, pair, side, kind, n);
// pairs are numbered in the order connections are made, which the callers'
// threads decide, so a seed replays its faults exactly only where the
// connection order repeats.
//
// Thread-safety: every method may be called from any thread. The fabric
// (and its NIC thread) lives as long as the last Transport or caller that
// holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::rdma {

// Per-event probabilities (0: never). "Per transmit" counts every SEND or
// RDMA WRITE the NIC puts on the wire; polls are far more frequent (and
// their number depends on timing: busy polling), so poll_fails wants a
// much smaller value than the rest.
struct FakeVerbsFaults {
  double post_send_fails = 0;      // ibv_post_send returns ENOMEM (per SEND / WRITE post)
  double post_recv_fails = 0;      // ibv_post_recv returns ENOMEM (per receive post)
  double poll_fails = 0;           // ibv_poll_cq returns -1 (per poll)
  double error_completion = 0;     // a transmitted request is never acknowledged:
                                   // IBV_WC_RETRY_EXC_ERR (per transmit)
  double remote_access_error = 0;  // an RDMA WRITE with immediate is NAKed:
                                   // IBV_WC_REM_ACCESS_ERR (per bulk transmit)
  double qp_error = 0;             // the sender's QP goes to the error state (per transmit)
  double disconnect = 0;           // the link drops: both ends flush (per transmit)
  uint64_t max_faults = 0;         // at most this many fire on the fabric (0: no limit)
  bool enabled = true;             // whether they fire from the start (SetFaultsEnabled)
};

struct FakeVerbsFaultCounts {
  uint64_t post_send_fails = 0, post_recv_fails = 0, poll_fails = 0, error_completion = 0,
           remote_access_error = 0, qp_error = 0, disconnect = 0;
  uint64_t total() const {
    return post_send_fails + post_recv_fails + poll_fails + error_completion + remote_access_error + qp_error + disconnect;
  }
  // "post_send_fails=1 disconnect=2" (kinds that fired), for test output.
  std::string ToString() const;
};

struct FakeVerbsFabricOptions {
  // The fake NIC's schedule (which queue pair it serves next, delays) and
  // every fault decision.
  uint64_t seed = 1;
  // Poison buffers the NIC owns and record consumer writes to them.
  bool poison = true;
  // Each transmission and acknowledgement is delayed with this probability.
  double delay_probability = 0.2;
  FakeVerbsFaults faults{};  // none unless a test asks
};

class FakeVerbsFabric {
 public:
  static std::shared_ptr<FakeVerbsFabric> Create(FakeVerbsFabricOptions options = {});
  ~FakeVerbsFabric();
  FakeVerbsFabric(const FakeVerbsFabric&) = delete;
  FakeVerbsFabric& operator=(const FakeVerbsFabric&) = delete;

  // Consumer writes to buffers the NIC owned, one line each; empty when every
  // engine on the fabric kept to the verbs contract. Tests fail on any.
  std::vector<std::string> violations() const;
  // Bytes registered (ibv_reg_mr) by queue pairs that still exist: what the
  // connections on this fabric pin right now.
  uint64_t registered_bytes() const;
  uint64_t seed() const;
  // Turns the configured faults on or off (a test stops them to check what
  // survived them).
  void SetFaultsEnabled(bool enabled);
  // How many of each kind fired so far.
  FakeVerbsFaultCounts faults_fired() const;

  struct Impl;  // src/verbs/fake_verbs_backend.cc
  Impl& impl() { return *impl_; }

 private:
  explicit FakeVerbsFabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::rdma
