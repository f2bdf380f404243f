// Copyright 2026 The Spindle Authors.

#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

void* SchedulingStrategy::operator new(std::size_t size, int numa_node) {
  return AllocateOnNode(size, numa_node);  // page-aligned, so alignas(64) holds
}

void SchedulingStrategy::operator delete(void* pointer, std::size_t size) {
  FreeOnNode(pointer, size);
}

void SchedulingStrategy::operator delete(void* pointer, int) {
  // Only reached when a constructor throws, which ours never do (they CHECK instead).
  // The size is unknown here, so the memory is leaked rather than freed wrongly.
  (void)pointer;
}

void SchedulingStrategy::WakeUpThief() {
  // Nothing to do if a worker of ours already took the backlog.
  if (thieves_.empty() || !MayHaveStealable()) return;
  // relaxed: only spreads the wake-ups over the thieves.
  const std::size_t turn = next_thief_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < thieves_.size(); ++i) {
    if (thieves_[(turn + i) % thieves_.size()]->WakeOneSleeper()) return;
  }
}

}  // namespace spindle::internal
