// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
#define SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "absl/functional/function_ref.h"
#include "fiber/internal/fiber_entity.h"
#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/run_queue.h"
#include "runtime/internal/topology.h"
#include "runtime/internal/wait_slot.h"

namespace spindle::internal {

struct SchedulingGroupOptions {
  std::size_t index = 0;                // the group's number in the runtime
  int numa_node = kNoNumaNode;          // its node in the layout (real or fake)
  int memory_node = kNoNumaNode;        // where its run queue lives (a real node)
  std::size_t workers = 1;              // in [1, kMaxWorkers]
  std::size_t run_queue_capacity = 65536;  // a power of two
  // How long an idle worker polls the queue before it sleeps.
  std::chrono::nanoseconds spin_time = std::chrono::microseconds(20);
};

// One scheduling group under strategy v1: a bounded run queue shared by its workers, and
// the v1 wake-up protocol (at most two spinning workers; a producer hands its fiber to
// a spinner or wakes the lowest-numbered sleeper). The protocol and why it loses no
// wake-up are described at the top of scheduling_group.cc.
//
// Thread-safety: the producer side (StartFiber*, Resume) is callable from any thread.
// The worker side (AcquireFiber, SpinningAcquireFiber, WaitForFiber) is called by the
// group's FiberWorker number `worker` only. Yield/Halt/Dispatch are called by the fiber
// they name, running on one of this group's workers. Owned by the Runtime; outlives its
// workers and every fiber that ran in it.
//
// Stealing: a worker of another group (a thief) calls thief->StealFiber(victim) from its
// idle loop; see "Stealing" at the top of scheduling_group.cc. Allocate groups with
// `new (options.memory_node) SchedulingGroup(options)`: the object (its masks and wait
// slots, the workers' shared state) and its run queue's slots then live on that node.
class SchedulingGroup {
 public:
  static constexpr std::size_t kMaxWorkers = 64;

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

  // ---- Worker side (worker `worker` of this group only).

  // Pops a fiber and makes it Running; nullptr if the queue is empty. Stacks for new
  // fibers are taken here, on the worker that will run them.
  FiberEntity* AcquireFiber();
  // Polls the queue for up to the spin time if fewer than two workers already do;
  // nullptr if nothing came (or two others were spinning).
  FiberEntity* SpinningAcquireFiber(std::size_t worker);
  // What an idle worker does once it is marked sleeping (T2 at the top of
  // scheduling_group.cc): go back to polling its victims, or sleep, for at most `limit`
  // (0: until woken).
  struct IdlePlan {
    bool poll = false;
    std::chrono::nanoseconds limit{0};
  };
  // Sleeps until woken; returns a fiber if one was found on the way, else nullptr (the
  // caller loops). Returns nullptr at once when the group is stopping, or when
  // `plan_when_marked()` (asked after the worker is marked sleeping, step W3) says to
  // poll; after its plan's time limit it returns nullptr by itself.
  FiberEntity* WaitForFiber(std::size_t worker,
                            absl::FunctionRef<IdlePlan()> plan_when_marked);

  // ---- Thief side (a worker of this group, taking from another group `victim`).

  // Takes the oldest fiber of `victim`'s run queue if it is stealable (not
  // scheduling_group_local), makes it Running and this group's from now on; nullptr if
  // there is none (the overflow list is never stolen from). Never blocks.
  FiberEntity* StealFiber(SchedulingGroup* victim);
  // Called by worker `worker`'s thread before it takes its first fiber, and with
  // kNoWorker when it leaves: where that thread counts the fibers it runs.
  static constexpr std::size_t kNoWorker = ~std::size_t{0};
  void BindWorkerThread(std::size_t worker);
  // Groups whose workers may steal from this one; a producer that finds every worker of
  // this group busy wakes a sleeping worker of one of them (see "Stealing"). Set before
  // any worker starts, never changed afterwards.
  void SetThieves(std::vector<SchedulingGroup*> thieves);

  // ---- Running fiber side (the fiber `self`, running on a worker of this group).

