// Copyright 2026 The Spindle Authors.

#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

void* SchedulingStrategy::operator new(std::size_t size, int numa_node) {
  return AllocateNodeMemory(size, numa_node);  // 64-byte aligned: alignas(64) holds
}

void SchedulingStrategy::operator delete(void* pointer, std::size_t size) {
  FreeNodeMemory(pointer, size);
}

void SchedulingStrategy::operator delete(void* pointer, int) {
  // Only reached when a constructor throws, which ours never do (they CHECK instead).
  // The size is unknown here, so the memory is leaked rather than freed wrongly.
  (void)pointer;
}

void SchedulingStrategy::WakeUpThief() {
  // relaxed: the cursor only spreads the wake-ups over the thieves; written only when
  // one is woken, so its line stays shared while every push reads it.
  const std::size_t n = thieves_.size();
  if (n == 0) return;  // no thieves (a batch's P4 in v1 asks without has_thieves())
  const std::size_t turn = next_thief_.load(std::memory_order_relaxed);
  const std::size_t woken = WakeOneThief(thieves_.data(), n, turn % n,
                                         [this] { return MayHaveStealable(); });
  if (woken != n) next_thief_.store(woken + 1, std::memory_order_relaxed);
}

}  // namespace spindle::internal
