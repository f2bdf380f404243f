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
  // A busy group's producers come here on every push, so the thieves' lines are read
  // first, and nothing is written unless a thief may be woken. relaxed: the cursor only
  // spreads the wake-ups over the thieves.
  const std::size_t turn = next_thief_.load(std::memory_order_relaxed);
  const std::size_t n = thieves_.size();
  bool backlog_seen = false;
  for (std::size_t i = 0; i < n; ++i) {
    IdleNotifier& thief = thieves_[(turn + i) % n]->notifier_;
    switch (thief.StateForVictim()) {
      case IdleNotifier::ThiefState::kSearching:
        // Its searcher tries us within its rounds; one that found other work looks at us
        // as the last one out (I4 in notifier.cc), one that found none in its re-check
        // before it sleeps (W3; T2 in strategy_v1.cc). Our push came before our fence,
        // and theirs before their look, so one of them sees it.
        return;
      case IdleNotifier::ThiefState::kBusy:
        continue;
      case IdleNotifier::ThiefState::kSleeping:
        break;
    }
    // Nothing to do if a worker of ours already took the backlog.
    if (!backlog_seen && !MayHaveStealable()) return;
    backlog_seen = true;
    if (thief.WakeThief()) {
      next_thief_.store(turn + i + 1, std::memory_order_relaxed);
      return;
    }
  }
}

}  // namespace spindle::internal