  // Lets other Ready fibers run; returns at once if there are none.
  void Yield(FiberEntity* self);
  // Parks `self`: it becomes Waiting and the worker runs something else. The caller holds
  // self's scheduler lock (`self_lock`); it is released by the context switched to, after
  // self is saved, so a Resume() racing with this cannot run self too early. Returns
  // when some thread has Resume()d self.
  void Halt(FiberEntity* self, std::unique_lock<Spinlock> self_lock);
  // Runs the new fiber `desc` right now on this worker; `self` is queued and runs later.
  void Dispatch(FiberEntity* self, FiberDesc* desc);

  // ---- Tests only.

  // StartFiber() by a producer preempted inside its push, in two halves: the first
  // claims a run queue position and returns it (consumers see the queue as empty from
  // there on, even past later pushes, until it is published); the second publishes
  // `desc` there and wakes a worker. CHECK-fails if the queue is full.
  std::uint64_t BeginStalledStartForTesting();
  void FinishStalledStartForTesting(std::uint64_t position, FiberDesc* desc);

  // ---- Lifetime.

  // Makes every worker's next wait return nullptr; the caller then joins the workers.
  // Called once no fiber is alive.
  void Stop();
  bool stopping() const;

  std::size_t index() const { return options_.index; }
  int numa_node() const { return options_.numa_node; }
  std::size_t size() const { return options_.workers; }
  std::size_t run_queue_capacity() const { return run_queue_.capacity(); }
  std::size_t UnsafeRunQueueSize() const { return run_queue_.UnsafeSize(); }

  // Statistics (relaxed snapshots).
  std::uint64_t wakeups() const;
  std::uint64_t fibers_run() const;           // fibers made Running by our workers
  std::uint64_t steals_in_same_node() const;  // stolen by us from our node
  std::uint64_t steals_in_cross_node() const;  // stolen by us from other nodes
  std::uint64_t steals_out() const;           // stolen from us by other groups
  // Bit i set: worker i spins (or is marked sleeping) right now; a relaxed snapshot,
  // for tests and debugging.
  std::uint64_t spinning_workers() const;
  std::uint64_t sleeping_workers() const;

 private:
  void Push(std::uintptr_t entry, bool stealable);
  // Pushes n entries in capacity-sized batches; entry_at(i) gives {entry, stealable}.
  template <class EntryAt>
  void PushMany(std::size_t n, EntryAt entry_at);
  void PushSlow(std::uintptr_t entry, bool stealable);
  std::uintptr_t PopOverflow();
  FiberEntity* Instantiate(FiberDesc* desc);
  // Takes the oldest entry (Steal() semantics if `steal`), skipping descriptors a
  // joiner already ran; 0 if none.
  std::uintptr_t TakeEntry(bool steal);
  // Makes the fiber of a taken entry this group's and Running.
  FiberEntity* MakeRunning(std::uintptr_t entry);
  // After taking a fiber on a wake-up path: wakes one more worker if fibers are still
  // queued ("more work" at the top of scheduling_group.cc).
  void WakeAnotherIfQueued();
  void WakeUpThief();
  void WakeUpOneWorker();
  bool WakeUpOneSpinningWorker();
  bool WakeUpOneSleepingWorker();
  void WakeUpWorkers(std::size_t n);
  static void UnlockAndRequeue(void* fiber);

  const SchedulingGroupOptions options_;
  RunQueue run_queue_;

  // Bit i set: worker i spins (or sleeps). Unused high bits stay 0.
  alignas(64) std::atomic<std::uint64_t> spinning_workers_{0};
  alignas(64) std::atomic<std::uint64_t> sleeping_workers_{0};
  // A spinner that found work sets this to ask the other spinner to recruit a sleeper
  // (so the producer never pays for that wake-up).
  alignas(64) std::atomic<bool> pending_spinner_wakeup_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<std::uint64_t> wakeups_{0};
  // One counter per worker, each written by that worker's thread only, so counting a
  // fiber is a plain store on a line no other thread writes.
  struct alignas(64) WorkerCounters {
    std::atomic<std::uint64_t> fibers_run{0};
  };
  WorkerCounters worker_counters_[kMaxWorkers];
  alignas(64) std::atomic<std::uint64_t> steals_in_same_node_{0};
  std::atomic<std::uint64_t> steals_in_cross_node_{0};
  std::atomic<std::uint64_t> steals_out_{0};

