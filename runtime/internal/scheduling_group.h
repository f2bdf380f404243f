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
#include "absl/functional/any_invocable.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"
#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/group_timers.h"
#include "runtime/internal/metrics.h"
#include "runtime/internal/scheduling_strategy.h"

namespace spindle::internal {

// One scheduling group: a set of workers that share ready fibers, whatever the strategy.
// This is the strategy-neutral face: starting fibers, making them ready, parking,
// yielding and dispatching, turning queue entries into running fibers (a stack for a new
// fiber, its state, its group) and the statistics that do not depend on the strategy.
// How ready fibers are kept and idle workers woken is the SchedulingStrategy's
// (strategy_v1.cc, strategy_v2.cc), chosen once from SchedulingGroupOptions::strategy.
//
// Thread-safety: the producer side (StartFiber*, Resume, QueueReady*) is callable from
// any thread. The idle path (idle_path.h) of worker `worker` runs on that worker's
// thread only, after BindWorkerThread(worker) there. Yield/Halt/Dispatch are called by the
// fiber they name, running on one of this group's workers. Owned by the Runtime;
// outlives its workers and every fiber that ran in it.
//
// Stealing between groups: a worker of another group (a thief) calls
// thief->StealEntryFrom(victim) from its idle hooks. Allocate groups with
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

  // ---- Producer side (any thread).

  // Queues a new fiber (ownership of `desc` passes to the group) and wakes a worker.
  void StartFiber(FiberDesc* desc);
  // Queues `n` new fibers at once and wakes up to `n` workers.
  void StartFibers(FiberDesc* const* descs, std::size_t n);
  // Makes a Waiting fiber of this group Ready and queues it. Takes the fiber's scheduler
  // lock, so it waits for a parking fiber to finish switching away (see Halt()).
  void Resume(FiberEntity* fiber);
  // Queues a fiber that the caller has already made Ready under its scheduler lock
  // (collected instead while a ReadyBatch is alive on this thread).
  void QueueReady(FiberEntity* fiber);
  // Queues `n` Ready fibers at once and wakes up to `n` workers.
  void QueueReadyBatch(FiberEntity* const* fibers, std::size_t n);
  // The same for the fibers woken by one firing round of this group's TimerWorker
  // (SchedulingStrategy::EnqueueWoken: v2 runs them ahead of its local queues).
  void QueueTimerRound(FiberEntity* const* fibers, std::size_t n);

  // ---- Worker side (worker `worker` of this group only). Its idle path (idle_path.h)
  // is a friend: it takes entries from the strategy and makes them Running here.

  // Called by worker `worker`'s thread before it takes its first fiber, and with
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

  // ---- Running fiber side (the fiber `self`, running on a worker of this group).
  // In debug and sanitizer builds, Yield, Halt and Dispatch abort if the calling thread
  // holds a pthread mutex (os_lock_check.h).

  // Lets other Ready fibers run; returns at once if there are none.
  void Yield(FiberEntity* self);
  // Parks `self`: it becomes Waiting and the worker runs something else. The caller holds
  // self's scheduler lock (`self_lock`); it is released by the context switched to, after
  // self is saved, so a Resume() racing with this cannot run self too early. Returns
  // when some thread has Resume()d self.
  void Halt(FiberEntity* self, std::unique_lock<Spinlock> self_lock);
  // Runs the new fiber `desc` right now on this worker; `self` is queued and runs later.
  void Dispatch(FiberEntity* self, FiberDesc* desc);
  // Called on this group (the one `desc` was started in) by the fiber `joiner`, which
  // has just run `desc`'s fiber inline after winning desc->claim (Fiber::join()). Takes
  // the dead entry back out of the queues, and any earlier one of this joiner's worker
  // that has meanwhile come to the front, so that joining in a loop leaves nothing
  // behind (see "Dead entries" in scheduling_group.cc). Takes over the joiner's
  // reference to `desc` (FiberDesc::run_inline_refs).
  void TakeBackRunInline(FiberEntity* joiner, FiberDesc* desc);

  // ---- Lifetime.

  // Makes every worker's idle path return nullptr from now on; the caller then joins
  // the workers. Called once no fiber is alive.
  void Stop() { strategy_->Stop(options_.workers); }
  // The group's event source (io/'s reactor), or null; see group_poller.h. Set once,
  // before or while workers run; the poller outlives the group.
  void SetPoller(GroupPoller* poller) { strategy_->SetPoller(poller); }
  // The group's timers, fired by busy workers when due (group_timers.h); nullptr
  // removes them. release: pairs with the acquire load in BusyPollDue() and
  // the idle path, which then see the object built.
  void SetTimers(GroupTimers* timers) { timers_.store(timers, std::memory_order_release); }
  GroupPoller* poller() const { return strategy_->poller(); }
  // Called by a fiber about to park on IO: if nobody holds the poller token while
  // descriptors are registered, wakes a sleeping worker to poll (one that slept on its
  // futex when nothing was registered, or lost the token race).
  void EnsurePollerAwake();
  bool stopping() const { return strategy_->stopping(); }

