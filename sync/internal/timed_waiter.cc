// Copyright 2026 The Spindle Authors.
//
// Why a wake-up is delivered exactly once, and nobody touches a waiter that is gone.
//
// Fiber waiter:
//   1. Arm a deadline timer (deadline_node_, in this worker's TimerQueue; OnDeadline).
//   2. Take our scheduler lock. If state_ is no longer kWaiting (someone already won),
//      unlock and go on. Otherwise ParkFiber(): we become Waiting and the lock is released by
//      the context we switch to, once we are saved.
//   3. Woken (or never parked): take the timer out of its queue. If it is no longer
//      there, it was popped to fire, so wait for OnDeadline to report it is done with
//      us. Return the winner.
// Waker (Notify, or OnDeadline at the deadline):
//   a. Take the fiber's scheduler lock; flip state_ from kWaiting (CAS, acq_rel).
//   b. If we won and the fiber is Waiting, make it Ready; unlock; queue it.
// Exactly one CAS wins. The lock makes (2) and (a-b) mutually exclusive: if the waker
// comes first, step 2 sees the flip and does not park; if step 2 parks first, the
// waker sees a Waiting fiber and queues it. A parked fiber cannot run (and so cannot
// return and free this object or its stack) until it is queued, which is the waker's
// last step touching it. OnDeadline sets deadline_callback_done_ after its last access,
// and step 3 waits for that flag whenever the timer fired.
//
// Thread waiter: park on state_ (a Parker's word) until it changes or the deadline
// passes; on the deadline, flip kWaiting -> kTimedOut ourselves. Notify flips and
// unparks; an unpark of a word that is gone only risks a spurious wake-up elsewhere.
//
// Cancellation (an interruptible wait, with a StopState): before step 1 (or before the
// thread waiter's park), register cancel_node_ on the StopState. Its callback
// (OnCancel) runs on the cancelling thread and is one more waker: it flips kWaiting ->
// kCancelled as Notify() would (a fiber waiter: steps a-b). If the stop was requested
// before the registration, the waiter makes that flip itself, before it parks (a fiber:
// through a-b, which sees it Running and queues nothing; step 2 then finds the flip).
// Whichever of Notify(), the deadline and the cancellation flips first is the result;
// the others' flips fail and wake nothing. After the wait (after step 3), the waiter
// unregisters the node; StopState::Remove() waits for a callback in progress to be done
// with it, so no cancellation touches the waiter after WaitUntil() returns.

#include "sync/internal/timed_waiter.h"

#include <algorithm>
#include <mutex>
#include <thread>

#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/seams/chaos.h"

