// FakeVerbsBackend: the verbs backend of a Transport created with
// TransportOptions::fake_verbs_for_tests (tests only). Instead of rdma_cm
// and libibverbs it takes its queue pairs from the shared fake NIC of a
// FakeVerbsFabric (strata/rdma/fake_verbs_fabric.h); everything above the
// queue pair is the production verbs engine (VerbsConnection, VerbsShard).
//
// Connection setup, in the order verbs_backend.cc does it over rdma_cm:
// Connect looks the port up in the fabric's listener table (no listener:
// refused, as a rejected connect request), creates a connected pair of
// queue pairs, sets up the client end (registers its handshake slots),
// then hands the other end to the listening backend, which admits it
// against max_pending_handshakes (refused: rejected, no memory registered),
// sets up the server end and adopts it on one of its I/O threads. Connect
// then waits for the handshake, bounded by connect_timeout.
//
// Threads: io_threads VerbsShards per backend; no CM thread (setup runs on
// the Connect caller's thread). A listener's table entry has its own mutex,
// held while a connection is handed to it, so closing a listener (or
// destroying the backend) waits for a hand-off in progress and no
// connection reaches a backend that is going away.
#pragma once

#include <memory>

#include "backend.h"
#include "strata/rdma/fake_verbs_fabric.h"
#include "transport_context.h"

namespace strata::rdma {

Result<std::unique_ptr<detail::Backend>> CreateFakeVerbsBackend(std::shared_ptr<TransportContext> ctx,
                                                                std::shared_ptr<FakeVerbsFabric> fabric);

}  // namespace strata::rdma
