// Copyright 2026 The Spindle Authors.
//
// No lost wake-up: the joiner registers itself and the exiting fiber takes the
// registration under the same lock, so exactly one of them sees the other. A fiber
// joiner takes its own scheduler lock before releasing ours and parks holding it; the
// signaller's Resume() takes that scheduler lock, so it waits until the joiner is fully
// switched out. A pthread joiner waits on a futex word that is set before the wake.

#include "runtime/internal/oneshot_event.h"

#include <mutex>

#include "runtime/internal/futex.h"
#include "runtime/internal/ready_batch.h"

namespace spindle::internal {

void OneshotEvent::Signal() {
  FiberEntity* fiber = nullptr;
  std::atomic<int>* word = nullptr;
  {
    std::lock_guard<Spinlock> lock(lock_);
    exited_ = true;
    fiber = fiber_waiter_;
    word = thread_waiter_;
  }
  if (fiber != nullptr) {
    ResumeFiber(fiber);
  } else if (word != nullptr) {
    // release: pairs with the acquire load in Wait(). After this store the waiter may
    // return and its word vanish; FUTEX_WAKE on a stale address only risks a spurious
    // wake-up elsewhere, which every futex user tolerates.
    word->store(1, std::memory_order_release);
    FutexWake(word);
  }
}

void OneshotEvent::Wait() {
  std::unique_lock<Spinlock> lock(lock_);
  if (exited_) return;
  FiberEntity* self = GetCurrentFiberEntity();
  if (self != nullptr && !self->is_master()) {
    std::unique_lock<Spinlock> self_lock(self->scheduler_lock);
    fiber_waiter_ = self;
    lock.unlock();
    ParkFiber(self, std::move(self_lock));
    return;
  }
  std::atomic<int> word{0};
  thread_waiter_ = &word;
  lock.unlock();
  // acquire: pairs with the release store in Signal().
  while (word.load(std::memory_order_acquire) == 0) FutexWait(&word, 0);
}

}  // namespace spindle::internal
