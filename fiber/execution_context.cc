// Copyright 2026 The Spindle Authors.

#include "fiber/execution_context.h"

#include <algorithm>

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"

namespace spindle {

namespace internal {
void DieOutsideExecutionContext() {
  LOG(FATAL) << "ExecutionLocal dereferenced outside any execution context (enter one "
                "with ScopedExecutionContext, or use get(), which returns nullptr there)";
  std::abort();
}
}  // namespace internal

std::shared_ptr<ExecutionContext> ExecutionContext::Create(Options options) {
  return std::shared_ptr<ExecutionContext>(new ExecutionContext(std::move(options)));
}

ExecutionContext::ExecutionContext(Options options)
    : stop_(internal::StopState::Create()), parent_(std::move(options.parent)) {
  limits_.stop = stop_;
  // The API's edge: the one conversion of the deadline, which every interruptible wait
  // in the context then reads as it is (fiber/internal/deadline.h).
  limits_.deadline = internal::MonotonicDeadline::At(options.deadline);
  if (parent_ != nullptr) limits_.deadline = std::min(limits_.deadline, parent_->limits_.deadline);
  if (parent_ != nullptr) LinkTo(parent_link_, parent_->stop_);
  if (options.stop_token.state_ != nullptr) LinkTo(token_link_, options.stop_token.state_);
}

void ExecutionContext::LinkTo(Link& link, internal::StopState* state) {
  link.run = &RunLink;
  link.child = this;
  if (state->Add(&link)) {
    state->Ref();
    link.to = state;
  } else {
    stop_->RequestStop();  // stopped already
  }
}

void ExecutionContext::RunLink(internal::StopState::Callback* node) noexcept {
  // The child is alive: its destructor unlinks this node first, waiting for this run
  // (or, destroyed by a callback of the cancellation below, on this very fiber, telling
  // the run to leave the node alone). RequestStop() keeps the child's state alive while
  // it runs; nothing of the child is touched after it.
  static_cast<Link*>(node)->child->stop_->RequestStop();
}

StopToken ExecutionContext::CurrentStopToken() {
  ExecutionContext* context = Current();
  return context != nullptr ? context->stop_token() : StopToken();
}

ExecutionContext* ExecutionContext::Current() {
  return static_cast<ExecutionContext*>(
      internal::CurrentFiberLocalStorage().execution_context());
}

std::shared_ptr<ExecutionContext> ExecutionContext::CaptureCurrent() {
  ExecutionContext* context = Current();
  // The caller runs inside a scope that holds a reference: shared_from_this() is valid.
  return context != nullptr ? context->shared_from_this() : nullptr;
}

ExecutionContext::~ExecutionContext() {
  // Unlinked first: a parent's (or token's) cancellation running our link now is waited
  // for, and none starts after this.
  for (Link* link : {&parent_link_, &token_link_}) {
    if (link->to != nullptr) {
      link->to->Remove(link);
      link->to->Unref();
    }
  }
  stop_->Unref();
  // The last reference is gone: nobody reads the slots any more.
  for (auto& slot : inline_slots_) {
    // relaxed: no other thread holds the context (shared_ptr's release-acquire on
    // the count ordered their stores before this).
    internal::LocalBox* box = slot.load(std::memory_order_relaxed);
    if (box != nullptr) box->destroy(box);
  }
  for (internal::LocalBox* box : overflow_) {
    if (box != nullptr) box->destroy(box);
  }
  for (internal::LocalBox* box : retired_) box->destroy(box);
}

internal::LocalBox* ExecutionContext::FindOverflow(const internal::LocalKey& key) const {
  internal::OsMutexGuard lock(mutex_);
  const std::size_t i = key.index - kInlineSlots;
  if (i >= overflow_.size()) return nullptr;
  internal::LocalBox* box = overflow_[i];
  return box != nullptr && box->generation == key.generation ? box : nullptr;
}

internal::LocalBox* ExecutionContext::Install(const internal::LocalKey& key,
                                              internal::LocalBox* box) {
  if (key.index >= kInlineSlots) {
    internal::OsMutexGuard lock(mutex_);
    const std::size_t i = key.index - kInlineSlots;
    if (i >= overflow_.size()) overflow_.resize(i + 1, nullptr);
    internal::LocalBox*& slot = overflow_[i];
    if (slot != nullptr && slot->generation == key.generation) {
      box->destroy(box);  // lost the race to construct it
      return slot;
    }
    if (slot != nullptr) retired_.push_back(slot);  // stale: a FindOverflow() is done
    slot = box;
    return box;
  }
  std::atomic<internal::LocalBox*>& slot = inline_slots_[key.index];
  // acquire: pairs with the release of a competing Install(), so a value of our key
  // found here is constructed.
  internal::LocalBox* seen = slot.load(std::memory_order_acquire);
  for (;;) {
    if (seen != nullptr && seen->generation == key.generation) {
      box->destroy(box);  // lost the race to construct it
      return seen;
    }
    // release: publishes the constructed value to Find()'s acquire load; acquire on
    // failure: as the load above.
    if (slot.compare_exchange_weak(seen, box, std::memory_order_acq_rel,
                                   std::memory_order_acquire)) {
      break;
    }
  }
  if (seen != nullptr) {
    // A stale value (its key was destroyed): a Find() may still be reading its header.
    internal::OsMutexGuard lock(mutex_);
    retired_.push_back(seen);
  }
  return box;
}

ScopedExecutionContext::ScopedExecutionContext(std::shared_ptr<ExecutionContext> context)
    : storage_(&internal::CurrentFiberLocalStorage()),
      context_(std::move(context)),
      previous_(storage_->execution_context()),
      previous_limits_(storage_->wait_limits()) {
  storage_->set_execution_context(context_.get());
  storage_->set_wait_limits(context_ != nullptr ? &context_->limits_ : nullptr);
}

// The storage is the fiber's own (not the thread's): right even if the fiber migrated.
ScopedExecutionContext::~ScopedExecutionContext() {
  storage_->set_execution_context(previous_);
  storage_->set_wait_limits(previous_limits_);
}

}  // namespace spindle
