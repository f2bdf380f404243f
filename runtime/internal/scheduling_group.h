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
#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/group_stats.h"
#include "runtime/internal/group_timers.h"
#include "runtime/internal/ready_batch.h"
#include "runtime/internal/scheduling_strategy.h"

namespace spindle::internal {

// One scheduling group: a set of workers that share ready fibers, whatever the strategy.
// This is the strategy-neutral face: starting fibers, making them ready, parking,
// yielding and dispatching (the functions of ready_batch.h), and turning queue entries
// into running fibers (a stack for a new fiber, its state, its group). How ready fibers
// are kept and idle workers woken is the SchedulingStrategy's (strategy_v1.cc,
// strategy_v2.cc), chosen once from SchedulingGroupOptions::strategy; its statistics
// are a GroupStats (group_stats.h), an inline join's take-back is take_back.h's.
//
// Thread-safety: the producer side (StartFiber*, and ready_batch.h's ResumeFiber and
// QueueReady*) is callable from any thread. The idle path (idle_path.h) of worker
// `worker` runs on that worker's thread only, after BindWorkerThread(worker) there.
// Dispatch (and ready_batch.h's ParkFiber/YieldFiber) are called by the fiber they name,
// running on one of this group's workers. Owned by the Runtime; outlives its workers and
// every fiber that ran in it.
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
  // Queues `n` new fibers at once and wakes up to `n` workers. Any thread.
  void StartFibers(FiberDesc* const* descs, std::size_t n);
  // Worker side. The worker's idle path (idle_path.h) is a friend: it takes entries
  // from the strategy and makes them Running here. Called by worker `worker`'s thread before it takes its first fiber, and with
  // kNoWorker when it leaves: how the group knows which of its workers a thread is.
  void BindWorkerThread(std::size_t worker);

  // ---- Thief side (a worker of this group, taking from another group `victim`).

  // A stealable entry of `victim` (counted as stolen), for this group's idle path to
  // make Running; 0 if none. Never blocks.
  std::uintptr_t StealEntryFrom(SchedulingGroup* victim);
  // A racy hint: whether stealing from this group may find something.
  bool MayHaveStealable() const { return strategy_->MayHaveStealable(); }
  // Groups whose workers may steal from this one (see SchedulingStrategy::SetThieves).
  void SetThieves(const std::vector<SchedulingGroup*>& thieves);

  // Runs the new fiber `desc` right now on this worker; `self`, the running fiber, is
  // queued and runs later. Aborts in debug and sanitizer builds if the calling thread
  // holds a pthread mutex (os_lock_check.h).
  void Dispatch(FiberEntity* self, FiberDesc* desc);

  // The group's timers, fired by busy workers when due (group_timers.h); nullptr
  // removes them. release: pairs with the acquire load in BusyPollDue() and
  // the idle path, which then see the object built.
  void SetTimers(GroupTimers* timers) { timers_.store(timers, std::memory_order_release); }
  // Called by a fiber about to park on IO: if nobody holds the poller token while
  // descriptors are registered, wakes a sleeping worker to poll (one that slept on its
  // futex when nothing was registered, or lost the token race).
  void EnsurePollerAwake();
  bool stopping() const { return strategy_->stopping(); }

  std::size_t index() const { return options_.index; }
  int numa_node() const { return options_.numa_node; }
  std::size_t size() const { return options_.workers; }
  const SchedulingGroupOptions& options() const { return options_; }
  // The strategy behind this face: its poller (SetPoller), Stop(), its statistics, and
  // for tests its protocol step by step.
  SchedulingStrategy* strategy() const { return strategy_.get(); }
  // The strategy-neutral statistics. Counting is no change to the group (hence const):
  // each Count* call has GroupStats' thread rules.
  GroupStats& stats() const { return stats_; }

