// FakeNic implementation: shared state of both ends under one mutex.
#include "verbs/fake_nic.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <mutex>
#include <vector>

namespace strata::rdma {
namespace {

struct Region {
  std::byte* base;
  size_t size;
  uint32_t key;
  bool remote_write;
};

struct End {
  std::vector<Region> regions;
  std::deque<std::pair<uint64_t, std::span<std::byte>>> recvs;
  std::deque<Completion> cq;
  int event_fd = -1;
};

struct Wire {
  std::mutex mu;
  End ends[2];
  bool disconnected = false;
  uint32_t next_key = 0x100;
};

class FakeQueuePair final : public QueuePair {
 public:
  FakeQueuePair(std::shared_ptr<Wire> wire, int side) : wire_(std::move(wire)), me_(side), peer_(1 - side) {
    wire_->ends[me_].event_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  }
  ~FakeQueuePair() override {
    Disconnect();
    std::lock_guard lock(wire_->mu);
    ::close(wire_->ends[me_].event_fd);
    wire_->ends[me_].event_fd = -1;
  }

  Result<MemoryKeys> Register(std::span<std::byte> memory, bool remote_write) override {
    std::lock_guard lock(wire_->mu);
    const uint32_t key = wire_->next_key++;
    wire_->ends[me_].regions.push_back({memory.data(), memory.size(), key, remote_write});
    return MemoryKeys{key, key};
  }

  Status PostRecv(uint64_t wr_id, std::span<std::byte> buffer, uint32_t lkey) override {
    std::lock_guard lock(wire_->mu);
    if (!Covers(me_, buffer.data(), buffer.size(), lkey, false)) return IoError("ibv_post_recv failed: buffer not registered (fake NIC)");
    if (wire_->disconnected) {
      Push(me_, {Completion::Op::kRecv, false, wr_id, 0, 0, "WR flushed"});
      return Status::Ok();
    }
    wire_->ends[me_].recvs.emplace_back(wr_id, buffer);
    return Status::Ok();
  }

  Status PostSend(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey) override {
    std::lock_guard lock(wire_->mu);
    if (!Covers(me_, const_cast<std::byte*>(buffer.data()), buffer.size(), lkey, false))
      return IoError("ibv_post_send failed: buffer not registered (fake NIC)");
    if (wire_->disconnected) {
      Push(me_, {Completion::Op::kSend, false, wr_id, 0, 0, "WR flushed"});
      return Status::Ok();
    }
    End& peer = wire_->ends[peer_];
    if (peer.recvs.empty()) {
      Push(me_, {Completion::Op::kSend, false, wr_id, 0, 0, "RNR retry counter exceeded"});
      return Status::Ok();
    }
    auto [rwr, rbuf] = peer.recvs.front();
    peer.recvs.pop_front();
    if (rbuf.size() < buffer.size()) {
      Push(peer_, {Completion::Op::kRecv, false, rwr, 0, 0, "local length error"});
      Push(me_, {Completion::Op::kSend, false, wr_id, 0, 0, "remote invalid request error"});
      return Status::Ok();
    }
    std::memcpy(rbuf.data(), buffer.data(), buffer.size());
    Push(peer_, {Completion::Op::kRecv, true, rwr, static_cast<uint32_t>(buffer.size()), 0, ""});
    Push(me_, {Completion::Op::kSend, true, wr_id, static_cast<uint32_t>(buffer.size()), 0, ""});
    return Status::Ok();
  }

  Status PostWriteImm(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey, uint64_t remote_addr,
                      uint32_t rkey, uint32_t imm) override {
    std::lock_guard lock(wire_->mu);
    if (!Covers(me_, const_cast<std::byte*>(buffer.data()), buffer.size(), lkey, false))
      return IoError("ibv_post_send(RDMA_WRITE_WITH_IMM) failed: buffer not registered (fake NIC)");
    if (wire_->disconnected) {
      Push(me_, {Completion::Op::kWrite, false, wr_id, 0, 0, "WR flushed"});
      return Status::Ok();
    }
    auto* target = reinterpret_cast<std::byte*>(remote_addr);
    if (!Covers(peer_, target, buffer.size(), rkey, true)) {
      Push(me_, {Completion::Op::kWrite, false, wr_id, 0, 0, "remote access error"});
      return Status::Ok();
    }
    End& peer = wire_->ends[peer_];
    if (peer.recvs.empty()) {
      Push(me_, {Completion::Op::kWrite, false, wr_id, 0, 0, "RNR retry counter exceeded"});
      return Status::Ok();
    }
    const uint64_t rwr = peer.recvs.front().first;
    peer.recvs.pop_front();
    std::memcpy(target, buffer.data(), buffer.size());
    Push(peer_, {Completion::Op::kRecvImm, true, rwr, static_cast<uint32_t>(buffer.size()), imm, ""});
    Push(me_, {Completion::Op::kWrite, true, wr_id, 0, 0, ""});
    return Status::Ok();
  }

  int Poll(Completion* out, int max) override {
    std::lock_guard lock(wire_->mu);
    auto& cq = wire_->ends[me_].cq;
    int n = 0;
    while (n < max && !cq.empty()) {
      out[n++] = cq.front();
      cq.pop_front();
    }
    return n;
  }

  int event_fd() const override { return wire_->ends[me_].event_fd; }

  Status ArmAndAck() override {
    uint64_t value;
    [[maybe_unused]] ssize_t r = ::read(wire_->ends[me_].event_fd, &value, sizeof value);
    return Status::Ok();
  }

  void Disconnect() override {
    std::lock_guard lock(wire_->mu);
    if (wire_->disconnected) return;
    wire_->disconnected = true;
    for (int side = 0; side < 2; ++side) {
      for (auto& [wr, buf] : wire_->ends[side].recvs) Push(side, {Completion::Op::kRecv, false, wr, 0, 0, "WR flushed"});
      wire_->ends[side].recvs.clear();
    }
  }

 private:
  bool Covers(int side, std::byte* p, size_t n, uint32_t key, bool need_remote) {
    for (const Region& r : wire_->ends[side].regions) {
      if (r.key == key && p >= r.base && p + n <= r.base + r.size && (!need_remote || r.remote_write)) return true;
    }
    return false;
  }
  void Push(int side, Completion c) {
    End& e = wire_->ends[side];
    e.cq.push_back(c);
    const uint64_t one = 1;
    if (e.event_fd >= 0) [[maybe_unused]] ssize_t r = ::write(e.event_fd, &one, sizeof one);
  }

  std::shared_ptr<Wire> wire_;
  int me_, peer_;
};

}  // namespace

std::pair<std::unique_ptr<QueuePair>, std::unique_ptr<QueuePair>> FakeNic::CreatePair() {
  auto wire = std::make_shared<Wire>();
  return {std::make_unique<FakeQueuePair>(wire, 0), std::make_unique<FakeQueuePair>(wire, 1)};
}

}  // namespace strata::rdma
