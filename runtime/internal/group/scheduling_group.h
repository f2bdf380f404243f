// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
#define SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/pool_admission.h"
#include "runtime/internal/group/group_stats.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/group/busy_poll.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

class StrategyV2;  // runtime/internal/strategies/strategy_v2.h

// One scheduling group: a set of workers that share ready fibers, whatever the strategy.
// This is the strategy-neutral face: starting fibers and making them ready (the
// producer side of ready_batch.h), on the strategy chosen once from
// SchedulingGroupOptions::strategy, which keeps ready fibers and wakes idle workers.
// The rest are units of their own: running and parking fibers (parking.h, and
// ready_batch.h's ParkFiber/YieldFiber), the idle path (idle_path.h), the busy workers'
// poll and timers (busy_poll.h), statistics (group_stats.h), an inline join's take-back
// (take_back.h).
//
// Thread-safety: the producer side (StartFiber*, and ready_batch.h's ResumeFiber and
// QueueReady*) is callable from any thread. BindWorkerThread by each worker's thread.
// Owned by the Runtime; outlives its workers and every fiber that ran in it.
//
// Stealing between groups: a worker of another group (a thief) calls
// thief->StealEntryFrom(victim) from its idle path. Allocate groups with
// `new (options.memory_node) SchedulingGroup(options)`: the object and its strategy's
// state and queues then live on that node.
class SchedulingGroup {
 public:
  static constexpr std::size_t kMaxWorkers = kMaxWorkersPerGroup;
  static constexpr std::size_t kNoWorker = SchedulingStrategy::kNoWorker;

  explicit SchedulingGroup(const SchedulingGroupOptions& options);
  ~SchedulingGroup();
  static void* operator new(std::size_t size, int numa_node);
  static void operator delete(void* pointer, std::size_t size);
  static void operator delete(void* pointer, int numa_node);  // a throwing constructor
  SchedulingGroup(const SchedulingGroup&) = delete;
  SchedulingGroup& operator=(const SchedulingGroup&) = delete;

  // Queues a new fiber (ownership of `desc` passes to the group) and wakes a worker.
  // Any thread.
  void StartFiber(FiberDesc* desc);
  // StartFiber() by a fiber running on worker `worker` of this group (its own thread):
  // the same, without looking the thread's binding up.
  void StartFiberOnWorker(FiberDesc* desc, std::size_t worker);
  // Queues `n` new fibers at once and wakes up to `n` workers. Any thread.
  void StartFibers(FiberDesc* const* descs, std::size_t n);
  // Every start of a fiber in a pool with a cap is counted here, whatever started it
  // (Fiber, StartFiberDetached, RunAsFiber, a timer's callback, a future's
  // continuation, a dispatch), so that every end, which gives a place back, matches a
  // count: a start that a TryStart form admitted (it reserved a stack) was counted by
  // its admission; any other counts now, past the cap or not. Such a fiber ends on a
  // worker (ReclaimFiber gives the place back): it is never run inline by its joiner,
  // so the join path pays nothing for caps.
  void CountAdmission(FiberDesc* desc) const {
    if (__builtin_expect(admission_ != nullptr, 0)) CountCappedStart(desc);
  }
  // Called by worker `worker`'s thread before it takes its first fiber, and with
  // kNoWorker when it leaves: how the group knows which of its workers a thread is.
  void BindWorkerThread(std::size_t worker);

  // ---- Thief side (a worker of this group, taking from another group `victim`).

  // A stealable entry of `victim` (counted as stolen), for this group's idle path to
  // make Running on worker `worker` of ours; 0 if none. Never blocks. The victim may
  // give more than one (SchedulingStrategy::StealBatch): the others are queued here as
  // worker `worker`'s pushes, with the wake-up of any push, so our idle siblings find
  // them in our own queues.
  std::uintptr_t StealEntryFrom(SchedulingGroup* victim, std::size_t worker);
  // The most entries one steal between groups takes.
  static constexpr std::size_t kMaxStealBatch = 32;
  // A racy hint: whether stealing from this group may find something.
  bool MayHaveStealable() const { return strategy_->MayHaveStealable(); }
  // Groups whose workers may steal from this one (see SchedulingStrategy::SetThieves).
  // Those on our node also adopt the fibers of ours that their workers wake (see
  // AdoptsOnWake). Before any worker starts.
  void SetThieves(const std::vector<SchedulingGroup*>& thieves);
  // Whether a fiber of ours that a worker of `group` makes Ready (ResumeFiber, a
  // synchronization primitive's wake-up; not a timer round) is queued in `group`, as
  // that worker's own wake-up, instead of here: `group` may steal from us and is on our
  // node, and the fiber is not scheduling_group_local. It becomes that group's when made
  // Running, as a stolen fiber does (Go's ready() puts a goroutine on the waker's P).
  // Queued here it would be a push from outside the group: our global queue, which busy
  // workers look at once in 61 takes, where a fork-join parent whose child another group
  // stole would wait for its children on the tree's critical path.
  bool AdoptsOnWake(const SchedulingGroup* group) const {
    for (const SchedulingGroup* adopter : adopters_) {
      if (adopter == group) return true;
    }
    return false;
  }

