// BufferPool: fixed-size buffers allocated (and, on verbs, registered) once,
// handed out and returned without touching the allocator on the hot path.
//
// Thread-safety: TryAcquire and PooledBuffer destruction may run on any
// thread concurrently. A PooledBuffer keeps the pool's memory alive, so it may
// outlive the BufferPool object that issued it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>

namespace strata::rdma {

class BufferPool;

// One buffer on loan from a pool; returns itself on destruction. Move-only.
class PooledBuffer {
 public:
  PooledBuffer() = default;
  PooledBuffer(PooledBuffer&&) noexcept;
  PooledBuffer& operator=(PooledBuffer&&) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer();

  std::span<std::byte> data() const { return {ptr_, size_}; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  friend class BufferPool;
  struct Shared;
  PooledBuffer(std::shared_ptr<Shared> pool, std::byte* ptr, size_t size, uint32_t index)
      : pool_(std::move(pool)), ptr_(ptr), size_(size), index_(index) {}
  void Return();

  std::shared_ptr<Shared> pool_;
  std::byte* ptr_ = nullptr;
  size_t size_ = 0;
  uint32_t index_ = 0;
};

class BufferPool {
 public:
  // Called once with the whole slab so a backend can register it as one
  // memory region (ibv_reg_mr); the TCP backend passes nothing.
  using Registrar = std::function<void(std::span<std::byte> slab)>;

  BufferPool(size_t buffer_size, size_t count, const Registrar& registrar = {});
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // nullopt when every buffer is on loan.
  std::optional<PooledBuffer> TryAcquire();

  size_t buffer_size() const;
  size_t capacity() const;
  size_t available() const;

 private:
  std::shared_ptr<PooledBuffer::Shared> shared_;
};

}  // namespace strata::rdma
