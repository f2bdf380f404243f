// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_MUTEX_H_
#define SPINDLE_SYNC_MUTEX_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A mutual-exclusion lock for fibers and plain threads alike: a fiber that has to wait
// parks (its worker runs other fibers), a plain thread blocks. Uncontended lock and
// unlock are one atomic read-modify-write each.
//
// Fairness follows Go's sync.Mutex. Normally a woken waiter competes with newcomers
// (who may also spin briefly), so a running fiber re-locks without a switch and there
// is no lock convoy. A waiter that has waited more than 1 ms switches the mutex to
// hand-off mode: unlock() then passes ownership straight to the oldest waiter and
// newcomers queue behind it, so no waiter starves; the mode ends when a waiter is handed
// the lock after less than 1 ms of waiting or is the last one.
//
// Satisfies Lockable/TimedLockable, so std::lock_guard and std::unique_lock work.
// Thread-safe. Not recursive. Unlocking a mutex that is not locked, or destroying one
// that has waiters, stops the process with a message.
class Mutex {
 public:
  Mutex() = default;
  // Waits for an unlock() still finishing inside the mutex (see UnlockSlow()): a thread
  // that took and released the lock after it may destroy the mutex at once, as with
  // std::mutex.
  ~Mutex();
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  // Takes the lock, waiting as long as it takes: a fiber parks, a thread blocks. Not
  // interruptible (see try_lock_until()). Locking a mutex the caller holds already
  // deadlocks; with --fiber_deadlock_report_s the deadlock report names it (a fiber
  // waiting for a mutex it holds is a cycle of one).
  void lock() {
    std::uint32_t expected = 0;
    // acquire: pairs with the release in unlock(); the previous holder's writes are
    // visible in the critical section.
    if (!state_.compare_exchange_strong(expected, kLocked, std::memory_order_acquire,
                                        std::memory_order_relaxed)) {
      LockSlow(std::chrono::steady_clock::time_point::max(), nullptr);  // not interruptible
    }
    RecordOwner();
  }

  // Takes the lock if it is free now; never waits. False if it is held, or while the
  // mutex is in hand-off mode (the lock then goes to the oldest waiter, even if it is
  // free at this instant).
  bool try_lock() {
    // relaxed: a hint; the CAS below decides.
    std::uint32_t state = state_.load(std::memory_order_relaxed);
    while ((state & (kLocked | kStarving)) == 0) {
      // acquire: as in lock().
      if (state_.compare_exchange_weak(state, state | kLocked, std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        RecordOwner();
        return true;
      }
    }
    return false;
  }

  // try_lock_until() with a deadline `timeout` from now (steady clock).
  template <class Rep, class Period>
  bool try_lock_for(std::chrono::duration<Rep, Period> timeout) {
    return try_lock_until(
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }

  // True with the lock; false if `deadline` came first or the caller's execution
  // context was cancelled while it waited (interruptible, as Event::WaitUntil(); lock()
  // is not).
  bool try_lock_until(std::chrono::steady_clock::time_point deadline) {
    if (try_lock()) return true;
    if (!LockSlow(deadline, internal::CurrentWaitLimits())) return false;
    RecordOwner();
    return true;
  }

  // Releases the lock, waking a waiter to compete for it (in hand-off mode, handing it
  // to the oldest waiter). Never parks. Unlocking a mutex that is not locked stops the
  // process with a message. Another fiber or thread than the one that locked it may
  // unlock it (as with Go's sync.Mutex; the holder recorded for debugging is then
  // simply cleared).
  void unlock() {
    // relaxed: a record for debuggers and the deadlock report, not a synchronization
    // (see owner_); cleared before the release, so it never clears the next holder's.
    owner_.store(0, std::memory_order_relaxed);
    // relaxed: a first guess for the CAS (under contention other bits are usually set,
    // and a CAS bound to fail would cost a locked instruction for nothing).
    std::uint32_t state = state_.load(std::memory_order_relaxed);
    // release: pairs with the acquiring CAS of the next owner. Only from exactly
    // kLocked: otherwise UnlockSlow() releases it and decides on a wake-up in one CAS.
    if (state == kLocked && state_.compare_exchange_strong(state, 0, std::memory_order_release,
                                                           std::memory_order_relaxed)) {
      return;
    }
    UnlockSlow(state);
  }

 private:
  // The state word:
  //
  //   31                              3    2        1       0
  //   +-------------------------------+---------+-------+--------+
  //   | waiters linked in waiters_    | starving| woken | locked |
  //   +-------------------------------+---------+-------+--------+
  //
  // locked:   held.
  // woken:    a waiter has been woken to compete, or a newcomer is spinning: unlock()
  //           need not wake another.
  // starving: hand-off mode (see the class comment).
  // waiters:  changed only under lock_, together with linking/unlinking in waiters_.
  static constexpr std::uint32_t kLocked = 1;
  static constexpr std::uint32_t kWoken = 2;
  static constexpr std::uint32_t kStarving = 4;
  static constexpr int kWaiterShift = 3;
  static constexpr std::uint32_t kOneWaiter = 1u << kWaiterShift;
  static_assert((kLocked | kWoken | kStarving) < kOneWaiter, "flag bits overlap the count");

  bool LockSlow(std::chrono::steady_clock::time_point deadline,
                const internal::WaitLimits* limits);
  void RecordOwner() {
    // relaxed: see owner_.
    owner_.store(internal::CurrentLockOwnerId(), std::memory_order_relaxed);
  }
  void UnlockSlow(std::uint32_t state);

  std::atomic<std::uint32_t> state_{0};
  // unlock() calls that will still touch this object after releasing kLocked (to wake a
  // waiter), between that release and their last access; the destructor waits for 0.
  std::atomic<std::uint32_t> unlockers_{0};
  internal::Spinlock lock_;  // guards waiters_ and the waiter count (in state_)
  internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
  // The holder, for debugging only: the id of the fiber that locked it
  // (internal::CurrentLockOwnerId(): kLockOwnerThread for a plain thread), 0 while it
  // is free. Written by the holder right after it takes the lock and cleared right
  // before it releases it, relaxed: a reader (the deadlock report, tools/gdb/spindle.py
  // through spindle_debug_info) may see it a moment late or early, so the report acts
  // only on waits that have lasted seconds and re-reads before it reports. Its cost:
  // one out-of-line thread-local read and two stores to a line the lock's own atomic
  // operations own already (docs/performance.md#lock-owners).
  std::atomic<std::uint64_t> owner_{0};

  friend struct MutexDebugLayout;  // mutex.cc: owner_'s offset for debuggers
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_MUTEX_H_