  std::vector<SchedulingGroup*> thieves_;      // immutable once workers run
  std::atomic<std::size_t> next_thief_{0};

  WaitSlot wait_slots_[kMaxWorkers];

  // Where producers on this runtime's worker threads put fibers when the run queue is
  // full (see PushSlow()). Touched only then; consumers look here first while
  // `overflow_size_` is not 0.
  alignas(64) std::atomic<std::size_t> overflow_size_{0};
  std::mutex overflow_lock_;
  std::deque<std::uintptr_t> overflow_;  // guarded by overflow_lock_
};

// Marks the calling thread as one of the runtime's own threads (FiberWorkers and
// TimerWorkers do this). Such a thread never blocks waiting for room in a full run
// queue: a worker is one of the consumers, and a timer thread would delay every later
// timer. It spills to the overflow list instead.
void MarkThisThreadAsRuntimeThread(bool is_runtime_thread);

// Tests only: the steps of the v1 protocol (see the top of scheduling_group.cc) at which
// a test may pause, yield or block the thread that reaches them, to widen a race window
// (random pauses under oversubscription) or to force one exact interleaving. The hook
// gets the step and the worker's number (kNoWorker on a producer's thread).
enum class SchedulerTestPoint {
  kSpinning,          // a worker that just joined the spinner set (S1), before it polls
  kBeforeSleep,       // a worker, right before it marks itself sleeping (W1)
  kMarkedSleeping,    // a worker, after W2, before W3's re-check of the queue
  kBeforeWait,        // a worker whose W3 found nothing, right before it waits (W4)
  kSpinnerTookFiber,  // a spinner that popped a fiber, before it leaves the set (S3)
  kBeforeWakeUp,      // a producer, after its push, before P1
};
using SchedulerTestHook = void (*)(SchedulerTestPoint point, std::size_t worker);
// Installs `hook` (nullptr removes it) in every group. Costs one relaxed load of a
// global per step while none is installed; the producer's step is on the hot path.
void SetSchedulerTestHook(SchedulerTestHook hook);

// While alive on a thread, QueueReady() calls on that thread (and so Resume()) collect
// their fibers; the destructor queues them, one batch and one wake-up round per group.
// For a thread that readies many fibers in a burst: the timer thread wraps each firing
// round in one; the synchronization primitives wrap their wake-ups in one so the
// queueing happens after their internal lock is released. A nested scope leaves the
// collecting to the outermost one. Thread-bound.
class ReadyBatch {
 public:
  ReadyBatch();
  ~ReadyBatch();
  ReadyBatch(const ReadyBatch&) = delete;
  ReadyBatch& operator=(const ReadyBatch&) = delete;

 private:
  std::vector<FiberEntity*> fibers_;
};

// Returns the `k` lowest set bits of `mask` (all of them if it has fewer).
std::uint64_t LowestSetBits(std::uint64_t mask, std::size_t k);

// A new descriptor for a fiber that runs `start_proc`, with a new id, counted as live.
FiberDesc* NewFiberDesc(absl::AnyInvocable<void()> start_proc);

// Counts one fiber as finished on this thread: for a fiber run inline by its joiner,
// which never reaches the runtime's own exit path.
void CountFiberFinished();

// Fibers started and not yet finished, over all groups.
std::size_t GetLiveFiberCount();
// Blocks the calling pthread until GetLiveFiberCount() is 0.
void WaitUntilNoLiveFibers();
// For a fiber being started: counts it as live. Every started fiber is counted once and
// uncounted when it has died and its stack is recycled.
void CountFiberStarted(std::size_t n);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_GROUP_H_
