// Copyright 2026 The Spindle Authors.

#include "fiber/this_fiber.h"

#include <thread>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/fiber_switch.h"
#include "runtime/internal/base/ready_batch.h"
#include "sync/internal/timed_waiter.h"

namespace spindle {

bool IsFiberContextPresent() {
  const internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  return self != nullptr && !self->is_master();
}

namespace this_fiber {

// noinline: it reads the current fiber straight from its thread-local
// (fiber_switch.h), safe only where nothing before the read in the same function could
// have switched; a caller in this file that parked first must not inline it.
__attribute__((noinline)) void Yield() {
  internal::FiberEntity* self = internal::fiber_switch_internal::tls_current_fiber;
  if (self == nullptr || self->is_master()) {
    std::this_thread::yield();
    return;
  }
  internal::YieldFiber(self);
}

std::uint64_t GetId() {
  const internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  return self != nullptr && !self->is_master() ? self->id : 0;
}

bool SleepUntil(std::chrono::steady_clock::time_point deadline) {
  const auto until = internal::MonotonicDeadline::At(deadline);  // the API's edge
  const internal::WaitLimits* limits = internal::CurrentWaitLimits();
  if (limits == nullptr) {
    // No context: nothing can interrupt it. Nobody notifies a fiber's waiter: it times
    // out, at the deadline.
    if (!IsFiberContextPresent()) {
      std::this_thread::sleep_until(deadline);
    } else {
      internal::TimedWaiter waiter;
      waiter.WaitUntil(until, internal::WaitKind::kSleep);
    }
    return true;
  }
  // It times out (at the earlier of the two deadlines) or is cancelled.
  internal::TimedWaiter waiter;
  const internal::TimedWaiter::Result result =
      waiter.WaitUntil(until, internal::WaitKind::kSleep, limits);
  // Timed out at our deadline, or at the context's if that came first (or both had
  // passed: the sleep did reach ours).
  return result == internal::TimedWaiter::Result::kTimedOut && until.Passed();
}

}  // namespace this_fiber
}  // namespace spindle
