// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_ONESHOT_EVENT_H_
#define SPINDLE_RUNTIME_INTERNAL_ONESHOT_EVENT_H_

#include <atomic>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

// A one-shot event with at most one waiter: Signal() once, Wait() at most once, in
// either order, each from a fiber or a plain thread. A waiting fiber parks (its worker
// runs other fibers); a waiting thread futex-waits. Fiber::join() waits on one that the
// fiber's exit hook signals (the handle and the hook share it through std::shared_ptr,
// so either may go first). Thread-safe. The synchronization primitives of //sync will
// replace it with their general wait queue.
class OneshotEvent {
 public:
  void Signal();
  void Wait();

 private:
  Spinlock lock_;
  bool exited_ = false;                         // guarded by lock_
  FiberEntity* fiber_waiter_ = nullptr;         // guarded by lock_
  std::atomic<int>* thread_waiter_ = nullptr;   // guarded by lock_
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_ONESHOT_EVENT_H_
