// Copyright 2026 The Spindle Authors.
//
// Timers: call a function at a time point, once or periodically. Callable from fibers
// and from plain threads while the runtime runs. Callbacks run in a new fiber of the
// caller's scheduling group (or the default pool's groups in turn, from a plain thread).
//
//   std::uint64_t id = spindle::SetTimer(now + 100ms, [] { Expire(); });
//   ...
//   if (spindle::KillTimer(id)) { /* Expire() will not run */ }
//
// Every id from SetTimer must be given to exactly one of KillTimer or DetachTimer.

#ifndef SPINDLE_TIMER_TIMER_H_
#define SPINDLE_TIMER_TIMER_H_

#include <chrono>
#include <cstdint>

#include "absl/functional/any_invocable.h"

namespace spindle {

// The clock of every timer's time points: std::chrono::steady_clock.
using TimerClock = std::chrono::steady_clock;

// Calls `callback` once, at `at` or soon after (never before).
std::uint64_t SetTimer(TimerClock::time_point at, absl::AnyInvocable<void()> callback);

// Calls `callback` at `at`, then every `interval` (> 0). Calls never overlap: the next
// expiry is `interval` after the previous *expiry*, armed when the previous call
// returns, so lateness does not accumulate; a call that overran its period is
// followed at once by the next (none is skipped).
std::uint64_t SetTimer(TimerClock::time_point at, TimerClock::duration interval,
                       absl::AnyInvocable<void()> callback);

// Cancels the timer and releases `id`. Returns true if this prevented a call that would
// otherwise have started (a one-shot timer that had not fired, or any periodic timer);
// false if the one-shot call had already started (it may still be running). No call
// starts after KillTimer returns. `id` is gone afterwards: a second KillTimer or
// DetachTimer of it touches freed memory (the id is the timer's address, reused by a
// later timer), and KillTimer(0) stops the process. TimerKiller owns an id for you.
bool KillTimer(std::uint64_t id);

// Releases `id` and lets the timer run on (a periodic one for the rest of the runtime).
void DetachTimer(std::uint64_t id);

// SetTimer + DetachTimer.
void SetDetachedTimer(TimerClock::time_point at, absl::AnyInvocable<void()> callback);
void SetDetachedTimer(TimerClock::time_point at, TimerClock::duration interval,
                      absl::AnyInvocable<void()> callback);

// Kills the timer it holds when destroyed (unless Release()d). Movable, not copyable.
// Thread-safety: one TimerKiller is used by one thread at a time; the timer's callback
// may be running on another thread when it is killed, and KillTimer() does not wait
// for it (it only guarantees that no call starts afterwards).
class TimerKiller {
 public:
  TimerKiller() = default;
  // Holds `id`, from SetTimer() and given to neither KillTimer() nor DetachTimer(): the
  // TimerKiller now owns that duty. An id given to one of them already is not detected
  // (it names freed memory; killing it then is undefined).
  explicit TimerKiller(std::uint64_t id) : id_(id) {}
  ~TimerKiller() { Reset(); }
  // Moving hands the id over (`other` then holds none). Assigning first kills the timer
  // this one held.
  TimerKiller(TimerKiller&& other) noexcept : id_(other.id_) { other.id_ = 0; }
  TimerKiller& operator=(TimerKiller&& other) noexcept {
    Reset(other.id_);
    other.id_ = 0;
    return *this;
  }
  TimerKiller(const TimerKiller&) = delete;
  TimerKiller& operator=(const TimerKiller&) = delete;

  // Kills the held timer (if any) and holds `id` instead.
  void Reset(std::uint64_t id = 0) {
    if (id_ != 0) KillTimer(id_);
    id_ = id;
  }
  // Gives the id back to the caller without killing it.
  std::uint64_t Release() {
    const std::uint64_t id = id_;
    id_ = 0;
    return id;
  }

 private:
  std::uint64_t id_ = 0;
};

}  // namespace spindle

#endif  // SPINDLE_TIMER_TIMER_H_
