// Copyright 2026 The Spindle Authors.

#include "runtime/internal/scheduling_strategy.h"

#include "fiber/internal/spinlock.h"

namespace spindle::internal {

namespace strategy_internal {
#if SPINDLE_HAS_TEST_SEAMS
std::atomic<SchedulerTestHook> g_test_hook{nullptr};
std::atomic<bool> g_sleep_recheck_disabled{false};
#endif
}  // namespace strategy_internal


#if SPINDLE_HAS_TEST_SEAMS
void SetSchedulerTestHook(SchedulerTestHook hook) {
  // relaxed: see g_test_hook.
  strategy_internal::g_test_hook.store(hook, std::memory_order_relaxed);
}

void DisableSleepRecheckForTesting(bool disabled) {
  // relaxed: see g_sleep_recheck_disabled.
  strategy_internal::g_sleep_recheck_disabled.store(disabled, std::memory_order_relaxed);
}
#endif

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
  PerWorker& self = per_worker_[worker];
  self.sleeps.Add(1);
  if (self.slept_since_work) self.spurious.Add(1);  // the last wake-up found nothing
  self.slept_since_work = true;
  const Deadline deadline = limit.count() == 0 ? Deadline::None() : Deadline::In(limit);
  GroupPoller* poller = poller_.load(std::memory_order_acquire);  // pairs with SetPoller
  if (poller != nullptr && poller->HasInterest() && poller->TryAcquireOrMarkWanted()) {
    slot.WaitPolling(poller, deadline);
    const bool wanted = poller->Release();
    // Leaving the poller with descriptors registered: the fibers we dispatched (or the
    // work we were woken for) are about to run here, and our siblings may all sleep on
    // their futexes. One of them takes the duty over (the caller wakes it once our own
    // sleeping bit is clear, if the token is still vacant then).
    self.hand_off_pending = wanted || (!stopping() && poller->HasInterest());
    return;
  }
  slot.Wait(deadline);
}

std::uintptr_t SchedulingStrategy::SearchForWork(
    bool searching, std::chrono::nanoseconds spin_time, IdleHooks& hooks,
    absl::FunctionRef<std::uintptr_t()> search_once) {
  std::uintptr_t entry = 0;
  const auto deadline = std::chrono::steady_clock::now() + spin_time;
  for (int round = 0;; ++round) {
    entry = search_once();
    if (entry != 0 || !searching || stopping()) break;
    if (hooks.ShouldPoll()) {
      hooks.PausePolling();
      continue;
    }
    if ((round & 15) == 15 && std::chrono::steady_clock::now() >= deadline) break;
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
  while (entry == 0 && !searching && hooks.ShouldPoll() && !stopping()) {
    hooks.PausePolling();
    entry = search_once();
  }
  return entry;
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
