// Copyright 2026 The Spindle Authors.
//
// A strategy as the idle-path models (runtime/internal/idle/notifier_model.h's
// GroupIdleModel) drive it, over its model build (strategies_for_models): plain threads
// start fibers (Enqueue from no worker, then its Notify), a worker's fiber that yields
// goes through the strategy's swap or is queued again through Enqueue(kYielded)
// (parking.cc's YieldFiber), and the
// worker that takes the last entry stops the strategy (Stop(): its flag and WakeAll),
// as TerminateRuntime() does. Entries are even words, which the strategies treat as
// fibers whose control block they never read on these paths (descriptors are odd; a
// full local queue, which would read an entry's flags, cannot happen with these few).
// Model builds only.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGIES_STRATEGY_MODEL_GROUP_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGIES_STRATEGY_MODEL_GROUP_H_

#include <cstddef>
#include <cstdint>

#include "runtime/internal/strategies/scheduling_strategy.h"
#include "runtime/internal/strategies/strategy_v2.h"

namespace spindle::internal::testing {

// The members GroupIdleModel needs of a group, over the strategy a derived group owns
// and names with Drive() in its constructor. Used by one model run's threads, which
// take turns.
class StrategyModelGroup {
 public:
  StrategyModelGroup(const StrategyModelGroup&) = delete;
  StrategyModelGroup& operator=(const StrategyModelGroup&) = delete;

  IdleNotifier& notifier() { return strategy_->notifier(); }
  // A plain thread's StartFiber.
  void Produce() {
    next_entry_ += 2;  // plain: a model's threads take turns
    strategy_->Enqueue(next_entry_, /*stealable=*/true, ReadyReason::kStarted,
                       SchedulingStrategy::kNoWorker);
  }
  // A fiber running on worker w starts a fiber (StartFiber from a worker's fiber).
  void Spawn(std::size_t w) {
    next_entry_ += 2;  // plain, as in Produce()
    strategy_->Enqueue(next_entry_, /*stealable=*/true, ReadyReason::kStarted, w);
  }
  std::uintptr_t TakeOwn(std::size_t w) { return strategy_->TakeNext(w); }
  // A yield (parking.cc's YieldFiber): v2's swap where it applies (the yielder queued,
  // then the next entry taken: SwapToNext), else the next entry of worker w's own
  // queues (TakeNextForSwitch) and the yielder queued again (RequeueBeforeSwitch).
  // Returns the entry w runs next: `entry` itself if nothing else was ready, 0 if a
  // sibling took the yielder during the swap.
  std::uintptr_t YieldTo(std::size_t w, std::uintptr_t entry) {
    if (swapper_ != nullptr) {
      if (StrategyV2::Worker* me = swapper_->SwapApplies(w)) {
        return swapper_->SwapOnYield(*me, entry);
      }
    }
    const std::uintptr_t next = strategy_->TakeNext(w);
    if (next == 0) return entry;
    strategy_->Enqueue(entry, /*stealable=*/true, ReadyReason::kYielded, w);
    return next;
  }
  void Stop() { strategy_->Stop(); }
  bool Stopping() const { return strategy_->stopping(); }
  // After the run: nothing left queued.
  bool Empty() const { return strategy_->UnsafeEmpty(); }

 protected:
  StrategyModelGroup() = default;
  ~StrategyModelGroup() = default;
  // `swapper`: the strategy itself where it is v2 and yields try its swap first, as
  // YieldFiber does; null models the general path alone.
  void Drive(SchedulingStrategy* strategy, StrategyV2* swapper = nullptr) {
    strategy_ = strategy;
    swapper_ = swapper;
  }

 private:
  SchedulingStrategy* strategy_ = nullptr;
  StrategyV2* swapper_ = nullptr;
  std::uintptr_t next_entry_ = 0;
};

}  // namespace spindle::internal::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGIES_STRATEGY_MODEL_GROUP_H_
