// Copyright 2026 The Spindle Authors.
//
// Descriptors are allocated by whoever starts a fiber and freed by the worker that runs
// it: PooledObjects (fiber/internal/batch_pool.h) keeps malloc out of that cross-thread
// free.

#include "runtime/internal/base/fiber_desc.h"

#include <utility>

#include "fiber/internal/batch_pool.h"
#include "runtime/internal/base/live_fibers.h"

namespace spindle::internal {

FiberDesc* AllocateFiberDesc() { return PooledObjects<FiberDesc>::New(); }

void FreeFiberDesc(FiberDesc* desc) {
  // Embedded in its owner, which resets it when it is recycled.
  if (desc->hooks != nullptr) return desc->hooks->on_free(desc);
  // Usually moved-from already; assigning to an empty AnyInvocable still costs an
  // indirect call into its manager, on every descriptor freed.
  if (desc->start_proc) desc->start_proc = nullptr;
  desc->scheduling_group_local = false;
  desc->stack_class = 0;
  desc->start_reason = 0;  // ReadyReason::kStarted
  desc->id = 0;
  desc->ready_stamp = 0;
  desc->claim = nullptr;
  desc->reserved_stack = 0;
  // relaxed: the descriptor is ours alone until it is handed out again.
  desc->run_inline_refs.store(2, std::memory_order_relaxed);
  PooledObjects<FiberDesc>::Delete(desc);
}

FiberDesc* NewFiberDesc(FiberFunction start_proc) {
  FiberDesc* desc = AllocateFiberDesc();
  desc->start_proc = std::move(start_proc);
  desc->id = NewFiberId();
  CountFiberStarted(1);
  return desc;
}

}  // namespace spindle::internal
