// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_TAKE_BACK_H_
#define SPINDLE_RUNTIME_INTERNAL_TAKE_BACK_H_

#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/base/fiber_desc.h"

namespace spindle::internal {

class SchedulingGroup;  // scheduling_group.h

// Called by the fiber `joiner`, which has just run `desc`'s fiber inline after winning
// desc->claim (Fiber::join()); `group` is the group `desc` was started in. Takes the
// dead entry back out of the group's queues where it is next to leave one, else leaves
// it to be dropped by its consumer or its full queue (see "Dead entries" in
// take_back.cc). Takes over the joiner's reference to `desc`
// (FiberDesc::run_inline_refs). Does not block or switch fibers.
void TakeBackRunInline(SchedulingGroup* group, FiberEntity* joiner, FiberDesc* desc);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_TAKE_BACK_H_
