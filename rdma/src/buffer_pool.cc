// BufferPool: one slab, a free list of indices under a mutex.
//
// A mutex (not a lock-free stack) because acquisitions are per message, not
// per byte, and the critical section is two vector operations; it also makes
// the ABA-free reasoning trivial. The slab is allocated once at construction.
#include "strata/rdma/buffer_pool.h"

#include <cassert>
#include <mutex>
#include <vector>

namespace strata::rdma {

struct PooledBuffer::Shared {
  size_t buffer_size = 0;
  size_t count = 0;
  std::unique_ptr<std::byte[]> slab;
  std::mutex mu;
  std::vector<uint32_t> free;  // indices; reserved to count, never reallocates
};

PooledBuffer::PooledBuffer(PooledBuffer&& other) noexcept
    : pool_(std::move(other.pool_)), ptr_(other.ptr_), size_(other.size_), index_(other.index_) {
  other.ptr_ = nullptr;
}

PooledBuffer& PooledBuffer::operator=(PooledBuffer&& other) noexcept {
  if (this != &other) {
    Return();
    pool_ = std::move(other.pool_);
    ptr_ = other.ptr_;
    size_ = other.size_;
    index_ = other.index_;
    other.ptr_ = nullptr;
  }
  return *this;
}

PooledBuffer::~PooledBuffer() { Return(); }

void PooledBuffer::Return() {
  if (ptr_ == nullptr) return;
  {
    std::lock_guard lock(pool_->mu);
    pool_->free.push_back(index_);
  }
  ptr_ = nullptr;
  pool_.reset();
}

BufferPool::BufferPool(size_t buffer_size, size_t count, const Registrar& registrar)
    : shared_(std::make_shared<PooledBuffer::Shared>()) {
  // Round each buffer to a cache line so neighbours never share one.
  shared_->buffer_size = (buffer_size + 63) / 64 * 64;
  shared_->count = count;
  shared_->slab.reset(new std::byte[shared_->buffer_size * count]);
  shared_->free.reserve(count);
  for (size_t i = count; i-- > 0;) shared_->free.push_back(static_cast<uint32_t>(i));
  if (registrar) registrar({shared_->slab.get(), shared_->buffer_size * count});
}

BufferPool::~BufferPool() = default;

std::optional<PooledBuffer> BufferPool::TryAcquire() {
  uint32_t index;
  {
    std::lock_guard lock(shared_->mu);
    if (shared_->free.empty()) return std::nullopt;
    index = shared_->free.back();
    shared_->free.pop_back();
  }
  return PooledBuffer(shared_, shared_->slab.get() + index * shared_->buffer_size,
                      shared_->buffer_size, index);
}

size_t BufferPool::buffer_size() const { return shared_->buffer_size; }
size_t BufferPool::capacity() const { return shared_->count; }
size_t BufferPool::available() const {
  std::lock_guard lock(shared_->mu);
  return shared_->free.size();
}

}  // namespace strata::rdma
