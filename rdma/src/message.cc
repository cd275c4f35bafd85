// Message::Retain and MessageLease: turning a handler-scoped view into a lease.
#include "strata/rdma/message.h"

#include <cstring>

namespace strata::rdma {

MessageLease& MessageLease::operator=(MessageLease&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::move(other.owner_);
    token_ = other.token_;
    view_ = other.view_;
    pooled_ = std::move(other.pooled_);
    heap_ = std::move(other.heap_);
    other.view_ = {};
  }
  return *this;
}

void MessageLease::Release() {
  if (!owner_) return;
  // Drop the bytes before the credit goes back: once the sender has the
  // credit it may reuse the memory (bulk ring) the view points into.
  view_ = {};
  pooled_.reset();
  heap_.reset();
  auto owner = std::move(owner_);
  owner->ReleaseReceive(token_);
}

MessageLease Message::Retain() const {
  MessageLease lease;
  if (retained_ || owner_ == nullptr) return lease;
  retained_ = true;
  lease.owner_ = owner_->ReceiveOwnerRef();
  lease.token_ = token_;
  if (transient_) {
    lease.pooled_ = owner_->CopyForLease(payload_, lease.heap_);
    if (lease.pooled_) lease.view_ = {lease.pooled_->data().data(), payload_.size()};
    else lease.view_ = {lease.heap_.get(), payload_.size()};
  } else {
    lease.view_ = payload_;
  }
  return lease;
}

}  // namespace strata::rdma
