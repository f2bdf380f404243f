// Copyright 2026 The Spindle Authors.

#include "sync/internal/stop_state.h"

#include <thread>

namespace spindle::internal {

bool StopState::RequestStop() {
  lock_.lock();
  // relaxed: changed only under lock_, which we hold.
  if (requested_.load(std::memory_order_relaxed)) {
    lock_.unlock();
    return false;
  }
  // release: pairs with stop_requested()'s acquire load. Under lock_, so an Add() after
  // this sees it (step 2 of the header's protocol).
  requested_.store(true, std::memory_order_release);
  while (Callback* callback = head_) {
    head_ = callback->next;
    (head_ != nullptr ? head_->prev : tail_) = nullptr;
    callback->linked = false;
    // Taken: from here its Remove() waits for `done` instead of unlinking it.
    lock_.unlock();
    callback->run(callback);
    // release: pairs with Remove()'s acquire load; nothing touches the callback after
    // this store (its owner may free it at once).
    callback->done.store(true, std::memory_order_release);
    lock_.lock();
  }
  lock_.unlock();
  return true;
}

bool StopState::Add(Callback* callback) {
  SpinlockGuard guard(lock_);
  // relaxed: changed only under lock_, which we hold.
  if (requested_.load(std::memory_order_relaxed)) return false;
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
  }
  // Taken by a RequestStop(), which runs it now or ran it: wait for its last access.
  // acquire: pairs with the release store after run().
  while (!callback->done.load(std::memory_order_acquire)) std::this_thread::yield();
}

}  // namespace spindle::internal
