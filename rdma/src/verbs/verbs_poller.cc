// VerbsShard: the verbs I/O thread (see verbs_connection.h).
#include <sys/epoll.h>

#include <algorithm>

#include "verbs/verbs_connection.h"

namespace strata::rdma {

VerbsShard::VerbsShard(std::shared_ptr<TransportContext> ctx)
    : ctx_(std::move(ctx)), loop_(ctx_->TickInterval(), ctx_->options.busy_poll) {}

Status VerbsShard::Start() {
  return loop_.Start(
      [this](Clock::time_point) {
        const auto now = ctx_->Now();  // the protocol clock (options.clock)
        for (auto& conn : conns_) conn->Tick(now);
      },
      [this] {
        for (auto& conn : conns_) conn->Fail(Aborted("transport shutting down"));
      },
      [this] {
        bool work = false;
        for (auto& conn : conns_) work |= conn->PollOnce();
        return work;
      });
}

void VerbsShard::Adopt(const std::shared_ptr<VerbsConnection>& conn) {
  conns_.push_back(conn);
  if (Status s = loop_.Watch(conn->event_fd(), EPOLLIN, conn.get()); !s.ok()) {
    conn->Fail(s);
    return;
  }
  conn->Start();
  conn->PollOnce();  // completions that arrived before we watched the fd
}

void VerbsShard::Drop(VerbsConnection* conn) {
  loop_.Unwatch(conn->event_fd());
  conns_.erase(std::remove_if(conns_.begin(), conns_.end(), [conn](const auto& c) { return c.get() == conn; }),
               conns_.end());
}

}  // namespace strata::rdma
