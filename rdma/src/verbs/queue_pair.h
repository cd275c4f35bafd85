// QueuePair: the slice of the verbs API the connection engine needs.
//
// VerbsConnection speaks only to this interface; IbvQueuePair implements it
// with libibverbs on a real NIC and FakeNic implements it in-process so the
// posting/completion/credit logic runs in tests on machines without a device.
//
// Semantics are those of an RC queue pair with one CQ for sends and
// receives, every send signalled: send completions come back in posting
// order and receive completions in posting order, but nothing orders the
// two queues against each other (the peer may answer a message before its
// send completion arrives); a SEND or a WRITE_WITH_IMM consumes one posted
// receive at the peer. A buffer belongs to the NIC from Post* until its
// completion is polled: the consumer neither reads a receive buffer nor
// writes a send buffer in between. A failed completion moves the QP to the
// error state and everything still outstanding completes with
// WcStatus::kWrFlushErr; so does everything after Disconnect. The opcode of
// a failed completion is undefined: classify it by wr_id.
// Errors name the verb ("ibv_post_send failed: ENOMEM (...)", verbs_status.h).
// Thread-safety: Post* may be called from any thread concurrently; Poll and
// ArmAndAck only from the connection's I/O thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "strata/rdma/status.h"
#include "verbs/verbs_status.h"

namespace strata::rdma {

struct Completion {
  enum class Op : uint8_t { kSend, kWrite, kRecv, kRecvImm };
  Op op = Op::kSend;              // undefined unless ok()
  WcStatus status = WcStatus::kSuccess;
  uint64_t wr_id = 0;
  uint32_t byte_len = 0;
  uint32_t imm = 0;               // kRecvImm: the sender's immediate (host order)

  bool ok() const { return status == WcStatus::kSuccess; }
};

struct MemoryKeys {
  uint32_t lkey = 0;
  uint32_t rkey = 0;
};

class QueuePair {
 public:
  virtual ~QueuePair() = default;
  // Registers memory for the QP's lifetime ("ibv_reg_mr").
  virtual Result<MemoryKeys> Register(std::span<std::byte> memory, bool remote_write) = 0;
  virtual Status PostRecv(uint64_t wr_id, std::span<std::byte> buffer, uint32_t lkey) = 0;
  virtual Status PostSend(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey) = 0;
  virtual Status PostWriteImm(uint64_t wr_id, std::span<const std::byte> buffer, uint32_t lkey,
                              uint64_t remote_addr, uint32_t rkey, uint32_t imm) = 0;
  // Up to `max` completions; an error names ibv_poll_cq (the CQ is unusable).
  virtual Result<int> Poll(Completion* out, int max) = 0;
  // Readable when completions may be waiting (completion channel fd).
  virtual int event_fd() const = 0;
  // Consumes the pending event and asks for the next one.
  virtual Status ArmAndAck() = 0;
  // rdma_disconnect: the QP moves to the error state (outstanding work
  // flushes) and the peer is told. Idempotent.
  virtual Status Disconnect() = 0;
};

}  // namespace strata::rdma
