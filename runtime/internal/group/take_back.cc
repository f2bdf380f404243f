// Copyright 2026 The Spindle Authors.
//
// Dead entries. join() on a child that has not started runs it inline (Fiber::join()
// wins FiberDesc::claim), but the child's descriptor is still queued; whoever takes it
// drops it (ClaimEntry). The joiner takes its child back (TakeBackRunInline) where that
// costs one look: where the entry is the next to leave a queue the joiner may take from
// (SchedulingStrategy::TakeBackEntry: a value compare and one CAS). Otherwise it leaves the
// dead entry and its own reference (run_inline_refs): the entry's consumer drops it, and
// every queue drops the dead entries it holds when it is full instead of growing or
// holding up a producer (GlobalRunQueue::Compact(), v2's local overflow, relaxed's
// lists), so what join() leaves behind costs at most one queue's capacity.
//
// Rejected: a per-worker list of entries that could not be taken back, retried on every
// inline join. In fork-join (skynet, fib) the child is almost never at a queue's front:
// a depth-first joiner's children sit in the middle of its local queue, behind its
// ancestors' unjoined siblings, so every inline join would pay for a failed retry and
// the list's upkeep. Dropping a dead entry where it is taken costs its consumer one
// claim check.

#include "runtime/internal/group/take_back.h"

#include <cstdint>

#include "runtime/internal/group/scheduling_group.h"

namespace spindle::internal {

void TakeBackRunInline(SchedulingGroup* group, FiberEntity* joiner, FiberDesc* desc) {
  SchedulingGroup* home = joiner->scheduling_group;
  const bool on_worker = joiner->scheduling_worker < home->size();
  // Started in `group`; it never gets a stack. The joiner runs on our worker's thread
  // when it is one of ours.
  group->stats().CountRunInline(home == group ? joiner->scheduling_worker
                                              : SchedulingGroup::kNoWorker);
  // acquire: pairs with a consumer's release of its reference (acq_rel fetch_sub). A
  // consumer already dropped the entry (v2 does when runnext is taken over): ours is the
  // last reference.
  if (desc->run_inline_refs.load(std::memory_order_acquire) == 1) {
    FreeFiberDesc(desc);
    return;
  }
  if (group->strategy()->TakeBackEntry(
          home == group && on_worker ? joiner->scheduling_worker : SchedulingGroup::kNoWorker,
          EncodeEntry(desc))) {
    FreeFiberDesc(desc);  // both references were ours now
    return;
  }
  // Left behind: its consumer, or its full queue, drops it (see the top).
  group->strategy()->NoteDeadEntries();
  ReleaseRunInlineDesc(desc);
}

}  // namespace spindle::internal
