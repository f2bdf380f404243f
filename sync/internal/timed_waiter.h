// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_
#define SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_

#include <atomic>
#include <chrono>

#include "fiber/internal/atomic.h"
#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/idle/parker.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// One wait for one wake-up, with an optional deadline: the timed park that the
// synchronization primitives build on. Its one atomic state goes from waiting to
// notified or to timed out, exactly once: a Notify() racing the deadline wakes the
// waiter exactly once and both sides learn who won. A fiber waiter parks (its worker
// runs other fibers) and a TimerWorker timer enforces the deadline; a plain-thread
// waiter futex-waits with a timeout.
//
// Construct it on the waiting side, publish it where a notifier can find it (a wait
// queue), then call WaitUntil() once. Notify() may be called by any thread, at most
// while the waiter is alive: a notifier finds it through a structure that the waiter
// leaves before WaitUntil() returns. Not copyable or movable.
class TimedWaiter {
 public:
  enum class Result { kNotified, kTimedOut };

  TimedWaiter();
  TimedWaiter(const TimedWaiter&) = delete;
  TimedWaiter& operator=(const TimedWaiter&) = delete;

  // Blocks until Notify() or `deadline` (TimerClock::time_point::max(): no deadline).
  // A fiber waiter is shown by the fiber dump as waiting for `kind` (unless a
  // ScopedWaitKind on it names the wait).
  Result WaitUntil(TimerClock::time_point deadline, WaitKind kind = WaitKind::kOther);

  // Wakes the waiter unless it has already timed out (or been notified). True if this
  // call is the one that woke it.
  bool Notify();

 private:
  enum State : int { kWaiting, kNotified, kTimedOut };

  static void OnDeadline(void* waiter);
  // Flips kWaiting -> `to` under the fiber's scheduler lock and queues the fiber if it
  // is parked. Returns whether the flip won.
  bool WinAndWakeFiber(int to);
  Result WaitAsFiber(TimerClock::time_point deadline, WaitKind kind);
  Result WaitAsThread(TimerClock::time_point deadline);

  Atomic<int>& state() { return state_.word(); }

  static void OnDeadlineNode(TimerNode* node);

  Parker state_{kWaiting};  // its word is the State; a plain-thread waiter parks on it
  FiberEntity* const fiber_;  // null for a plain-thread waiter
  // A fiber waiter's deadline, armed in its worker's timer queue: nothing allocated.
  TimerNode deadline_node_;
  // Set by the deadline timer's callback after its last access to this object.
  Atomic<bool> deadline_callback_done_{false};
};

}  // namespace spindle::internal

#endif  // SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_