  bool stopping() const { return strategy_->stopping(); }

  std::size_t index() const { return options_.index; }
  // Where index() is kept in a SchedulingGroup, for debuggers (debug_info.h).
  static std::size_t IndexOffsetForDebuggers();
  // Its pool's number (RuntimeLayout::pools; 0: the default pool). Fibers never leave
  // their pool: only groups of the same pool steal from each other or adopt each
  // other's fibers on a wake-up (the runtime hands out thieves pool by pool).
  std::size_t pool() const { return options_.pool; }
  // The live-fiber count of its pool when the pool has a cap; null otherwise (its
  // fibers are not counted). Set once before any fiber starts (SetAdmission).
  PoolAdmission* admission() const { return admission_; }
  void SetAdmission(PoolAdmission* admission) { admission_ = admission; }
  int numa_node() const { return options_.numa_node; }
  std::size_t size() const { return options_.workers; }
  const SchedulingGroupOptions& options() const { return options_; }
  // The strategy behind this face: its poller (SetPoller), Stop(), its statistics, and
  // for tests its protocol step by step.
  SchedulingStrategy* strategy() const { return strategy_.get(); }
  // The same, when it is v2 (null otherwise): the yield path calls its swap
  // (StrategyV2::SwapOnYield) directly, inlined, not through the vtable.
  StrategyV2* strategy_v2() const { return strategy_v2_; }
  // The busy workers' share of the group's poller and timers (SetTimers,
  // EnsurePollerAwake, what Yield and Park check on every switch).
  BusyPoll& busy_poll() { return busy_poll_; }
  // The strategy-neutral statistics. Counting is no change to the group (hence const):
  // each Count* call has GroupStats' thread rules.
  GroupStats& stats() const { return stats_; }

 private:
  // ready_batch.h's producer functions, for the fiber's group.
  friend void ResumeFiber(FiberEntity* fiber);
  friend void QueueReadyFiber(FiberEntity* fiber);
  friend void QueueReadyFibers(SchedulingGroup* group, FiberEntity* const* fibers,
                               std::size_t n, bool timer_round);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason);
  // Enqueue() from a thread that already read its binding: `origin` is its worker
  // number in this group or kNoWorker, `foreign` whether it is no group's worker.
  void EnqueueFrom(std::size_t origin, bool foreign, std::uintptr_t entry, bool stealable,
                   ReadyReason reason);
  // Queues n descriptors or Ready fibers in batches of 64 (EnqueueBatch, or
  // EnqueueWoken for a timer round queued from outside the group).
  // The calling thread's binding, read once by the caller: `bound_group` (null: no
  // group's worker) and its worker `bound_index`.
  template <class T>
  void EnqueueMany(T* const* items, std::size_t n, bool timer_round,
                   const SchedulingGroup* bound_group, std::size_t bound_index);
  // QueueReadyFiber(): `fiber` is Ready (the caller made it so under its lock).
  void QueueReady(FiberEntity* fiber);
  // CountAdmission() in a pool with a cap.
  void CountCappedStart(FiberDesc* desc) const;

  const SchedulingGroupOptions options_;
  std::unique_ptr<SchedulingStrategy> strategy_;
  StrategyV2* const strategy_v2_;  // strategy_, if v2
  BusyPoll busy_poll_;
  mutable GroupStats stats_;
  // The thieves on our node (SetThieves, before any worker starts; read-only after).
  std::vector<const SchedulingGroup*> adopters_;
  PoolAdmission* admission_ = nullptr;  // its pool's, if capped (read-only after start)
};
static_assert(SchedulingGroup::kMaxWorkers <= GroupStats::kMaxWorkers,
              "GroupStats keeps a cell per worker");

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
