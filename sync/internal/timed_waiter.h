// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_
#define SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_

#include <atomic>
#include <chrono>

#include "fiber/internal/atomic.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/local_storage.h"
#include "fiber/internal/wait_types.h"
#include "runtime/internal/base/parker.h"
#include "sync/internal/stop_state.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// One wait for one wake-up, with an optional deadline and an optional cancellation: the
// timed park that the synchronization primitives build on. Its one atomic state goes
// from waiting to notified, timed out or cancelled, exactly once: a Notify() racing the
// deadline and a cancellation wakes the waiter exactly once and every side learns who
// won. A fiber waiter parks (its worker runs other fibers) and a TimerWorker timer
// enforces the deadline; a plain-thread waiter futex-waits with a timeout. A cancellation
// runs the waiter's callback (registered on the StopState for the wait's duration) on
// the cancelling thread, which flips the state as a Notify() would.
//
// Construct it on the waiting side, publish it where a notifier can find it (a wait
// queue), then call WaitUntil() once. Notify() may be called by any thread, at most
// while the waiter is alive: a notifier finds it through a structure that the waiter
// leaves before WaitUntil() returns. Not copyable or movable.
class TimedWaiter {
 public:
  using Result = WaitResult;  // kNotified, kTimedOut, kCancelled (wait_types.h)

  TimedWaiter();
  TimedWaiter(const TimedWaiter&) = delete;
  TimedWaiter& operator=(const TimedWaiter&) = delete;

  // Blocks until Notify() or `deadline` (MonotonicDeadline::None(): no deadline).
  // A fiber waiter is shown by the fiber dump as waiting for `kind` (unless a
  // ScopedWaitKind on it names the wait). With `limits` (an interruptible wait: those of
  // the caller's execution context, CurrentWaitLimits()), it also ends at their deadline
  // if that comes first (kTimedOut), and when their stop is requested, before the wait
  // or during it (kCancelled). `object` is what a fiber waiter waits on, for the dump,
  // the deadlock report and the debugger (FiberEntity::wait_object); null if none.
  Result WaitUntil(MonotonicDeadline deadline, WaitKind kind = WaitKind::kOther,
                   const WaitLimits* limits = nullptr, const void* object = nullptr) {
    object_ = object;
    if (limits != nullptr) return WaitInterruptibly(deadline, kind, limits);
    return fiber_ != nullptr ? WaitAsFiber(deadline, kind) : WaitAsThread(deadline);
  }

  // Wakes the waiter unless it has already timed out, been cancelled or been notified.
  // True if this call is the one that woke it.
  bool Notify();

  // Notify() for a caller that holds a lock which the woken waiter takes before it
  // returns (a channel's): a fiber waiter that is parked already is made Ready but not
  // queued; it comes back in `*to_queue`, for the caller to QueueReadyFiber() once it
  // has released its lock (the fiber cannot run before, so the waiter stays alive).
  // `*to_queue` is null otherwise: a plain thread is woken at once, and a fiber not yet
  // parked sees the flip and does not park. True if this call won.
  bool NotifyDeferred(FiberEntity** to_queue);

 private:
  enum State : int { kWaiting, kNotified, kTimedOut, kCancelled };

  static void OnDeadline(void* waiter);
  static void OnCancel(StopState::Callback* node) noexcept;
  // Flips kWaiting -> `to` and wakes the waiter (either kind). Returns whether it won.
  bool Flip(int to);
  // Flips kWaiting -> `to` under the fiber's scheduler lock and queues the fiber if it
  // is parked. Returns whether the flip won.
  bool WinAndWakeFiber(int to);
  // The flip of WinAndWakeFiber(); the fiber to queue (if it was parked) in *to_queue.
  bool WinFiber(int to, FiberEntity** to_queue);
  Result WaitInterruptibly(MonotonicDeadline deadline, WaitKind kind,
                           const WaitLimits* limits);
  Result WaitAsFiber(MonotonicDeadline deadline, WaitKind kind);
  Result WaitAsThread(MonotonicDeadline deadline);
  Result ResultOf(int state) const;

  Atomic<int>& state() { return state_.word(); }

  static void OnDeadlineNode(TimerNode* node);

  Parker state_{kWaiting};  // its word is the State; a plain-thread waiter parks on it
  FiberEntity* const fiber_;  // null for a plain-thread waiter
  // A fiber waiter's deadline, armed in its worker's timer queue: nothing allocated.
  TimerNode deadline_node_;
  // Set by the deadline timer's callback after its last access to this object.
  Atomic<bool> deadline_callback_done_{false};
  // WaitUntil()'s `object`, for the park path.
  const void* object_ = nullptr;
  // Registered on the wait's StopState while it waits (an interruptible wait).
  StopState::Callback cancel_node_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_SYNC_INTERNAL_TIMED_WAITER_H_
