// Copyright 2026 The Spindle Authors.
//
// set_ changes only under lock_, and a waiter checks it and links itself under lock_,
// so Set() either finds the waiter linked or the waiter sees set_ and does not wait.
// The unlocked fast check in WaitUntil() is an acquire load that pairs with Set()'s
// release store.

#include "sync/event.h"

#include <mutex>

#include "runtime/internal/base/ready_batch.h"

namespace spindle {

Event::~Event() {
  // A waiter that saw set_ on the unlocked fast path may destroy the event while
  // Set() still holds lock_ (waking the others); Set() touches nothing after it
  // releases lock_.
  internal::SpinlockGuard guard(lock_);
}

void Event::Set() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  set_.store(true, std::memory_order_release);  // release: pairs with IsSet()/WaitUntil()
  waiters_.WakeAll();
}

bool Event::Await(std::chrono::steady_clock::time_point deadline,
                  const internal::WaitLimits* limits) {
  if (IsSet()) return true;
  const auto until = internal::MonotonicDeadline::At(deadline);  // the API's edge
  internal::UniqueSpinlockGuard guard(lock_);
  while (!set_.load(std::memory_order_relaxed)) {  // relaxed: under lock_
    if (waiters_.Wait(guard.unique(), until, internal::WaitKind::kEvent, limits, this) !=
        internal::WaitResult::kNotified) {
      return set_.load(std::memory_order_relaxed);  // relaxed: under lock_
    }
  }
  return true;
}

}  // namespace spindle
