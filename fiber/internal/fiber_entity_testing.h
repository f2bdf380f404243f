// Copyright 2026 The Spindle Authors.
//
// Test-only helpers that run fibers by hand on the calling thread, the way a scheduler
// would: state changes under the scheduler lock, then a switch.

#ifndef SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_TESTING_H_
#define SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_TESTING_H_

#include <mutex>
#include <utility>

#include "fiber/internal/fiber_entity.h"

namespace spindle::internal::testing {

// Creates a fiber on a stack from the calling thread's default cache.
inline FiberEntity* NewFiber(FiberFunction body) {
  return InstantiateFiberEntity(StackCache::ForThisThread().Get(), std::move(body));
}

// From the running fiber `self`, switches to `next`: `self` becomes Ready and `next`
// Running (masters have no state to change). Returns when `self` runs again.
inline void SwitchToReady(FiberEntity* self, FiberEntity* next) {
  if (!self->is_master()) {
    std::lock_guard<Spinlock> lock(self->scheduler_lock);
    self->SetState(FiberState::kReady);
  }
  if (!next->is_master()) {
    std::lock_guard<Spinlock> lock(next->scheduler_lock);
    next->SetState(FiberState::kRunning);
  }
  self->SwitchTo(next);
}

// From the master fiber: runs `fiber` until it switches back or finishes.
inline void RunFromMaster(FiberEntity* fiber) {
  SwitchToReady(GetMasterFiberEntity(), fiber);
}

}  // namespace spindle::internal::testing

#endif  // SPINDLE_FIBER_INTERNAL_FIBER_ENTITY_TESTING_H_
