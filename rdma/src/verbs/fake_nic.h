// FakeNic: an in-process stand-in for a pair of connected RC queue pairs.
//
// It is a test double, not an emulator of any NIC: it copies bytes on Post*
// under one mutex and queues completions, honouring the QueuePair contract
// (in-order completions, a receive consumed per SEND/WRITE_WITH_IMM, remote
// writes checked against registered regions and rkeys, flush on
// disconnect). Posting a SEND when the peer has no receive posted completes
// with "RNR retry exceeded", as a real QP with rnr_retry=0 would.
#pragma once

#include <memory>
#include <utility>

#include "verbs/queue_pair.h"

namespace strata::rdma {

class FakeNic {
 public:
  // Two queue pairs connected to each other.
  static std::pair<std::unique_ptr<QueuePair>, std::unique_ptr<QueuePair>> CreatePair();
};

}  // namespace strata::rdma
