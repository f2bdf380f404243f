// Copyright 2026 The Spindle Authors.
//
// Slow paths of Mutex. State transitions other than the fast paths' CAS happen under
// lock_:
//   lock, contended: 1 -> 2 (so the holder's unlock takes the slow path), then wait in
//     the queue; a waiter that is woken already owns the lock (state stays 1 or 2).
//   unlock, slow: with a waiter woken, ownership passes to it (state 1 if the queue is
//     now empty, else 2); with none, 0.
// No lost wake-up: the waiter links itself while holding lock_, after setting state 2;
// the holder's fast unlock (1 -> 0) then fails, so it takes lock_ and finds the waiter.
// If the fast unlock wins first (state was still 1), the waiter's 1 -> 2 CAS fails and
// it retries, now seeing 0.

#include "sync/mutex.h"

#include "glog/logging.h"
#include "runtime/internal/scheduling_group.h"

namespace spindle {

bool Mutex::LockSlow(internal::TimerClock::time_point deadline) {
  std::unique_lock<internal::Spinlock> guard(lock_);
  for (;;) {
    // relaxed: every transition except the fast paths' happens under lock_, and the
    // fast paths' CAS results are re-checked here.
    std::uint32_t state = state_.load(std::memory_order_relaxed);
    if (state == kUnlocked) {
      // acquire: as in lock(). Waiters may remain if their holder left by the fast path
      // before they marked the state contended: keep unlock() on the slow path then.
      if (state_.compare_exchange_strong(state, waiters_.empty() ? kLocked : kContended,
                                         std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
        return true;
      }
      continue;
    }
    if (state == kLocked &&
        !state_.compare_exchange_strong(state, kContended, std::memory_order_relaxed,
                                        std::memory_order_relaxed)) {
      continue;
    }
    // Woken means handed the lock by UnlockSlow(); the hand-over's Notify/Wait pair
    // (acq_rel / acquire in TimedWaiter) orders the previous holder's writes before us.
    return waiters_.Wait(guard, deadline) == internal::TimedWaiter::Result::kNotified;
  }
}

void Mutex::UnlockSlow() {
  internal::ReadyBatch batch;  // the woken fiber is queued after lock_ is released
  std::lock_guard<internal::Spinlock> guard(lock_);
  // relaxed: see LockSlow().
  const std::uint32_t state = state_.load(std::memory_order_relaxed);
  CHECK(state != kUnlocked) << "spindle::Mutex::unlock() on a mutex that is not locked";
  if (waiters_.WakeOne()) {
    // relaxed: ownership passes to the woken waiter; it is ordered by the hand-over.
    state_.store(waiters_.empty() ? kLocked : kContended, std::memory_order_relaxed);
  } else {
    // release: pairs with the acquire of the next locker.
    state_.store(kUnlocked, std::memory_order_release);
  }
}

}  // namespace spindle
