// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_MUTEX_H_
#define SPINDLE_SYNC_MUTEX_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A mutual-exclusion lock for fibers and plain threads alike: a fiber that has to wait
// parks (its worker runs other fibers), a plain thread blocks. Uncontended lock and
// unlock are one compare-and-swap each. Waiters get the lock in FIFO order: unlock()
// hands ownership straight to the oldest waiter, so a thread that re-locks in a loop
// cannot starve the others. Under heavy contention that hand-over costs a fiber switch
// per lock (a lock convoy); see the closing note of the sync issue for the measured
// cost and the planned Go-style barging with a starvation mode. Satisfies Lockable/TimedLockable, so std::lock_guard and
// std::unique_lock work. Thread-safe. Not recursive. Unlocking a mutex that is not
// locked, or destroying one that has waiters, stops the process with a message.
class Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() {
    std::uint32_t expected = kUnlocked;
    // acquire: pairs with the release in unlock(); the previous holder's writes are
    // visible in the critical section.
    if (state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
      return;
    }
    LockSlow(internal::TimerClock::time_point::max());
  }

  bool try_lock() {
    std::uint32_t expected = kUnlocked;
    // acquire: as in lock().
    return state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                          std::memory_order_relaxed);
  }

  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> timeout) {
    return try_lock_until(
        internal::TimerClock::now() +
        std::chrono::duration_cast<internal::TimerClock::duration>(timeout));
  }

  bool try_lock_until(internal::TimerClock::time_point deadline) {
    return try_lock() || LockSlow(deadline);
  }

  void unlock() {
    std::uint32_t expected = kLocked;
    // release: pairs with the acquire in lock()/try_lock().
    if (state_.compare_exchange_strong(expected, kUnlocked, std::memory_order_release,
                                       std::memory_order_relaxed)) {
      return;
    }
    UnlockSlow();
  }

 private:
  // kUnlocked -> kLocked on the fast path. kContended: locked, and waiters may be
  // queued, so unlock() takes the slow path and hands the lock over.
  enum : std::uint32_t { kUnlocked = 0, kLocked = 1, kContended = 2 };

  bool LockSlow(internal::TimerClock::time_point deadline);
  void UnlockSlow();

  std::atomic<std::uint32_t> state_{kUnlocked};
  internal::Spinlock lock_;          // guards waiters_ and the slow-path transitions
  internal::WaitQueue waiters_;      // guarded by lock_
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_MUTEX_H_