  std::size_t index() const { return options_.index; }
  int numa_node() const { return options_.numa_node; }
  std::size_t size() const { return options_.workers; }
  const SchedulingGroupOptions& options() const { return options_; }
  // The strategy behind this face, for tests that drive its protocol step by step.
  SchedulingStrategy* strategy() const { return strategy_.get(); }

  // Statistics (relaxed snapshots; see runtime/metrics.h for what each means).
  std::uint64_t fibers_run() const;           // fibers made Running by our workers
  std::uint64_t fibers_run(std::size_t worker) const;  // ... by worker `worker`
  std::uint64_t fibers_started() const;
  // New fibers given a stack here (their first run), and fibers started here that a
  // joiner ran inline (they never get a stack).
  std::uint64_t fibers_begun() const;
  std::uint64_t fibers_run_inline() const;
  std::uint64_t steals_in_same_node() const;  // stolen by us from our node
  std::uint64_t steals_in_cross_node() const;  // stolen by us from other nodes
  std::uint64_t steals_out() const;           // stolen from us by other groups
  StrategyStats strategy_stats() const { return strategy_->stats(); }
  // Ready-to-run latency samples (nanoseconds; see StampReady()) of all workers, or of
  // worker `worker`.
  HistogramSnapshot ready_latency() const;
  HistogramSnapshot ready_latency(std::size_t worker) const;

  // One readiness in ReadySamplePeriod() is timed (Go samples scheduling latency the
  // same way, 1 in 8): a cycle-clock read costs tens of cycles (a VM may make it more),
  // and at 1 in 8 the two reads per sample were half of yield's 12% regression over the
  // tree before the metrics (perf, 2-core KVM). The default, 1 in 64, still gives a
  // million-fiber workload 15k samples; --fiber_ready_latency_sample_period sets it.
  static constexpr std::uint32_t kDefaultReadySamplePeriod = 64;
  // Sets the period (a power of two) for every group. Only while no runtime runs
  // (StartRuntime() calls it before it creates the groups).
  static void SetReadySamplePeriod(std::uint32_t period);
  static std::uint32_t ReadySamplePeriod();

