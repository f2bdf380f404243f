// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/group_chaos.h"

#include <utility>

#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/foreign_producers.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {

// Chaos mode's decisions exist only with the test seams (test_seams.h).
#if SPINDLE_HAS_TEST_SEAMS
std::uintptr_t ChaosPick(SchedulingGroup* group, std::uintptr_t entry, std::size_t worker) {
  if (worker >= group->size() || !ChaosOneIn(2)) return entry;
  std::uintptr_t taken[4] = {entry};
  std::size_t n = 1;
  for (const std::size_t want = 2 + ChaosBelow(3); n < want; ++n) {
    taken[n] = group->strategy()->TakeNext(worker);  // claimed, like any taken entry
    if (taken[n] == 0) break;
  }
  if (n > 1) ChaosCount(ChaosEvent::kPick);
  for (std::size_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(taken[i], taken[ChaosBelow(i + 1)]);
  }
  // The calling thread is worker `worker` of `group`: no foreign producer.
  for (std::size_t i = 1; i < n; ++i) {
    if (IsDescEntry(taken[i])) {
      // Not begun: give the claim we won in TakeNext back before the entry is queued
      // again (release: whoever wins it next, a worker or the joiner running it inline,
      // sees what the starter published, as our acquiring claim did). It stays a
      // descriptor, without a stack: giving each one a stack here kept thousands of
      // queued fibers alive (ThreadSanitizer ran out of memory on a million fibers).
      FiberDesc* desc = DecodeDesc(taken[i]);
      if (desc->claim != nullptr) desc->claim->store(false, std::memory_order_release);
      ChaosQueue(group, taken[i], desc->scheduling_group_local, ReadyReason::kYielded,
                 worker, /*foreign=*/false);
    } else {
      FiberEntity* fiber = DecodeFiber(taken[i]);
      ChaosQueue(group, taken[i], fiber->scheduling_group_local, ReadyReason::kYielded,
                 worker, /*foreign=*/false);
    }
  }
  return taken[0];
}

void ChaosQueue(SchedulingGroup* group, std::uintptr_t entry, bool group_local,
                ReadyReason reason, std::size_t origin, bool foreign) {
  SchedulingGroup* target = group;
  if (!group_local) {
    if (ChaosOneIn(4)) target = ChaosGroupOnNode(group, ChaosNodeKey(group->pool(), group->numa_node()));
    if (target != group) {
      ChaosCount(ChaosEvent::kGroupMove);
      origin = SchedulingGroup::kNoWorker;
    } else if (origin != SchedulingGroup::kNoWorker && ChaosOneIn(4)) {
      // A migration between workers: the shared queue, not the caller's local one.
      ChaosCount(ChaosEvent::kSharedQueue);
      origin = SchedulingGroup::kNoWorker;
    }
  }
  // A push from this thread like any other (SchedulingGroup's Enqueue()), with an
  // origin that is ours in `target` or none.
  ForeignProducerScope scope(foreign);
  target->strategy()->Enqueue(entry, !group_local, reason, origin);
}
#endif  // SPINDLE_HAS_TEST_SEAMS

}  // namespace spindle::internal
