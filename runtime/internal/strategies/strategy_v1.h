// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/internal/idle/spinner_notifier.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/queues/stage_buffer.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

// Strategy v1 in the registry (strategy_registry.h); its flag: --fiber_v1_stage_size.
extern const StrategyEntry kStrategyV1Entry;

// Strategy v1's own settings, from its flags (validated by its registry entry).
struct StrategyV1Settings {
  // Each worker's stage, in fibers (--fiber_v1_stage_size); 0: no staging.
  std::size_t stage_capacity = 64;
  static StrategyV1Settings FromFlags();
};

// Scheduling strategy v1: one bounded run queue shared by the group's workers, a queue
// of fibers woken by timers that runs ahead of it, a small stage per worker (see
// "Staging" in strategy_v1.cc), and the SpinnerNotifier
// (runtime/internal/idle/spinner_notifier.h). The protocol and why it loses no wake-up
// are at the top of spinner_notifier.cc and strategy_v1.cc. Thread-safety as
// SchedulingStrategy says.
class StrategyV1 final : public SchedulingStrategy {
 public:
  explicit StrategyV1(const SchedulingGroupOptions& options,
                      const StrategyV1Settings& settings = StrategyV1Settings());

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  // Timer-woken fibers go to the woken queue, which TakeNext() serves first.
  void EnqueueWoken(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  // The stalled worker's stage goes to the shared queue.
  std::size_t RescueStalledWorker(std::size_t worker) override;
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
  // Per worker: its stage and what only its thread touches.
  struct Worker {
    explicit Worker(std::size_t stage_capacity) : stage(stage_capacity) {}
    StageBuffer stage;
    std::uint32_t takes = 0;  // worker's thread only: when the shared queue goes first
  };

  // Whether a fiber made ready by worker `origin`'s fiber may wait in its stage: every
  // worker that could take it now is busy (relaxed looks; see "Staging").
  bool MayStage() const;
  // Moves up to `max` of worker `worker`'s staged entries, oldest first, to the shared
  // queue, with the producer's wake-up; how many.
  std::size_t FlushStage(std::size_t worker, std::size_t max);
  // The oldest live entry of a sibling's stage (claimed), or 0.
  std::uintptr_t TakeFromSiblingStage(std::size_t worker);
  std::uintptr_t TakeWoken() {
    return woken_.UnsafeSize() != 0 ? woken_.Take() : 0;
  }
  bool StagesEmpty() const;

  const SchedulingGroupOptions options_;
  const std::size_t stage_capacity_;
  GlobalRunQueue queue_;
  GlobalRunQueue woken_;  // fibers woken by timers, overdue: taken before queue_
  SpinnerNotifier notifier_;
  std::vector<std::unique_ptr<Worker>> workers_;  // one per worker
  ThreadCounter steals_in_group_;  // entries taken from a sibling's stage (G3)
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
