// Copyright 2026 The Spindle Authors.

#include "sync/internal/stop_state.h"

#include <thread>

#ifndef SPINDLE_MODEL_CHECK
#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/base/ready_batch.h"
#endif

namespace spindle::internal {

const void* StopState::CurrentRunner() {
#ifdef SPINDLE_MODEL_CHECK
  // A model's threads: its own index (a model's fiber entity is shared by its threads).
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(rl::thread_index()) + 1);
#else
  static thread_local const char thread_tag = 0;
  const FiberEntity* fiber = GetCurrentFiberEntity();
  return fiber != nullptr ? static_cast<const void*>(fiber) : &thread_tag;
#endif
}

void StopState::WaitUntilDone(Callback* callback) {
  // acquire: pairs with RequestStop()'s release store after the run.
  while (!callback->done.load(std::memory_order_acquire)) {
#ifndef SPINDLE_MODEL_CHECK
    FiberEntity* self = GetCurrentFiberEntity();
    if (self != nullptr && !self->is_master()) {
      YieldFiber(self);  // the run may be parked, waiting for this worker
      continue;
    }
#endif
    std::this_thread::yield();
  }
}

bool StopState::RequestStop() {
  // Our own reference while we run the callbacks: one may drop every other (a child
  // context destroyed by a callback of its cancellation), and we use `this` after it.
  Ref();
  lock_.lock();
  // relaxed: changed only under lock_, which we hold.
  if (requested_.load(std::memory_order_relaxed)) {
    lock_.unlock();
    Unref();
    return false;
  }
  // release: pairs with stop_requested()'s acquire load. Under lock_, so an Add() after
  // this sees it (step 2 of the header's protocol).
  requested_.store(true, std::memory_order_release);
  const void* const runner = CurrentRunner();
  while (Callback* callback = head_) {
    head_ = callback->next;
    (head_ != nullptr ? head_->prev : tail_) = nullptr;
    callback->linked = false;
    // Taken: from here its Remove() waits for `done` instead of unlinking it, unless
    // it is made by this run (step 3), which sets `removed` instead.
    bool removed = false;
    running_ = callback;
    runner_ = runner;
    running_removed_ = &removed;
    lock_.unlock();
    callback->run(callback);
    lock_.lock();
    running_ = nullptr;
    running_removed_ = nullptr;
    // release: pairs with WaitUntilDone()'s acquire load; nothing touches the callback
    // after this store (its owner may free it at once). Not at all if its run removed
    // it: it may be gone already.
    if (!removed) callback->done.store(true, std::memory_order_release);
  }
  lock_.unlock();
  Unref();
  return true;
}

bool StopState::Add(Callback* callback) {
  SpinlockGuard guard(lock_);
  // relaxed: changed only under lock_, which we hold.
  if (requested_.load(std::memory_order_relaxed)) return false;
  // relaxed: published to RequestStop() and Remove() by lock_, which both take before
  // they look at the callback.
  callback->done.store(false, std::memory_order_relaxed);
  callback->next = nullptr;
  callback->prev = tail_;
  (tail_ != nullptr ? tail_->next : head_) = callback;
  tail_ = callback;
  callback->linked = true;
  return true;
}

void StopState::Remove(Callback* callback) {
  {
    SpinlockGuard guard(lock_);
    if (callback->linked) {
      (callback->prev != nullptr ? callback->prev->next : head_) = callback->next;
      (callback->next != nullptr ? callback->next->prev : tail_) = callback->prev;
      callback->linked = false;
      return;
    }
    if (callback == running_ && runner_ == CurrentRunner()) {
      *running_removed_ = true;  // inside its own run: the run will not touch it again
      return;
    }
  }
  // Taken by a RequestStop(), which runs it elsewhere now or ran it: wait for its last
  // access.
  WaitUntilDone(callback);
}

}  // namespace spindle::internal
