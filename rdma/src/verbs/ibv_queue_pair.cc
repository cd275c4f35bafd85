// IbvQueuePair: libibverbs calls behind the QueuePair interface.
#include "verbs/ibv_queue_pair.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace strata::rdma {

// WcStatus mirrors ibv_wc_status value for value (the fake NIC and the
// engine use it without verbs headers).
static_assert(static_cast<int>(WcStatus::kSuccess) == IBV_WC_SUCCESS);
static_assert(static_cast<int>(WcStatus::kLocLenErr) == IBV_WC_LOC_LEN_ERR);
static_assert(static_cast<int>(WcStatus::kLocProtErr) == IBV_WC_LOC_PROT_ERR);
static_assert(static_cast<int>(WcStatus::kWrFlushErr) == IBV_WC_WR_FLUSH_ERR);
static_assert(static_cast<int>(WcStatus::kRemInvReqErr) == IBV_WC_REM_INV_REQ_ERR);
static_assert(static_cast<int>(WcStatus::kRemAccessErr) == IBV_WC_REM_ACCESS_ERR);
static_assert(static_cast<int>(WcStatus::kRetryExcErr) == IBV_WC_RETRY_EXC_ERR);
static_assert(static_cast<int>(WcStatus::kRnrRetryExcErr) == IBV_WC_RNR_RETRY_EXC_ERR);
static_assert(static_cast<int>(WcStatus::kFatalErr) == IBV_WC_FATAL_ERR);
static_assert(static_cast<int>(WcStatus::kGeneralErr) == IBV_WC_GENERAL_ERR);

Result<std::unique_ptr<IbvQueuePair>> IbvQueuePair::Create(rdma_cm_id* id, uint32_t send_depth, uint32_t recv_depth) {
  Result<std::unique_ptr<IbvQueuePair>> made = CreateLow(id, send_depth, recv_depth);
  return made;
}

Result<std::unique_ptr<IbvQueuePair>> IbvQueuePair::CreateLow(rdma_cm_id* id, uint32_t send_depth, uint32_t recv_depth) {
  // Until the end, a failure must hand the id back to the caller.
  struct GiveBack {
    std::unique_ptr<IbvQueuePair>& qp;
    ~GiveBack() { if (qp) qp->id_released_ = true; }
  };
  std::unique_ptr<IbvQueuePair> qp(new IbvQueuePair(id));
  GiveBack give_back{qp};
  ibv_context* verbs = id->verbs;
  if (verbs == nullptr) return Unavailable("rdma_cm_id has no device context (address not resolved to an RDMA device)");
  qp->pd_ = ibv_alloc_pd(verbs);
  if (qp->pd_ == nullptr) return VerbError("ibv_alloc_pd", errno);
  qp->channel_ = ibv_create_comp_channel(verbs);
  if (qp->channel_ == nullptr) return VerbError("ibv_create_comp_channel", errno);
  const int flags = ::fcntl(qp->channel_->fd, F_GETFL);
  if (flags < 0 || ::fcntl(qp->channel_->fd, F_SETFL, flags | O_NONBLOCK) != 0) return ErrnoStatus("fcntl(O_NONBLOCK) on completion channel", errno);
  qp->cq_ = ibv_create_cq(verbs, static_cast<int>(send_depth + recv_depth), nullptr, qp->channel_, 0);
  if (qp->cq_ == nullptr) return VerbError("ibv_create_cq", errno);
  if (int rc = ibv_req_notify_cq(qp->cq_, 0); rc != 0) return VerbError("ibv_req_notify_cq", rc);
  ibv_qp_init_attr attr{};
  attr.send_cq = qp->cq_;
  attr.recv_cq = qp->cq_;
  attr.qp_type = IBV_QPT_RC;
  attr.sq_sig_all = 1;  // every send completes: completions drive frame completion
  attr.cap.max_send_wr = send_depth;
  attr.cap.max_recv_wr = recv_depth;
  attr.cap.max_send_sge = 1;
  attr.cap.max_recv_sge = 1;
  if (rdma_create_qp(id, qp->pd_, &attr) != 0) return VerbError("rdma_create_qp", errno);
  qp->qp_created_ = true;
  auto done = std::move(qp);  // GiveBack now sees nothing: the id stays owned
  return done;
}

