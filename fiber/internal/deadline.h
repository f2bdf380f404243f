// Copyright 2026 The Spindle Authors.
//
// The one deadline currency below the public API. The public calls take
// std::chrono::steady_clock time points and durations (and io::Deadline, the same
// type); each converts once, where it enters the library, into a MonotonicDeadline, and
// everything below (the timed waits, the wait queues, the execution context's limits,
// the timers, the parker and the idle path) passes that one type down to the futex.
// It is a point on one clock (CLOCK_MONOTONIC, std::chrono::steady_clock's epoch) with
// a value for "none", instead of raw nanoseconds with -1 or a time_point whose max()
// means "none".

#ifndef SPINDLE_FIBER_INTERNAL_DEADLINE_H_
#define SPINDLE_FIBER_INTERNAL_DEADLINE_H_

#include <chrono>
#include <climits>
#include <cstdint>
#include <ctime>

#ifdef SPINDLE_MODEL_CHECK
#include "fiber/internal/atomic.h"  // ModelClockNs(): the model's clock
#endif

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

// A point on MonotonicNowNs()'s clock, or none. A plain value; ordered (None() is the
// latest), so the earlier of two deadlines is std::min of them.
class MonotonicDeadline {
 public:
  using Clock = std::chrono::steady_clock;

  // No deadline: wait until woken.
  static constexpr MonotonicDeadline None() { return MonotonicDeadline(kNone); }
  // Already passed: look, but do not block.
  static constexpr MonotonicDeadline Expired() { return MonotonicDeadline(0); }
  static constexpr MonotonicDeadline AtNs(std::int64_t ns) {
    return MonotonicDeadline(ns < 0 ? 0 : ns);
  }
  // The conversion at the API edge. time_point::max() is None(); a point before the
  // clock's epoch is Expired().
  static constexpr MonotonicDeadline At(Clock::time_point t) {
    if (t == Clock::time_point::max()) return None();
    return AtNs(std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch())
                    .count());
  }
  // `d` from now; a zero or negative duration is Expired(), one too long for the clock
  // None().
  static MonotonicDeadline In(std::chrono::nanoseconds d) {
    if (d.count() <= 0) return Expired();
    const std::int64_t now = MonotonicNowNs();
    return d.count() >= kNone - now ? None() : AtNs(now + d.count());
  }

  constexpr bool is_none() const { return ns_ == kNone; }
  // The point in nanoseconds; INT64_MAX for None().
  constexpr std::int64_t ns() const { return ns_; }
  constexpr bool PassedAt(std::int64_t now_ns) const { return now_ns >= ns_; }
  bool Passed() const { return !is_none() && PassedAt(MonotonicNowNs()); }
  // The conversion back, for an API that reports a deadline: None() is
  // time_point::max().
  constexpr Clock::time_point time_point() const {
    return is_none() ? Clock::time_point::max()
                     : Clock::time_point(std::chrono::duration_cast<Clock::duration>(
                           std::chrono::nanoseconds(ns_)));
  }
  // This deadline moved `d` later (a periodic timer's next round); None() stays None().
  constexpr MonotonicDeadline Plus(std::chrono::nanoseconds d) const {
    if (is_none() || d.count() >= kNone - ns_) return None();
    return AtNs(ns_ + d.count());
  }

  friend constexpr bool operator==(MonotonicDeadline a, MonotonicDeadline b) {
    return a.ns_ == b.ns_;
  }
  friend constexpr bool operator!=(MonotonicDeadline a, MonotonicDeadline b) {
    return a.ns_ != b.ns_;
  }
  friend constexpr bool operator<(MonotonicDeadline a, MonotonicDeadline b) {
    return a.ns_ < b.ns_;
  }

 private:
  static constexpr std::int64_t kNone = INT64_MAX;
  constexpr explicit MonotonicDeadline(std::int64_t ns) : ns_(ns) {}
  std::int64_t ns_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_DEADLINE_H_
