// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_CHAOS_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_CHAOS_H_

#include <cstddef>
#include <cstdint>

#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

class SchedulingGroup;  // scheduling_group.h

// Chaos mode's decisions on a scheduling group (chaos.h), through the group's public
// strategy(). Declared always, so that the callers' `if constexpr (kTestSeams)` compile
// everywhere; defined (group_chaos.cc) only in builds with the test seams
// (test_seams.h), so an optimized binary holds no chaos symbol. Out of line and cold:
// inlined, ChaosPick makes SchedulingGroup's TakeNextForSwitch too big to inline into
// Yield, which then pays a call per switch.

// D1: `entry`, just taken by worker `worker` of `group` (on that worker's thread), or a
// random one of up to three more taken from its sources; the others are queued again
// (ChaosQueue; a descriptor unclaimed first). Returns the entry to run.
__attribute__((noinline, cold)) std::uintptr_t ChaosPick(SchedulingGroup* group,
                                                         std::uintptr_t entry,
                                                         std::size_t worker);
// D2: queues `entry` (a Ready fiber or an unclaimed descriptor; `group_local`: its
// scheduling_group_local) for `reason`, as a push from the calling thread, sometimes
// on another group of `group`'s node or on the shared queue instead of the caller's
// local one. `origin` is the caller's worker in `group` or kNoWorker; `foreign`: the
// calling thread is no group's worker (ForeignProducerScope).
__attribute__((noinline, cold)) void ChaosQueue(SchedulingGroup* group, std::uintptr_t entry,
                                                bool group_local, ReadyReason reason,
                                                std::size_t origin, bool foreign);

// The key under which chaos mode may move fibers between groups (ChaosGroup::numa_node,
// ChaosGroupOnNode): groups of one NUMA node and one pool (pools never exchange
// fibers, even in chaos mode).
inline int ChaosNodeKey(std::size_t pool, int numa_node) {
  return static_cast<int>(pool) * 65536 + numa_node;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_CHAOS_H_
