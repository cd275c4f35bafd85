// IbvQueuePair: QueuePair on a real RC QP created through librdmacm.
//
// Setup (Create) follows the usual order — protection domain, completion
// channel, CQ, QP — and teardown runs in reverse in the destructor. Every
// failing verb is named in the returned Status, with its errno by name
// ("ibv_post_send failed: ENOMEM (Cannot allocate memory)", verbs_status.h).
#pragma once

#include <rdma/rdma_cma.h>

#include <memory>
#include <vector>

#include "verbs/queue_pair.h"

namespace strata::rdma {

class IbvQueuePair final : public QueuePair {
 public:
  // On success takes ownership of `id` (rdma_destroy_id in the destructor);
  // on failure the caller still owns it.
  static Result<std::unique_ptr<IbvQueuePair>> Create(rdma_cm_id* id, uint32_t send_depth, uint32_t recv_depth);
  ~IbvQueuePair() override;

  rdma_cm_id* id() const { return id_; }

  Result<MemoryKeys> Register(std::span<std::byte> memory, bool remote_write) override;
  Status PostRecv(uint64_t wr_id, std::span<std::byte> buffer, uint32_t lkey) override;
  Status PostSend(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey) override;
  Status PostWriteImm(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey, uint64_t remote_addr,
                      uint32_t rkey, uint32_t imm) override;
  Result<int> Poll(Completion* out, int max) override;
  int event_fd() const override { return channel_->fd; }
  Status ArmAndAck() override;
  Status Disconnect() override;

 private:
  explicit IbvQueuePair(rdma_cm_id* id) : id_(id) {}
  static Result<std::unique_ptr<IbvQueuePair>> CreateLow(rdma_cm_id* id, uint32_t send_depth, uint32_t recv_depth);

  rdma_cm_id* id_;
  ibv_pd* pd_ = nullptr;
  ibv_comp_channel* channel_ = nullptr;
  ibv_cq* cq_ = nullptr;
  bool qp_created_ = false;
  bool disconnected_ = false;
  bool id_released_ = false;  // failed Create: the caller keeps the id
  std::vector<ibv_mr*> mrs_;
};

}  // namespace strata::rdma