IbvQueuePair::~IbvQueuePair() {
  // Reverse of Create.
  if (qp_created_) rdma_destroy_qp(id_);
  for (ibv_mr* mr : mrs_) ibv_dereg_mr(mr);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
  if (pd_ != nullptr) ibv_dealloc_pd(pd_);
  if (id_ != nullptr && !id_released_) rdma_destroy_id(id_);
}

Result<MemoryKeys> IbvQueuePair::Register(std::span<std::byte> memory, bool remote_write) {
  int access = IBV_ACCESS_LOCAL_WRITE;
  if (remote_write) access |= IBV_ACCESS_REMOTE_WRITE;
  ibv_mr* mr = ibv_reg_mr(pd_, memory.data(), memory.size(), access);
  if (mr == nullptr) return VerbError("ibv_reg_mr(" + std::to_string(memory.size()) + " bytes)", errno);
  mrs_.push_back(mr);
  return MemoryKeys{mr->lkey, mr->rkey};
}

Status IbvQueuePair::PostRecv(uint64_t wr_id, std::span<std::byte> buffer, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buffer.data()), static_cast<uint32_t>(buffer.size()), lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  if (int rc = ibv_post_recv(id_->qp, &wr, &bad); rc != 0) return VerbError("ibv_post_recv", rc);
  return Status::Ok();
}

Status IbvQueuePair::PostSend(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buffer.data()), static_cast<uint32_t>(buffer.size()), lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) return VerbError("ibv_post_send", rc);
  return Status::Ok();
}

Status IbvQueuePair::PostWriteImm(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey,
                                  uint64_t remote_addr, uint32_t rkey, uint32_t imm) {
  ibv_sge sge{reinterpret_cast<uint64_t>(buffer.data()), static_cast<uint32_t>(buffer.size()), lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.imm_data = htonl(imm);
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (int rc = ibv_post_send(id_->qp, &wr, &bad); rc != 0) return VerbError("ibv_post_send", rc);
  return Status::Ok();
}

Result<int> IbvQueuePair::Poll(Completion* out, int max) {
  ibv_wc wc[32];
  const int n = ibv_poll_cq(cq_, std::min(max, 32), wc);
  // Negative: the provider could not read the CQ (e.g. CQ overrun); the
  // connection must fail rather than wait for completions that never come.
  if (n < 0) return IoError("ibv_poll_cq failed: returned " + std::to_string(n));
  for (int i = 0; i < n; ++i) {
    Completion& c = out[i];
    c.wr_id = wc[i].wr_id;
    c.status = static_cast<WcStatus>(wc[i].status);
    c.byte_len = wc[i].byte_len;
    c.imm = 0;
    // The opcode of an error completion is undefined; the connection
    // classifies by wr_id then.
    switch (wc[i].opcode) {
      case IBV_WC_SEND: c.op = Completion::Op::kSend; break;
      case IBV_WC_RDMA_WRITE: c.op = Completion::Op::kWrite; break;
      case IBV_WC_RECV_RDMA_WITH_IMM:
        c.op = Completion::Op::kRecvImm;
        c.imm = ntohl(wc[i].imm_data);
        break;
      default: c.op = Completion::Op::kRecv; break;
    }
  }
  return n;
}

Status IbvQueuePair::ArmAndAck() {
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  if (ibv_get_cq_event(channel_, &cq, &context) == 0) {
    ibv_ack_cq_events(cq, 1);
  } else if (errno != EAGAIN) {
    return VerbError("ibv_get_cq_event", errno);
  }
  if (int rc = ibv_req_notify_cq(cq_, 0); rc != 0) return VerbError("ibv_req_notify_cq", rc);
  return Status::Ok();
}

Status IbvQueuePair::Disconnect() {
  if (disconnected_) return Status::Ok();
  disconnected_ = true;
  // Moves the QP to error (outstanding WRs flush) and sends the DREQ.
  if (rdma_disconnect(id_) != 0) return VerbError("rdma_disconnect", errno);
  return Status::Ok();
}

}  // namespace strata::rdma
