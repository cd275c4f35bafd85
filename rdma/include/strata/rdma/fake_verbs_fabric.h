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
// Thread-safety: every method may be called from any thread. The fabric
// (and its NIC thread) lives as long as the last Transport or caller that
// holds it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace strata::rdma {

struct FakeVerbsFabricOptions {
  // The fake NIC's schedule (which queue pair it serves next, delays).
  uint64_t seed = 1;
  // Poison buffers the NIC owns and record consumer writes to them.
  bool poison = true;
  // Each transmission and acknowledgement is delayed with this probability.
  double delay_probability = 0.2;
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

  struct Impl;  // src/verbs/fake_verbs_backend.cc
  Impl& impl() { return *impl_; }

 private:
  explicit FakeVerbsFabric(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::rdma
