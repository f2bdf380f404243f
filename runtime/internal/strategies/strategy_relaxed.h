// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "gflags/gflags_declare.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/queues/relaxed_queue.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

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
// locality), and the searcher/sleeper notifier it shares with v2 (notifier.cc).
// Thread-safety as SchedulingStrategy says.
class StrategyRelaxed final : public SchedulingStrategy {
 public:
  StrategyRelaxed(const SchedulingGroupOptions& options,
                  const StrategyRelaxedSettings& settings);
  ~StrategyRelaxed() override;

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  // A timer round's fibers go ahead of the queued ones (RelaxedQueue::PushUrgent).
  void EnqueueWoken(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  std::size_t StealBatch(std::uintptr_t* out, std::size_t max) override;
  bool MayHaveStealable() const override;
  bool TakeBackEntry(std::size_t worker, std::uintptr_t entry) override;
  void NoteDeadEntries() override { queue_.NoteDeadEntries(); }
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

 private:
  struct alignas(64) Worker {
    RelaxedCursor cursor;  // the owner's alone
  };

  RelaxedCursor& CursorFor(std::size_t origin);

  const SchedulingGroupOptions options_;
  RelaxedQueue queue_;
  std::unique_ptr<Worker[]> workers_;
  SearchNotifier notifier_;  // notifier.cc: the protocol v2 shares
  std::atomic<std::size_t> next_victim_list_{0};  // spreads cross-group steals
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_RELAXED_H_
