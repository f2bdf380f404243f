// Copyright 2026 The Spindle Authors.
//
// How a thread waits for another: one parker, until one kind of deadline
// (MonotonicDeadline, fiber/internal/deadline.h). Every thread the runtime blocks (a
// worker in its WaitSlot, a plain thread in a TimedWaiter, a TimerWorker between
// rounds) parks through Parker::ParkWhile, on one futex word whose meaning belongs to
// the caller (a wake-up count, a state, a sequence); the caller's protocol decides what
// to wait for, the parker only how.

#ifndef SPINDLE_RUNTIME_INTERNAL_PARKER_H_
#define SPINDLE_RUNTIME_INTERNAL_PARKER_H_

#include <atomic>
#include <climits>
#include <cstdint>

#include "fiber/internal/atomic.h"
#include "fiber/internal/deadline.h"
#include "runtime/internal/base/futex.h"

namespace spindle::internal {

// One futex word that threads park on. The word's value is the caller's protocol; the
// parker sleeps while it still holds what the caller last saw, so a change made before
// the sleep (and followed by Unpark) is never slept through: the kernel compares the
// word and queues the sleeper atomically. Thread-safety: any thread may park, change the
// word and unpark; the word must outlive every call (Unpark on a word that is gone would
// at worst wake an unrelated futex user spuriously, which they all tolerate).
class Parker {
 public:
  explicit constexpr Parker(int initial = 0) : word_(initial) {}
  Parker(const Parker&) = delete;
  Parker& operator=(const Parker&) = delete;

  Atomic<int>& word() { return word_; }
  const Atomic<int>& word() const { return word_; }

  // Sleeps while word() == `expected`, until unparked, `deadline`, or spuriously.
  // Returns false only when `deadline` had passed (it then does not sleep); true
  // otherwise, whether or not the word changed: the caller re-reads its word and
  // decides. Never sleeps past `deadline`.
  bool ParkWhile(int expected, MonotonicDeadline deadline) {
    if (deadline.is_none()) {
      FutexWait(&word_, expected);
      return true;
    }
    if (deadline.Passed()) return false;
    FutexWaitUntil(&word_, expected, deadline.ns());
    return true;
  }

  // Wakes up to `count` threads parked on the word (call after changing it).
  void Unpark(int count = 1) { FutexWake(&word_, count); }
  void UnparkAll() { FutexWake(&word_, INT_MAX); }

 private:
  Atomic<int> word_;
};

// A signal given once, between OS threads: a thread Set()s it once it has set itself up,
// and the thread that started it Wait()s for that (FiberWorker, TimerWorker, HogMonitor).
// Thread-safe; Set() once.
class OneShotSignal {
 public:
  void Set() {
    // release: pairs with Wait()'s acquire load; what the setter did before is seen
    // after Wait() returns.
    parker_.word().store(1, std::memory_order_release);
    parker_.UnparkAll();
  }
  void Wait() {
    // The kernel compares the word before it sleeps: a Set() between our load and the
    // sleep makes the park return at once.
    while (parker_.word().load(std::memory_order_acquire) == 0) {
      parker_.ParkWhile(0, MonotonicDeadline::None());
    }
  }

 private:
  Parker parker_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_PARKER_H_
