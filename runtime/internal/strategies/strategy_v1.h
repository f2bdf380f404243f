// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/internal/idle/spinner_notifier.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

// Strategy v1 in the registry (strategy_registry.h). It has no flags of its own.
extern const StrategyEntry kStrategyV1Entry;

// Scheduling strategy v1: one bounded run queue shared by the group's workers, and the
// SpinnerNotifier (runtime/internal/idle/spinner_notifier.h). The protocol and why it
// loses no wake-up are at the top of spinner_notifier.cc. Thread-safety as
// SchedulingStrategy says.
class StrategyV1 final : public SchedulingStrategy {
 public:
  explicit StrategyV1(const SchedulingGroupOptions& options);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  std::size_t StealBatch(std::uintptr_t* out, std::size_t max) override;
  bool MayHaveStealable() const override;
  bool TakeBackEntry(std::size_t worker, std::uintptr_t entry) override;
  void NoteDeadEntries() override;
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

  // The protocol's state, for the step-by-step tests.
  const SpinnerNotifier& spinner_notifier() const { return notifier_; }

  // Tests only, a test seam (test_seams.h): a producer preempted inside its push (see
  // "More work" in spinner_notifier.cc).
  std::uint64_t BeginStalledPushForTesting();
  void FinishStalledPushForTesting(std::uint64_t position, std::uintptr_t entry,
                                   bool stealable);

 private:
  const SchedulingGroupOptions options_;
  GlobalRunQueue queue_;
  SpinnerNotifier notifier_;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
