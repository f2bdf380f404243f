// Copyright 2026 The Spindle Authors.
//
// How a thread waits for another: one deadline type and one parker. Every thread the
// runtime blocks (a worker in its WaitSlot, a plain thread in a TimedWaiter, a
// TimerWorker between rounds) parks through Parker::ParkWhile, on one futex word whose
// meaning belongs to the caller (a wake-up count, a state, a sequence); the caller's
// protocol decides what to wait for, the parker only how. Deadlines are Deadline values
// on one clock (CLOCK_MONOTONIC, std::chrono::steady_clock's epoch) with a value for
// "none", instead of raw nanoseconds with -1.

#ifndef SPINDLE_RUNTIME_INTERNAL_PARKER_H_
#define SPINDLE_RUNTIME_INTERNAL_PARKER_H_

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

#include "fiber/internal/atomic.h"
#include "runtime/internal/base/futex.h"

namespace spindle::internal {

// Monotonic nanoseconds (CLOCK_MONOTONIC: std::chrono::steady_clock's epoch). The one
// clock of every deadline in the runtime.
inline std::int64_t MonotonicNowNs() {
#ifdef SPINDLE_MODEL_CHECK
  return ModelClockNs();  // the model's clock (model_atomic.h)
#else
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * std::int64_t{1000000000} + now.tv_nsec;
#endif
}

// A point on MonotonicNowNs()'s clock, or none. A plain value.
class Deadline {
 public:
  // No deadline: wait until woken.
  static constexpr Deadline None() { return Deadline(kNone); }
  // Already passed: look, but do not block.
  static constexpr Deadline Expired() { return Deadline(0); }
  static constexpr Deadline AtNs(std::int64_t ns) { return Deadline(ns < 0 ? 0 : ns); }
  // time_point::max() is None().
  static Deadline At(std::chrono::steady_clock::time_point t) {
    if (t == std::chrono::steady_clock::time_point::max()) return None();
    return AtNs(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
                    .count());
  }
  // `d` from now; a zero or negative duration is Expired().
  static Deadline In(std::chrono::nanoseconds d) {
    return d.count() <= 0 ? Expired() : AtNs(MonotonicNowNs() + d.count());
  }

  bool is_none() const { return ns_ == kNone; }
  // The point in nanoseconds; INT64_MAX for None().
  std::int64_t ns() const { return ns_; }
  bool PassedAt(std::int64_t now_ns) const { return now_ns >= ns_; }
  bool Passed() const { return !is_none() && PassedAt(MonotonicNowNs()); }

  friend bool operator==(Deadline a, Deadline b) { return a.ns_ == b.ns_; }
  friend bool operator!=(Deadline a, Deadline b) { return a.ns_ != b.ns_; }

 private:
  static constexpr std::int64_t kNone = INT64_MAX;
  constexpr explicit Deadline(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_;
};

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
  bool ParkWhile(int expected, Deadline deadline) {
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

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_PARKER_H_
