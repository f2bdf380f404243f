// Copyright 2026 The Spindle Authors.
//
// The engine under integrations/grpc's server and client: how a fiber (or a plain
// thread) waits for one gRPC callback-API operation that it started, and how the call's
// deadline and cancellation cross between gRPC and Spindle.

#ifndef SPINDLE_INTEGRATIONS_GRPC_INTERNAL_OP_SLOT_H_
#define SPINDLE_INTEGRATIONS_GRPC_INTERNAL_OP_SLOT_H_

#include <atomic>
#include <chrono>

#include "sync/semaphore.h"

namespace spindle::grpc_fiber::internal {

// One direction (reads, or writes) of one call: the fiber starts an operation (a
// StartRead, a StartWrite, ...) and waits here; gRPC's reaction for it (OnReadDone,
// OnWriteDone, ...), on one of gRPC's threads, calls Complete(). gRPC allows one
// operation per direction at a time and aborts the process on a second without saying
// why: Begin() turns that misuse into a message naming the direction.
//
// Thread-safety: Begin() and the waits on the fiber that owns the direction (one at a
// time, checked); Complete() from gRPC's thread. The slot must outlive the reaction
// that completes it (the reactor owns it; gRPC calls OnDone only after every reaction
// has returned).
class OpSlot {
 public:
  // `what` names the direction in the message of a misuse ("Read", "Write").
  explicit OpSlot(const char* what) : what_(what) {}
  OpSlot(const OpSlot&) = delete;
  OpSlot& operator=(const OpSlot&) = delete;

  // Marks an operation begun; a second one before the first has completed stops the
  // process with a message (two fibers reading, or writing, one call at once).
  void Begin();

  // The reaction: records `ok` and wakes the waiter. Called once per Begin().
  void Complete(bool ok) {
    ok_ = ok;          // published by the release below
    done_.release();   // pairs with the acquire in the waits: the waiter then reads ok_
  }

  // Waits for Complete() without end: the operation's buffer is in use until then.
  // gRPC completes every started operation (with false once the call is cancelled, has
  // passed its deadline or has ended), so this cannot wait for ever while the call's
  // cancellation is wired to it. Returns the operation's `ok`.
  bool Wait() {
    done_.acquire();
    return Finish();
  }

  // Waits interruptibly: under the caller's execution context (its cancellation, its
  // deadline). If interrupted, calls `cancel()` (which must make gRPC complete the
  // operation: ServerContext::TryCancel(), ClientContext::TryCancel()) and then waits
  // for the completion, which cannot be lost: Complete() always releases the permit,
  // before or after the interruption, and Wait() takes it. Returns `ok`, false when
  // interrupted.
  template <class Cancel>
  bool WaitInterruptibly(Cancel&& cancel) {
    if (done_.try_acquire_until(std::chrono::steady_clock::time_point::max())) {
      return Finish();
    }
    cancel();
    done_.acquire();
    Finish();
    return false;
  }

 private:
  bool Finish() {
    // relaxed: the semaphore's acquire/release order this store after the wait on the
    // same fiber; Begin()'s exchange only needs to see it from this owner, or, from a
    // misusing fiber, any value at all.
    busy_.store(false, std::memory_order_relaxed);
    return ok_;
  }

  const char* const what_;
  std::atomic<bool> busy_{false};  // an operation is outstanding (misuse detection)
  bool ok_ = false;                // written by Complete() before release()
  BinarySemaphore done_{0};        // one permit per completed operation
};

}  // namespace spindle::grpc_fiber::internal

#endif  // SPINDLE_INTEGRATIONS_GRPC_INTERNAL_OP_SLOT_H_
