// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/internal/global_run_queue.h"
#include "runtime/internal/scheduling_strategy.h"
#include "runtime/internal/wait_slot.h"

namespace spindle::internal {

// Strategy v1 in the registry (strategy_registry.h). It has no flags of its own.
extern const StrategyEntry kStrategyV1Entry;

// Scheduling strategy v1: one bounded run queue shared by the group's workers, at most
// two spinning workers, and a producer that hands its fiber to a spinner or wakes the
// lowest-numbered sleeper. The protocol and why it loses no wake-up are at the top of
// strategy_v1.cc. Thread-safety as SchedulingStrategy says.
class StrategyV1 final : public SchedulingStrategy {
 public:
  explicit StrategyV1(const SchedulingGroupOptions& options);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  std::uintptr_t FindRunnable(std::size_t worker, IdleHooks& hooks) override;
  std::uintptr_t Steal() override;
  bool MayHaveStealable() const override;
  bool WakeOneSleeper() override;
  void SetThieves(std::vector<SchedulingStrategy*> thieves) override;
  void Stop() override;
  void TakeBack(std::size_t worker, absl::FunctionRef<bool(std::uintptr_t)> wanted,
                absl::FunctionRef<bool(std::uintptr_t)> taken) override;
  void NoteDeadEntries() override;
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

  // Steps of the protocol, public for the step-by-step tests (scheduling_group_test.cc).
  // S1-S3: polls the queue for up to the spin time if fewer than two workers already
  // do; 0 if nothing came (or two others were spinning).
  std::uintptr_t SpinningTake(std::size_t worker);
  // W1-W4: sleeps until woken; returns an entry found on the way, or 0.
  std::uintptr_t WaitForEntry(std::size_t worker, IdleHooks& hooks);

  // Tests only, a test seam (test_seams.h): a producer preempted inside its push (see
  // "More work" in the .cc).
  std::uint64_t BeginStalledPushForTesting();
  void FinishStalledPushForTesting(std::uint64_t position, std::uintptr_t entry,
                                   bool stealable);

  // Bit i set: worker i spins (or is marked sleeping) right now; relaxed snapshots.
  std::uint64_t spinning_workers() const;
  std::uint64_t sleeping_workers() const;

 private:
  // After taking a fiber on a wake-up path: wakes one more worker if fibers are still
  // queued ("more work" at the top of strategy_v1.cc).
  void WakeAnotherIfQueued();
  void WakeUpThief();
  void WakeUpOneWorker();
  bool WakeUpOneSpinningWorker();
  bool WakeUpOneSleepingWorker();
  void WakeUpWorkers(std::size_t n);

  const SchedulingGroupOptions options_;
  GlobalRunQueue queue_;

  // Bit i set: worker i spins (or sleeps). Unused high bits stay 0.
  alignas(64) std::atomic<std::uint64_t> spinning_workers_{0};
  alignas(64) std::atomic<std::uint64_t> sleeping_workers_{0};
  // A spinner that found work sets this to ask the other spinner to recruit a sleeper
  // (so the producer never pays for that wake-up).
  alignas(64) std::atomic<bool> pending_spinner_wakeup_{false};
  ThreadCounter wakeups_;  // statistics (metrics.h)

  // Its own line: idle workers bump the cursors below on every steal attempt, which
  // must not bounce the line of the flag above (pingpong's round trip cost 10% more
  // when they shared one).
  alignas(64) std::vector<SchedulingStrategy*> thieves_;  // immutable once workers run
  std::atomic<std::size_t> next_thief_{0};

  WaitSlot wait_slots_[kMaxWorkersPerGroup];
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