 private:
  friend class IdlePath;
  // ready_batch.h's functions, for the fiber's group.
  friend void ResumeFiber(FiberEntity* fiber);
  friend void QueueReadyFiber(FiberEntity* fiber);
  friend void ParkFiber(FiberEntity* self, std::unique_lock<Spinlock> self_lock);
  friend void YieldFiber(FiberEntity* self);
  friend void QueueReadyFibers(SchedulingGroup* group, FiberEntity* const* fibers,
                               std::size_t n, bool timer_round);
  // take_back.h's, which keeps its pending list in worker_state_.
  friend void TakeBackRunInline(SchedulingGroup* group, FiberEntity* joiner,
                                FiberDesc* desc);

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason);
  // Enqueue() from a thread that already read its binding: `origin` is its worker
  // number in this group or kNoWorker, `foreign` whether it is no group's worker.
  void EnqueueFrom(std::size_t origin, bool foreign, std::uintptr_t entry, bool stealable,
                   ReadyReason reason);
  // Queues n descriptors or Ready fibers in batches of 64 (EnqueueBatch, or
  // EnqueueWoken for a timer round queued from outside the group).
  template <class T>
  void EnqueueMany(T* const* items, std::size_t n, bool timer_round);
  // QueueReadyFiber(): `fiber` is Ready (the caller made it so under its lock).
  void QueueReady(FiberEntity* fiber);
  void Yield(FiberEntity* self);  // YieldFiber()
  // ParkFiber(); see ready_batch.h for the lock hand-over.
  void Halt(FiberEntity* self, std::unique_lock<Spinlock> self_lock);
  // Gives `desc` a stack on the calling thread, worker `worker` of this group (or
  // kNoWorker: not one of ours).
  FiberEntity* Instantiate(FiberDesc* desc, std::size_t worker);
  // Makes the fiber of a taken entry this group's and Running on worker `worker` (whose
  // thread calls this; kNoWorker in tests).
  FiberEntity* MakeRunning(std::uintptr_t entry, std::size_t worker);
  // The next Ready fiber for `self`, which leaves its worker (Yield, Halt), made
  // Running; nullptr if none.
  template <bool kChaos>
  FiberEntity* TakeNextForSwitch(FiberEntity* self);
  // Yield's switch to the next ready fiber, if any (kChaos: chaos mode's decisions).
  // Not analysed: takes self's scheduler lock for the landing hook to release on the
  // other side of the switch, a hand-over the thread-safety analysis cannot follow.
  template <bool kChaos>
  void SwitchToNext(FiberEntity* self) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // Yield under chaos mode's decisions (group_chaos.h): out of line and cold, off the
  // plain path. Defined only in builds with the test seams (test_seams.h).
  __attribute__((noinline, cold)) void ChaosYield(FiberEntity* self);
  // Whether worker `worker` (switching fibers) should poll the group's poller or fire
  // its timers now: every 64th switch on this worker looks at the clock (the counter
  // has one writer). Inline: it is on every Yield and Halt.
  bool BusyPollDue(std::size_t worker) {
    if (worker >= options_.workers) return false;  // not a worker
    if ((++worker_state_[worker].switches & 63) != 0) return false;
    return BusyPollDueSlow(worker);
  }
  __attribute__((noinline)) bool BusyPollDueSlow(std::size_t worker);
  // Step 1 of the idle path (idle_path.cc), on worker `worker`'s own stack: the busy
  // poll and the timers, when Halt() found them due, every 64th pass, or on every pass
  // while the group has a poller.
  void PollAndFireFromIdle(std::size_t worker);
  // From a worker holding no fiber's lock: the busy poll and the timers, where due.
  void PollAndFireIfDue();
  // The landing hook of Yield and Dispatch. Not analysed: releases the scheduler lock
  // that the fiber switched out took before the switch.
  template <bool kChaos>
  static void UnlockAndRequeue(void* fiber) ABSL_NO_THREAD_SAFETY_ANALYSIS;

  const SchedulingGroupOptions options_;
  std::atomic<GroupTimers*> timers_{nullptr};
  std::unique_ptr<SchedulingStrategy> strategy_;
  // Per worker, touched by that worker's thread only.
  struct alignas(64) WorkerState {
    // Yield/Halt and loop passes on this worker: every 64th looks at the clock
    // (BusyPollDue, PollAndFireFromIdle).
    std::uint64_t switches = 0;
    // BusyPollDue() said yes: the worker's idle path polls and fires next.
    bool poll_due = false;
    // Descriptors that fibers on this worker ran inline and could not take back yet,
    // each with its group and the joiner's reference (take_back.cc).
    std::vector<std::pair<SchedulingGroup*, FiberDesc*>> pending_take_backs;
  };
  WorkerState worker_state_[kMaxWorkers];
  mutable GroupStats stats_;
};
static_assert(SchedulingGroup::kMaxWorkers <= GroupStats::kMaxWorkers,
              "GroupStats keeps a cell per worker");

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