 private:
  friend class IdlePath;

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason);
  // Enqueue() from a thread that already read its binding: `origin` is its worker
  // number in this group or kNoWorker, `foreign` whether it is no group's worker.
  void EnqueueFrom(std::size_t origin, bool foreign, std::uintptr_t entry, bool stealable,
                   ReadyReason reason);
  // Queues n descriptors or Ready fibers in batches of 64 (EnqueueBatch, or
  // EnqueueWoken for a timer round queued from outside the group).
  template <class T>
  void EnqueueMany(T* const* items, std::size_t n, bool timer_round);
  // Gives `desc` a stack on the calling thread, worker `worker` of this group (or
  // kNoWorker: not one of ours).
  FiberEntity* Instantiate(FiberDesc* desc, std::size_t worker);
  // Whether the calling thread's next readiness is one of its 1 in ReadySamplePeriod()
  // (a per-thread tick, read out of line: a fiber may move threads between two calls).
  static bool ThisThreadSamplesReadiness();
  // Marks `fiber`/`desc` as made Ready now, for the ready-to-run latency (one in
  // ReadySamplePeriod() readinesses is stamped with the cycle clock; the rest with 0).
  // A fiber's stamp is written only when sampled, and cleared by the worker that takes
  // it (MakeRunning()): a waker on another CPU must not write the wakee's control
  // block on every wake-up (that line then bounces between the CPUs: pingpong's round
  // trip cost 10% more when every wake-up wrote a stamp or a count there).
  static void StampReady(FiberEntity* fiber) {
    if (ThisThreadSamplesReadiness()) fiber->ready_stamp = CycleClockNow();
  }
  static void StampReady(FiberDesc* desc) {
    desc->ready_stamp = (desc->id & ReadySampleMask()) == 0 ? CycleClockNow() : 0;
  }
  // The period minus 1. relaxed: written only while no runtime runs; thread creation
  // orders it for the workers, and StartRuntime() for the threads that start fibers.
  static std::uint32_t ReadySampleMask() {
    return ready_sample_mask_.load(std::memory_order_relaxed);
  }
  static std::atomic<std::uint32_t> ready_sample_mask_;
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
  // Yield under chaos mode's decisions: out of line and cold, off the plain path. The
  // Chaos* members are defined only in builds with the test seams (test_seams.h).
  __attribute__((noinline, cold)) void ChaosYield(FiberEntity* self);
  // Whether worker `worker` (switching fibers) should poll the group's poller or fire
  // its timers now: every 64th switch on this worker looks at the clock (the counter
  // has one writer). Inline: it is on every Yield and Halt.
  bool BusyPollDue(std::size_t worker) {
    if (worker >= options_.workers) return false;  // not a worker
    if ((++worker_counters_[worker].switches & 63) != 0) return false;
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

  // Chaos mode (chaos.h). D1: `entry`, just taken by worker `worker` (this group's),
  // or a random one of up to three more taken from its sources; the others are queued
  // again (ChaosQueue; a descriptor unclaimed first). Returns the entry to run.
  // Out of line and cold: inlined, it made TakeNextForSwitch too big to inline into
  // Yield (24 instructions per switch, callgrind).
  __attribute__((noinline, cold)) std::uintptr_t ChaosPick(std::uintptr_t entry,
                                                           std::size_t worker);
  // D2: queues `entry` (a Ready fiber or an unclaimed descriptor; `group_local`: its
  // scheduling_group_local) for `reason`, as a push from the calling thread, sometimes
  // on another group of our node or on the shared queue instead of the caller's local
  // one. `origin` is the caller's worker in this group or kNoWorker.
  __attribute__((noinline, cold)) void ChaosQueue(std::uintptr_t entry, bool group_local,
                                                  ReadyReason reason,
                  std::size_t origin);

  const SchedulingGroupOptions options_;
  std::atomic<GroupTimers*> timers_{nullptr};
  const double nanos_per_tick_;  // the cycle clock's (ready-to-run latency)
  std::unique_ptr<SchedulingStrategy> strategy_;

  // One counter per worker, each written by that worker's thread only, so counting a
  // fiber is a plain store on a line no other thread writes.
  struct alignas(64) WorkerCounters {
    SingleWriterCounter fibers_run;
    // The same figures as fibers_*_elsewhere_ below, counted by this worker's thread.
    SingleWriterCounter fibers_started;
    SingleWriterCounter fibers_begun;
    SingleWriterCounter fibers_run_inline;
    // Yield/Halt and loop passes on this worker: every 64th looks at the clock
    // (BusyPollDue, PollAndFireFromIdle).
    std::uint64_t switches = 0;
    // BusyPollDue() said yes: the worker's idle path polls and fires next.
    bool poll_due = false;
    SingleWriterHistogram ready_latency;  // nanoseconds
    // Descriptors that fibers on this worker ran inline and could not take back yet,
    // each with the joiner's reference (TakeBackRunInline). This worker's thread only.
    std::vector<std::pair<SchedulingGroup*, FiberDesc*>> pending_take_backs;
  };
  // Tries to take back every entry of `pending` (worker `worker`'s list); frees those
  // taken and those whose queue reference is gone.
  static void TakeBackPending(
      std::vector<std::pair<SchedulingGroup*, FiberDesc*>>& pending,
      const FiberEntity* joiner);
  WorkerCounters worker_counters_[kMaxWorkers];
  // Adds `n` to `field` of worker `worker`'s counters when the calling thread is that
  // worker of this group, else to `elsewhere` (a thread of another group, a plain
  // thread). A worker's own cell is a load and a store on a line it already writes; a
  // ThreadCounter costs a call to find the thread's row (spawn_join paid ~2% for two
  // per fiber).
  void CountOn(std::size_t worker, SingleWriterCounter WorkerCounters::*field,
               ThreadCounter& elsewhere, std::uint64_t n) {
    if (worker < options_.workers) {
      (worker_counters_[worker].*field).Add(n);
    } else {
      elsewhere.Add(n);
    }
  }
  // `field` summed over the workers, plus `elsewhere` (if any). Any thread.
  std::uint64_t SumOverWorkers(SingleWriterCounter WorkerCounters::*field,
                               const ThreadCounter* elsewhere) const;
  // Bumped from any thread that is not one of our workers (see CountOn): per-thread
  // cells, no shared read-modify-write.
  ThreadCounter fibers_started_elsewhere_;
  ThreadCounter fibers_begun_elsewhere_;
  ThreadCounter fibers_run_inline_elsewhere_;
  ThreadCounter steals_in_same_node_;
  ThreadCounter steals_in_cross_node_;
  ThreadCounter steals_out_;
};

// Blocks until no thread outside the runtime's workers is inside a group's producer
// side (a plain thread or the RunBlocking pool still finishing a wake-up whose fiber
// has already run). TerminateRuntime() calls it once no fiber is live, before it frees
// the groups.
void WaitForForeignProducers();

// A new descriptor for a fiber that runs `start_proc`, with a new id, counted as live.
FiberDesc* NewFiberDesc(absl::AnyInvocable<void()> start_proc);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
