// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_PARKING_H_
#define SPINDLE_RUNTIME_INTERNAL_PARKING_H_

#include <cstddef>
#include <cstdint>

#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {

// How fibers start running and leave their worker: turning a taken queue entry into a
// Running fiber (a stack for a new fiber, its state, its group), and the definitions of
// ready_batch.h's ParkFiber and YieldFiber, with DispatchFiber below. The protocol of
// the hand-over (why a waker cannot run a parking fiber too early) is at the top of
// parking.cc.

// Makes the fiber of an entry just taken from `group`'s strategy the group's and
// Running on worker `worker` (whose thread calls this; kNoWorker in tests): a
// descriptor gets its stack here. A fiber stolen from another group becomes `group`'s.
FiberEntity* MakeRunning(SchedulingGroup* group, std::uintptr_t entry, std::size_t worker);

// Runs the new fiber `desc` (started in self's group) right now on self's worker;
// `self`, the running fiber, is queued and runs later. Aborts in debug and sanitizer
// builds if the calling thread holds a pthread mutex (os_lock_check.h).
void DispatchFiber(FiberEntity* self, FiberDesc* desc);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_PARKING_H_
