// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_V1_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

// Strategy v1 in the registry (strategy_registry.h). It has no flags of its own.
extern const StrategyEntry kStrategyV1Entry;

class StrategyV1;

// v1's own wake-up protocol (P1-P4, S1-S3, W1-W4 at the top of strategy_v1.cc): at most
// two spinning workers, a producer that hands its fiber to a spinner or wakes the
// lowest-numbered sleeper, and a spinner that recruits the next sleeper. It runs on the
// same idle path as the others (idle_path.cc): "searching" here means spinning.
// Thread-safety as IdleNotifier says.
class SpinnerNotifier final : public IdleNotifier {
 public:
  SpinnerNotifier(StrategyV1& owner, std::size_t workers);

  void Notify() override;                 // P1-P4
  void NotifyMany(std::size_t n) override;  // P1, then a batch's claims and wake-ups
  bool WakeOneSleeper() override;          // P3 alone

  bool StartSearching(std::size_t w) override;  // S1
  // S2; false once a producer claimed w. A woken worker whose look found nothing joins
  // the spinners here (S1).
  bool KeepSearching(std::size_t w) override;
  std::uintptr_t StopSearching(std::size_t w, bool searching,
                               std::uintptr_t entry) override;  // S3
  void Announce(std::size_t w) override;                        // W1, W2
  void Cancel(std::size_t w, bool found) override;              // W3
  bool EndSleep(std::size_t w) override;                        // after W4

  // Bit i set: worker i spins (or is marked sleeping) right now; relaxed snapshots.
  std::uint64_t spinning_workers() const;
  std::uint64_t sleeping_workers() const;

 private:
  // What worker w's idle path is doing, as this protocol sees it; w's thread only.
  enum class Mode : unsigned char {
    kIdle,
    kSpinning,  // its bit is in spinning_workers_ (S1 to S3)
    kWoken,     // a producer cleared its sleeping bit and woke it: it owes a poll
  };

  // S1: joins the spinner set if fewer than two spin (mode kSpinning); false if not.
  bool TryJoinSpinners(std::size_t w);
  // After taking a fiber on a wake-up path: wakes one more worker if fibers are still
  // queued ("more work" at the top of strategy_v1.cc).
  void WakeAnotherIfQueued();
  bool WakeUpOneSpinningWorker();
  bool WakeUpOneSleepingWorker();
  void WakeUpWorkers(std::size_t n);

  StrategyV1& owner_;  // its queue
  Mode mode_[kMaxWorkersPerGroup] = {};
  // Bit i set: worker i spins (or sleeps). Unused high bits stay 0.
  alignas(64) std::atomic<std::uint64_t> spinning_workers_{0};
  alignas(64) std::atomic<std::uint64_t> sleeping_workers_{0};
  // A spinner that found work sets this to ask the other spinner to recruit a sleeper
  // (so the producer never pays for that wake-up).
  alignas(64) std::atomic<bool> pending_spinner_wakeup_{false};
};

// Scheduling strategy v1: one bounded run queue shared by the group's workers, and the
// SpinnerNotifier above. The protocol and why it loses no wake-up are at the top of
// strategy_v1.cc. Thread-safety as SchedulingStrategy says.
class StrategyV1 final : public SchedulingStrategy {
 public:
  explicit StrategyV1(const SchedulingGroupOptions& options);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  std::uintptr_t Steal() override;
  bool MayHaveStealable() const override;
  void TakeBack(std::size_t worker, absl::FunctionRef<bool(std::uintptr_t)> wanted,
                absl::FunctionRef<bool(std::uintptr_t)> taken) override;
  void NoteDeadEntries() override;
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

  // The protocol's state, for the step-by-step tests.
  const SpinnerNotifier& spinner_notifier() const { return notifier_; }

  // Tests only, a test seam (test_seams.h): a producer preempted inside its push (see
  // "More work" in the .cc).
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
