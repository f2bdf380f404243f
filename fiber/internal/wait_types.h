// Copyright 2026 The Spindle Authors.
//
// The vocabulary of a wait, shared by the fiber control block (which records what a
// parked fiber waits for), the wait queue and the public primitives built on it: what a
// fiber waits for, how a wait ended, and the limits an execution context puts on the
// waits made in it. Declarations only, and no project header: the public sync headers
// include it, and must stay light (tools/header_weight.py).

#ifndef SPINDLE_FIBER_INTERNAL_WAIT_TYPES_H_
#define SPINDLE_FIBER_INTERNAL_WAIT_TYPES_H_

#include <cstdint>

namespace spindle::internal {

// What a Waiting fiber waits for, for the fiber dump (runtime/internal/observability/fiber_dump.h).
// Recorded by the park path (TimedWaiter) under the fiber's scheduler_lock; meaningful
// only while the state is kWaiting.
enum class WaitKind : std::uint8_t {
  kNone,
  kMutex,
  kConditionVariable,
  kEvent,
  kLatch,
  kFuture,
  kSleep,
  kSocket,
  kSharedMutex,
  kSemaphore,
  kBarrier,
  kJoin,         // Fiber::join()
  kRunBlocking,  // io/run_blocking.h
  kChannel,      // sync/channel.h: a send, a receive or a Select
  kOther,
};

const char* WaitKindName(WaitKind kind);  // fiber_entity.cc

// How a wait ended (sync/internal/timed_waiter.h, sync/internal/wait_queue.h):
// notified by a waker, at its deadline, or cancelled by its execution context.
enum class WaitResult { kNotified, kTimedOut, kCancelled };

// What an execution context asks of the waits made in it: local_storage.h defines it.
struct WaitLimits;

// The limits of the execution context the calling fiber (or plain thread) runs in; null
// if none. Creates nothing (a plain thread with no master fiber yet runs in no context).
// Defined with the entities (fiber_entity.cc), which own the current-fiber slot.
const WaitLimits* CurrentWaitLimits();

// What a lock records as its holder (sync/mutex.h, sync/shared_mutex.h), for the
// deadlock report and debuggers: the calling fiber's id; kLockOwnerThread on a thread
// that runs no fiber (a plain thread, or a worker's own context). One thread-local load,
// out of line (a fiber may resume on another thread: fiber_entity.h,
// GetCurrentFiberEntity()). Defined with the entities (fiber_entity.cc).
inline constexpr std::uint64_t kLockOwnerThread = ~std::uint64_t{0};
std::uint64_t CurrentLockOwnerId();

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_WAIT_TYPES_H_
