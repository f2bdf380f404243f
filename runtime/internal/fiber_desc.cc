// Copyright 2026 The Spindle Authors.
//
// Descriptors are allocated by whoever starts a fiber and freed by the worker that runs
// it, so a plain new/delete makes every fiber pay for a cross-thread free in malloc
// (the profile of 1M spawns showed a quarter of the time in _int_malloc/_int_free).
// Instead each thread caches free descriptors and trades batches through one global
// BatchPool, like fiber stacks. Descriptors are never returned to malloc; the pool
// holds as many as were ever waiting at once. Under a sanitizer every descriptor is a
// plain new/delete, so ASan sees each one's lifetime.

#include "runtime/internal/fiber_desc.h"

#include <vector>

#include "fiber/internal/batch_pool.h"
#include "fiber/internal/sanitizers.h"

namespace spindle::internal {
namespace {

constexpr std::size_t kDescBatch = 64;

BatchPool<FiberDesc*>& DescPool() {
  static auto* pool = new BatchPool<FiberDesc*>(kDescBatch);
  return *pool;
}

struct DescCache {
  std::vector<FiberDesc*> free;
  ~DescCache() {
    if (!free.empty()) DescPool().GiveBatch(&free);
  }
};

std::vector<FiberDesc*>& ThisThreadDescs() {
  thread_local DescCache cache;
  return cache.free;
}

}  // namespace

FiberDesc* AllocateFiberDesc() {
  if (kUnderSanitizer) return new FiberDesc;
  std::vector<FiberDesc*>& cache = ThisThreadDescs();
  if (cache.empty() && !DescPool().TakeBatch(&cache)) return new FiberDesc;
  FiberDesc* desc = cache.back();
  cache.pop_back();
  return desc;
}

void FreeFiberDesc(FiberDesc* desc) {
  if (kUnderSanitizer) {
    delete desc;
    return;
  }
  // Usually moved-from already; assigning to an empty AnyInvocable still costs an
  // indirect call into its manager (9% of skynet's samples went to EmptyManager).
  if (desc->start_proc) desc->start_proc = nullptr;
  if (desc->exit_hook) desc->exit_hook = nullptr;
  desc->scheduling_group_local = false;
  desc->id = 0;
  desc->claim = nullptr;
  // relaxed: the descriptor is ours alone until it is handed out again.
  desc->run_inline_refs.store(2, std::memory_order_relaxed);
  std::vector<FiberDesc*>& cache = ThisThreadDescs();
  cache.push_back(desc);
  DescPool().SpillIfFull(&cache);
}

}  // namespace spindle::internal
