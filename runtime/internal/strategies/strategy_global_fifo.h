// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_GLOBAL_FIFO_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_GLOBAL_FIFO_H_

#include <cstddef>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/atomic.h"
#include "fiber/internal/os_mutex.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

// Strategy globalfifo in the registry (strategy_registry.h). It has no flags of its own.
extern const StrategyEntry kStrategyGlobalFifoEntry;

// Seed 000's GlobalFIFO baseline as a strategy: the group's ready fibers in one
// unbounded FIFO under a mutex, and the searcher/sleeper notifier of v2 and relaxed
// (notifier.cc). It exists to be beaten: every sweep and chart runs it beside the
// others, so each strategy's figures have an honest floor (the simplest correct
// scheduler, with the same idle path, timers and stealing between groups). Not meant
// for production: every push and pop takes the one lock.
//
// Thread-safety as SchedulingStrategy says; the queue is guarded by `lock_`.
class StrategyGlobalFifo final : public SchedulingStrategy {
 public:
  explicit StrategyGlobalFifo(const SchedulingGroupOptions& options);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  std::size_t StealBatch(std::uintptr_t* out, std::size_t max) override;
  bool MayHaveStealable() const override;
  bool TakeBackEntry(std::size_t worker, std::uintptr_t entry) override;
  // A joiner left a dead entry it could not take back: the next push that finds the
  // queue at its compaction size drops the dead ones (see the .cc).
  void NoteDeadEntries() override;
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

 private:
  struct Queued {
    std::uintptr_t entry;
    bool stealable;
  };

  // Before a push, under the lock: drops dead entries when the queue reached
  // compact_at_ and some were noted; sets the next compaction size.
  void CompactIfDue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  // Adds `delta` to the stealable count (and its lock-free mirror).
  void CountStealable(std::ptrdiff_t delta) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);

  const SchedulingGroupOptions options_;
  mutable OsMutex lock_;
  std::deque<Queued> queue_ ABSL_GUARDED_BY(lock_);
  // The size at which a push drops dead entries (if any were noted): twice what was
  // left by the last compaction, at least kMinCompactSize.
  std::size_t compact_at_ ABSL_GUARDED_BY(lock_);
  // Queued entries a thief may take, and its mirror for lock-free looks (stored under
  // the lock, relaxed).
  std::size_t stealable_count_ ABSL_GUARDED_BY(lock_) = 0;
  Atomic<std::size_t> stealable_size_{0};
  // Set by NoteDeadEntries() (relaxed: a hint), cleared by the compaction.
  Atomic<bool> dead_entries_{false};
  // queue_.size(), stored under the lock (relaxed): the notifier's and the thieves'
  // lock-free look, read after their fences.
  Atomic<std::size_t> size_{0};
  SearchNotifier notifier_;  // notifier.cc: the protocol v2 and relaxed share
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_GLOBAL_FIFO_H_