namespace spindle::internal {
namespace {

FiberEntity* CurrentFiberOrNull() {
  FiberEntity* self = GetCurrentFiberEntity();
  return self != nullptr && !self->is_master() ? self : nullptr;
}

}  // namespace

TimedWaiter::TimedWaiter() : fiber_(CurrentFiberOrNull()) {}

TimedWaiter::Result TimedWaiter::WaitInterruptibly(MonotonicDeadline deadline,
                                                   WaitKind kind, const WaitLimits* limits) {
  deadline = std::min(deadline, limits->deadline);
  StopState* stop = limits->stop;
  if (stop != nullptr) {
    cancel_node_.run = &TimedWaiter::OnCancel;
    // The acquire load spares a cancelled context's waits the state's lock.
    if (stop->stop_requested() || !stop->Add(&cancel_node_)) {
      // Requested already: flip it ourselves (a notifier may have won meanwhile), and
      // there is nothing to unregister. A fiber lets the others of its worker run
      // first: a loop that retries a wait in a cancelled context must not keep its
      // worker from the fiber that would end the loop.
      Flip(kCancelled);
      stop = nullptr;
      if (fiber_ != nullptr) YieldFiber(fiber_);
    }
  }
  const Result result =
      fiber_ != nullptr ? WaitAsFiber(deadline, kind) : WaitAsThread(deadline);
  // Waits for a cancellation that took the node to be done with it.
  if (stop != nullptr) stop->Remove(&cancel_node_);
  return result;
}

bool TimedWaiter::Notify() { return Flip(kNotified); }

bool TimedWaiter::Flip(int to) {
  if (fiber_ != nullptr) return WinAndWakeFiber(to);
  int expected = kWaiting;
  // acq_rel: pairs with the waiter's acquire loads; one flip wins.
  if (!state().compare_exchange_strong(expected, to, std::memory_order_acq_rel)) {
    return false;
  }
  state_.Unpark();
  return true;
}

void TimedWaiter::OnCancel(StopState::Callback* node) noexcept {
  reinterpret_cast<TimedWaiter*>(reinterpret_cast<char*>(node) -
                                 offsetof(TimedWaiter, cancel_node_))
      ->Flip(kCancelled);
}

TimedWaiter::Result TimedWaiter::ResultOf(int state) const {
  switch (state) {
    case kNotified:
      return Result::kNotified;
    case kCancelled:
      return Result::kCancelled;
    default:
      return Result::kTimedOut;
  }
}

bool TimedWaiter::NotifyDeferred(FiberEntity** to_queue) {
  *to_queue = nullptr;
  if (fiber_ == nullptr) return Flip(kNotified);
  return WinFiber(kNotified, to_queue);
}

bool TimedWaiter::WinAndWakeFiber(int to) {
  FiberEntity* to_queue = nullptr;
  const bool won = WinFiber(to, &to_queue);
  if (to_queue != nullptr) QueueReadyFiber(to_queue);
  return won;
}

bool TimedWaiter::WinFiber(int to, FiberEntity** to_queue) {
  FiberEntity* fiber = fiber_;
  ChaosPause();  // a waker delayed before it flips (chaos.h)
  std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
  int expected = kWaiting;
  // acq_rel: exactly one of Notify() and OnDeadline() wins.
  const bool won = state().compare_exchange_strong(expected, to, std::memory_order_acq_rel);
  // A parked fiber becomes Ready under its lock, so exactly one waker queues it; one
  // that has not parked yet sees the flip under the same lock and does not park.
  if (won && fiber->state() == FiberState::kWaiting) {
    fiber->SetState(FiberState::kReady);
    // The scheduling trace (trace.h): who woke whom.
    if (TraceOn()) TraceRecordNow(TraceKind::kWake, CurrentLockOwnerId(), fiber->id);
    *to_queue = fiber;
  }
  return won;
}

void TimedWaiter::OnDeadlineNode(TimerNode* node) {
  OnDeadline(reinterpret_cast<char*>(node) - offsetof(TimedWaiter, deadline_node_));
}

void TimedWaiter::OnDeadline(void* arg) {
  auto* waiter = static_cast<TimedWaiter*>(arg);
  waiter->WinAndWakeFiber(kTimedOut);
  // release: the waiter's acquire load in WaitAsFiber() sees us done with it.
  waiter->deadline_callback_done_.store(true, std::memory_order_release);
}

TimedWaiter::Result TimedWaiter::WaitAsFiber(MonotonicDeadline deadline,
                                             WaitKind kind) {
  const bool timed = !deadline.is_none();
  if (timed) {
    deadline_node_.expires_ns = deadline.ns();
    deadline_node_.fire = &TimedWaiter::OnDeadlineNode;
    deadline_node_.touches = fiber_;
    ArmTimerNodeOnThisWorker(&deadline_node_);
  }
  ChaosPause();  // published as a waiter, not yet parked (chaos.h)
  {
    std::unique_lock<Spinlock> lock(fiber_->scheduler_lock);
    // acquire: pairs with the winning flip (made under this same lock).
    if (state().load(std::memory_order_acquire) == kWaiting) {
      // Under the scheduler lock, as the fiber dump reads it.
      fiber_->wait_kind = fiber_->wait_kind_override != WaitKind::kNone
                              ? fiber_->wait_kind_override
                              : kind;
      fiber_->wait_object = object_;
      ParkFiber(fiber_, std::move(lock));
    }
  }
  // Take the deadline out of its queue (from whichever worker we resumed on). If it is
  // no longer there it was popped to fire: OnDeadline runs or ran, and we wait until it
  // no longer touches this object (its last store), so the frame can go.
  if (timed && TimerQueue::Remove(&deadline_node_) == TimerQueue::RemoveResult::kNotQueued) {
    // acquire: pairs with the release store in OnDeadline().
    while (!deadline_callback_done_.load(std::memory_order_acquire)) {
      std::this_thread::yield();
    }
  }
  // acquire: the winner's flip.
  return ResultOf(state().load(std::memory_order_acquire));
}

TimedWaiter::Result TimedWaiter::WaitAsThread(MonotonicDeadline deadline) {
  for (;;) {
    // acquire: pairs with the flip in Notify().
    const int now = state().load(std::memory_order_acquire);
    if (now != kWaiting) return ResultOf(now);
    if (!state_.ParkWhile(kWaiting, deadline)) {
      int expected = kWaiting;
      // acq_rel: races with Notify(); one flip wins.
      if (state().compare_exchange_strong(expected, kTimedOut, std::memory_order_acq_rel)) {
        return Result::kTimedOut;
      }
    }
  }
}

}  // namespace spindle::internal
