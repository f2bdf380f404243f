// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_INTERNAL_WAIT_QUEUE_H_
#define SPINDLE_SYNC_INTERNAL_WAIT_QUEUE_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>

#include "fiber/internal/deadline.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/wait_types.h"

namespace spindle::internal {

// The public primitives (sync/*.h) take std::chrono::steady_clock deadlines so that users
// name no internal type; each converts its deadline once, at its edge, into the
// MonotonicDeadline that everything below takes (fiber/internal/deadline.h).

// The one wait-queue core every synchronization primitive is built on: a FIFO of
// waiters (fibers or plain threads), each a TimedWaiter on the waiter's own stack.
// Guarded by the primitive's internal Spinlock, which every call below expects held.
//
// Protocol (why no wake-up is lost or spent on a waiter that has left):
//   - Wait() links a node while the caller holds the lock, so a notifier that takes the
//     lock afterwards finds it; then it releases the lock and parks/futex-waits.
//   - WakeOne()/WakeAll() pop nodes and Notify() them while holding the lock. Notify
//     fails only for a waiter whose deadline or cancellation already won; WakeOne()
//     then moves on to the next node, so a wake-up goes to a waiter that will take it.
//   - A waiter woken by its deadline or a cancellation re-takes the lock and unlinks
//     itself if still linked. If a notifier popped it first, that notifier already
//     called Notify() and lost, under the lock the waiter now holds, so nobody touches
//     the node after Wait() returns.
// The fibers woken inside a critical section are queued when the outermost ReadyBatch
// on that thread ends (the primitives open one around their critical sections), so the
// run-queue push and any worker wake-up happen after the lock is released.
// Not thread-safe by itself; not copyable.
class WaitQueue {
 public:
  WaitQueue() = default;
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;
  ~WaitQueue();

  // Enqueues the caller, releases `lock` while waiting, and returns with `lock` held
  // again: kNotified if a WakeOne/WakeAll chose it, kTimedOut at `deadline`
  // (MonotonicDeadline::None() for none), kCancelled if `limits` (an interruptible
  // wait's: TimedWaiter::WaitUntil) were cancelled. `kind` is what the fiber dump shows
  // a parked fiber waiting for, and `object` (the primitive) what it waits on.
  WaitResult Wait(std::unique_lock<Spinlock>& lock, MonotonicDeadline deadline,
                  WaitKind kind = WaitKind::kOther, const WaitLimits* limits = nullptr,
                  const void* object = nullptr);

  // What a waiter learns beyond the result (for primitives that count their waiters or
  // tell the woken waiter how it was woken, as Mutex does).
  struct WaitDetail {
    bool front = false;        // in: link at the head (a woken waiter that lost a race)
    std::uintptr_t tag = 0;    // out: the tag its WakeOne() passed; 0 if none
    // out: timed out or cancelled, and unlinked itself (no waker popped it)
    bool removed_self = false;
  };
  WaitResult Wait(std::unique_lock<Spinlock>& lock, MonotonicDeadline deadline,
                  WaitDetail& detail, WaitKind kind = WaitKind::kOther,
                  const WaitLimits* limits = nullptr, const void* object = nullptr);

  // Wakes the oldest waiter that can still be woken; false if there was none. The woken
  // waiter's WaitDetail::tag becomes `tag`. `*popped` (if given) is set to the number
  // of nodes removed: the woken one plus any whose deadline had already won.
  bool WakeOne(std::uintptr_t tag = 0, std::size_t* popped = nullptr);
  // Wakes every waiter; returns how many.
  std::size_t WakeAll();

  bool empty() const { return head_ == nullptr; }

 private:
  // A waiter's link, on its own stack. Defined in wait_queue.cc: it holds the waiter's
  // TimedWaiter, whose header is the engine's (the timers, the parker), which a public
  // header that embeds a WaitQueue must not bring in.
  struct Node;

  void Link(Node* node, bool front);
  void Unlink(Node* node);
  Node* PopFront();

  Node* head_ = nullptr;
  Node* tail_ = nullptr;
};

}  // namespace spindle::internal

#endif  // SPINDLE_SYNC_INTERNAL_WAIT_QUEUE_H_
