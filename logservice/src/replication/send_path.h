// Which of the transport's two paths a replication message takes.
//
// rdma/ moves a message either by Send (a SEND into one of the receiver's
// pre-posted receive slots, each one maximal ordinary message in size, all
// of them registered on verbs) or by SendBulk (an RDMA WRITE with immediate
// into the receiver's registered bulk ring; on TCP the same frame on the
// stream). Slots are sized for the common message (kReceiveSlotBytes:
// acknowledgements, status, small appends, a 16 KiB page put), so that a
// connection does not pin a maximal message per credit; anything larger
// (appends of more redo, ReadResp ranges for readers and for peers filling
// gaps, a state with a large tail image, checkpoint metadata) goes by
// SendBulk. Design: docs/design/logservice-bulk-path.md.
//
// Matching: none is needed. The bulk payload is the whole encoded message
// (wire.h header and body), decoded by the same strict repl::Decode as one
// that came by Send; the transport keeps one order over a connection's Send
// and SendBulk, so it arrives exactly where it was sent in the stream.
//
// Every sender of replication messages goes through SendMessage (RpcChannel
// calls and posts, the node's replies). Thread-safety: that of
// rdma::Connection (any thread).
#pragma once
#include <chrono>
#include <cstdint>
#include <string_view>

#include "strata/rdma/rdma.h"
#include "wire.h"

namespace strata::logservice::repl {

// TransportOptions::max_message_size of the replication transport: the
// receive slot, and the largest message that goes by Send.
inline constexpr std::uint32_t kReceiveSlotBytes = 32u << 10;
// TransportOptions::bulk_ring_size: holds the largest message (a ReadResp or
// a checkpoint, wire::kMaxMessage) with its 32-byte transport header, plus
// room for several appends in flight.
inline constexpr std::uint32_t kBulkRingBytes = 4u << 20;
static_assert(wire::kMaxMessage + 64 <= kBulkRingBytes / 2,
              "the bulk ring must take the largest message even when half of it is in use");

enum class MessagePath { kSend, kBulk };

// kSend when `bytes` fit the connection's receive slot (max_message_size()).
MessagePath PathFor(const rdma::Connection& c, std::size_t bytes);

// Sends one encoded message by its path; waits up to `wait` for credits or
// ring space (then kBusy). A message larger than the connection's
// max_bulk_size() (a peer with bulk disabled) fails with kInvalidArgument
// and the transport's reason; nothing is cut.
[[nodiscard]] rdma::Status SendMessage(rdma::Connection& c, std::string_view encoded, std::chrono::milliseconds wait);

}  // namespace strata::logservice::repl
