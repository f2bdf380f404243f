// Copyright 2026 The Spindle Authors.

#include "runtime/internal/scheduling_strategy.h"

namespace spindle::internal {

namespace strategy_internal {
std::atomic<SchedulerTestHook> g_test_hook{nullptr};
}  // namespace strategy_internal

std::string ValidateSchedulingStrategy(const std::string& name) {
  if (name == "v1" || name == "v2") return "";
  return "--fiber_scheduling_strategy=" + name +
         " is invalid: expected one of: " + kSchedulingStrategies;
}

void SetSchedulerTestHook(SchedulerTestHook hook) {
  // relaxed: see g_test_hook.
  strategy_internal::g_test_hook.store(hook, std::memory_order_relaxed);
}

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

void SchedulingStrategy::Sleep(std::size_t worker, WaitSlot& slot,
                               std::chrono::nanoseconds limit) {
  const std::int64_t deadline_ns =
      limit.count() == 0 ? -1 : MonotonicNowNs() + static_cast<std::int64_t>(limit.count());
  GroupPoller* poller = poller_.load(std::memory_order_acquire);  // pairs with SetPoller
  if (poller != nullptr && poller->HasInterest() && poller->TryAcquire()) {
    const bool events = slot.WaitPolling(poller, deadline_ns);
    poller->Release();
    // Woken for work (or timed out) with descriptors still registered: the poller is
    // vacant while our siblings sleep on their futexes. Events were dispatched as fibers
    // to run, whose wake-ups reach sleepers anyway.
    poller_hand_off_[worker] = !events && !stopping() && poller->HasInterest();
    return;
  }
  if (deadline_ns < 0) {
    slot.Wait();
  } else {
    slot.WaitUntil(deadline_ns);
  }
}

std::uint64_t LowestSetBits(std::uint64_t mask, std::size_t k) {
  std::uint64_t result = 0;
  for (std::size_t i = 0; i < k && mask != 0; ++i) {
    const std::uint64_t bit = mask & (~mask + 1);
    result |= bit;
    mask &= ~bit;
  }
  return result;
}

}  // namespace spindle::internal
