// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gflags/gflags_declare.h"
#include "runtime/internal/relaxed_queue.h"
#include "runtime/internal/scheduling_strategy.h"
#include "runtime/internal/wait_slot.h"

DECLARE_uint64(fiber_relaxed_lists_per_worker);

namespace spindle::internal {

// Strategy relaxed's own settings, from its flags (defined in strategy_relaxed.cc).
struct StrategyRelaxedSettings {
  // The group's queue has workers x this many lists (--fiber_relaxed_lists_per_worker).
  std::size_t lists_per_worker = 2;
  static StrategyRelaxedSettings FromFlags();
};

// Strategy relaxed in the registry (strategy_registry.h).
extern const StrategyEntry kStrategyRelaxedEntry;

// Scheduling strategy "relaxed" (seed 001): the group's ready fibers in one
// RelaxedQueue of workers x --fiber_relaxed_lists_per_worker small FIFO lists (push to
// a random free list, pop the older of two random heads, dynamic entropy for
// locality), and a notifier that wakes a sleeper only when nobody searches, the woken
// worker counted as a searcher from the moment it is chosen. The protocol and why it
// loses no wake-up are at the top of strategy_relaxed.cc. Thread-safety as
// SchedulingStrategy says.
class StrategyRelaxed final : public SchedulingStrategy {
 public:
  StrategyRelaxed(const SchedulingGroupOptions& options,
                  const StrategyRelaxedSettings& settings);
  ~StrategyRelaxed() override;

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
  void NoteDeadEntries() override { queue_.NoteDeadEntries(); }
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

 private:
  struct alignas(64) Worker {
    RelaxedCursor cursor;  // the owner's alone
    WaitSlot slot;
  };

  RelaxedCursor& CursorFor(std::size_t origin);
  // After a push: the producer's side of the notifier (R-N1 to R-N5).
  void Notify();
  // R-N4/R-N5: takes a searcher count (from 0 only when `only_if_none_search`), gives
  // it to the lowest sleeper and wakes it; false if there was none (count given back).
  bool WakeSleeperAsSearcher(bool only_if_none_search);
  // R-I4: gives our searcher count back; the last searcher out that found work wakes
  // another worker while fibers are queued.
  void StopSearching(bool found);
  // Clears our sleeping bit; true if a waker had cleared it (we then hold its count).
  bool ClearSleepingBit(std::size_t worker);
  void WakeAnotherIfQueued();
  void WakeUpThief();
  std::uintptr_t SearchOnce(std::size_t worker, IdleHooks* hooks);

  const SchedulingGroupOptions options_;
  const std::size_t max_searching_;
  RelaxedQueue queue_;
  std::unique_ptr<Worker[]> workers_;

  // Workers searching for work, plus workers a waker chose and has not yet seen run
  // (Go's nmspinning with wakep()'s hand-over): while it is not 0, producers wake nobody.
  alignas(64) std::atomic<std::size_t> searching_{0};
  // Bit i set: worker i announced that it sleeps (or is about to).
  alignas(64) std::atomic<std::uint64_t> sleeping_{0};
  ThreadCounter wakeups_;  // statistics (metrics.h)

  // Its own line, as in v2: idle workers bump the cursor on every steal attempt.
  alignas(64) std::vector<SchedulingStrategy*> thieves_;  // immutable once workers run
  std::atomic<std::size_t> next_thief_{0};
  std::atomic<std::size_t> next_victim_list_{0};  // spreads cross-group steals
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_
