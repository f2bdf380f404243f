// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_SPINLOCK_H_
#define SPINDLE_FIBER_INTERNAL_SPINLOCK_H_

#include <sched.h>

#include <atomic>
#include <mutex>

#include "absl/base/thread_annotations.h"

#ifdef SPINDLE_MODEL_CHECK
#include "fiber/internal/atomic.h"  // ModelMutex: the Spinlock of a model build
#endif

namespace spindle::internal {

// Hints the CPU that the caller is in a spin-wait loop.
inline void CpuRelax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

#ifdef SPINDLE_MODEL_CHECK
// The model build (atomic.h): a Relacy mutex of the same interface (model_atomic.h).
using Spinlock = ModelMutex;
#else
// A test-and-test-and-set spinlock for critical sections of a few dozen instructions,
// such as a fiber's scheduler lock. Thread-safe. Not recursive. A waiter that has spun
// for a few microseconds yields its CPU between looks (sched_yield), so a holder
// preempted on an oversubscribed machine gets to run. It never parks: holding
// it across anything that may block or switch fibers is a bug, except for the one
// documented hand-over in FiberEntity (the lock taken by a fiber before it suspends is
// released by the context it switches to). Satisfies Lockable, so std::lock_guard and
// std::unique_lock work; it is also a capability for clang's thread-safety analysis
// (-Wthread-safety), so fields it protects are declared ABSL_GUARDED_BY(it). Lock it
// with SpinlockGuard (or UniqueSpinlockGuard where a wait releases it) so the analysis
// sees the critical section: the standard guards carry no annotations.
class ABSL_LOCKABLE Spinlock {
 public:
  Spinlock() = default;
  Spinlock(const Spinlock&) = delete;
  Spinlock& operator=(const Spinlock&) = delete;

  void lock() noexcept ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    // acquire: pairs with the release store in unlock(), so the critical section of the
    // previous holder happens-before ours.
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }

  bool try_lock() noexcept ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    // relaxed load: only a hint that saves a contended cache-line write; the exchange
    // decides. acquire exchange: as in lock().
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }

  void unlock() noexcept ABSL_UNLOCK_FUNCTION() {
    // release: publishes the critical section to the next acquirer in lock().
    locked_.store(false, std::memory_order_release);
  }

  // True while some thread holds the lock. A snapshot, for assertions only.
  bool IsLocked() const noexcept {
    // relaxed: an assertion on a lock the caller itself is supposed to hold; the
    // caller's own acquire already ordered it.
    return locked_.load(std::memory_order_relaxed);
  }

 private:
  void LockSlow() noexcept {
    do {
      // relaxed spin on a shared cache line until it looks free; the exchange below is
      // the acquire. After kSpinsBeforeYield pauses the holder is probably not running
      // (preempted: more runnable threads than CPUs), so give it our CPU instead of
      // burning the rest of our time slice.
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < kSpinsBeforeYield) {
          CpuRelax();
        } else {
          sched_yield();
        }
      }
    } while (locked_.exchange(true, std::memory_order_acquire));
  }

  // A critical section is a few dozen instructions: a holder that keeps the lock for
  // 256 pauses (a few microseconds) has lost its CPU.
  static constexpr int kSpinsBeforeYield = 256;

  std::atomic<bool> locked_{false};
};
#endif  // SPINDLE_MODEL_CHECK

// std::lock_guard<Spinlock> that clang's thread-safety analysis can see: the lock is
// held from construction to the end of the scope. Same code as std::lock_guard.
// Owned by one scope of one thread.
class ABSL_SCOPED_LOCKABLE SpinlockGuard {
 public:
  explicit SpinlockGuard(Spinlock& lock) noexcept ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {
    lock_.lock();
  }
  // Takes over a lock the caller already holds (after a successful try_lock()).
  SpinlockGuard(Spinlock& lock, std::adopt_lock_t) noexcept ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock)
      : lock_(lock) {}
  ~SpinlockGuard() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  SpinlockGuard(const SpinlockGuard&) = delete;
  SpinlockGuard& operator=(const SpinlockGuard&) = delete;

 private:
  Spinlock& lock_;
};

#ifndef SPINDLE_MODEL_CHECK  // no model waits on a WaitQueue
// A std::unique_lock<Spinlock>, visible to the analysis, for critical sections that
// wait: a WaitQueue takes the std::unique_lock (unique()) and releases it while the
// fiber is parked, holding it again on return, so to the analysis the lock is held
// throughout. unlock() and lock() in between are tracked. Owned by one scope of one
// thread; the lock must be held (again) whenever unique() is handed out.
class ABSL_SCOPED_LOCKABLE UniqueSpinlockGuard {
 public:
  explicit UniqueSpinlockGuard(Spinlock& lock) noexcept ABSL_EXCLUSIVE_LOCK_FUNCTION(lock)
      : lock_(lock) {}
  ~UniqueSpinlockGuard() ABSL_UNLOCK_FUNCTION() {}
  UniqueSpinlockGuard(const UniqueSpinlockGuard&) = delete;
  UniqueSpinlockGuard& operator=(const UniqueSpinlockGuard&) = delete;

  void lock() noexcept ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }
  void unlock() noexcept ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }

  std::unique_lock<Spinlock>& unique() noexcept { return lock_; }

 private:
  std::unique_lock<Spinlock> lock_;
};
#endif  // SPINDLE_MODEL_CHECK

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_SPINLOCK_H_
