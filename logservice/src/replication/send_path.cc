// Send or SendBulk for a replication message; see send_path.h.
#include "send_path.h"

#include <span>

namespace strata::logservice::repl {

MessagePath PathFor(const rdma::Connection& c, std::size_t bytes) {
  return bytes <= c.max_message_size() ? MessagePath::kSend : MessagePath::kBulk;
}

rdma::Status SendMessage(rdma::Connection& c, std::string_view encoded, std::chrono::milliseconds wait) {
  const auto payload = std::as_bytes(std::span(encoded.data(), encoded.size()));
  if (PathFor(c, encoded.size()) == MessagePath::kSend) return c.Send(payload, {}, wait);
  return c.SendBulk(payload, {}, wait);
}

}  // namespace strata::logservice::repl
