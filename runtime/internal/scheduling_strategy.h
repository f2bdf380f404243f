// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_
#define SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "runtime/internal/chaos.h"
#include "runtime/internal/group_poller.h"
#include "runtime/internal/metrics.h"
#include "runtime/internal/test_seams.h"
#include "runtime/internal/topology.h"
#include "runtime/internal/wait_slot.h"

namespace spindle::internal {

// What every strategy of a group is built from. A strategy's own settings (v2's local
// queue, relaxed's lists) come from its own flags, through its entry in
// strategy_registry.h, not from here.
struct SchedulingGroupOptions {
  std::size_t index = 0;                // the group's number in the runtime
  int numa_node = kNoNumaNode;          // its node in the layout (real or fake)
  int memory_node = kNoNumaNode;        // where its queues live (a real node)
  std::size_t workers = 1;              // in [1, kMaxWorkersPerGroup]
  std::size_t run_queue_capacity = 65536;  // a power of two: v1's queue, v2's global one
  std::string strategy = "v1";          // a registered name (strategy_registry.h)
  // How long an idle worker polls for work before it sleeps (--fiber_worker_spin_time_us).
  std::chrono::nanoseconds spin_time = std::chrono::microseconds(20);
};

inline constexpr std::size_t kMaxWorkersPerGroup = 64;

class SchedulingStrategy;

// A scheduling strategy as the runtime knows it, defined once in the strategy's own
// files and registered in strategy_registry.cc (see strategy_registry.h).
struct StrategyEntry {
  // The value of --fiber_scheduling_strategy that selects it.
  const char* name;
  // Reads the strategy's own flags (--fiber_<name>_*): the empty string when they are
  // valid, else a message that names the flag, its value and the accepted range.
  std::string (*validate_flags)();
  // Builds the strategy of one group (on options.memory_node) from the group's options
  // and the strategy's own flags, which validate_flags() accepted.
  std::unique_ptr<SchedulingStrategy> (*create)(const SchedulingGroupOptions& options);
};

// Why a fiber is being queued: strategies may place it differently (v2 runs a fiber
// started or woken by a worker's fiber next on that worker, and sends a yielding fiber
// to the back of its worker's local queue, behind everything else ready there).
enum class ReadyReason {
  kStarted,  // a new fiber, queued as the strategy's flags say (--fiber_v2_spawn)
  kStartedNext,  // a new fiber that asked to run next (StartOrder::kNext)
  kStartedBack,  // a new fiber that asked for the back of the queue (StartOrder::kBack)
  kWoken,    // a parked fiber made ready (mutex, event, timer, ...)
  kYielded,  // a running fiber that yields (or dispatched a child and runs later)
};

// What an idle worker does once it has announced that it is about to sleep (and after
// the strategy's re-check found nothing): go back to polling its other sources, or sleep
// for at most `limit` (0: until woken).
struct IdlePlan {
  bool poll = false;
  std::chrono::nanoseconds limit{0};
};

// Work an idle worker may find outside its own group, asked by the strategy's idle path
// (SchedulingStrategy::FindRunnable) in a fixed order: after the group's own queues, and
// again once the worker is announced as sleeping. Today that is stealing between groups
// (FiberWorker implements it); the IO reactor plugs in here next. Called on the worker's
// own thread only.
class IdleHooks {
 public:
  virtual ~IdleHooks() = default;
  // One non-blocking attempt: an entry (Running-to-be, ownership passes to the caller)
  // or 0.
  virtual std::uintptr_t TryOtherSources() = 0;
  // Whether those sources are worth polling again instead of spinning or sleeping.
  virtual bool ShouldPoll() = 0;
  // Called between polling rounds: backs off (a pause, sometimes a yield of the CPU).
  virtual void PausePolling() = 0;
  // Asked after the worker is announced as sleeping and the strategy's own re-check
  // found nothing (the T2 step): poll instead, or sleep with this limit.
  virtual IdlePlan PlanWhenMarkedSleeping() = 0;
};

// Idle hooks that find nothing: a group with no other sources (tests).
class NoIdleHooks final : public IdleHooks {
 public:
  std::uintptr_t TryOtherSources() override { return 0; }
  bool ShouldPoll() override { return false; }
  void PausePolling() override {}
  IdlePlan PlanWhenMarkedSleeping() override { return {}; }
};

// Counters a strategy keeps (relaxed snapshots).
struct StrategyStats {
  std::uint64_t wakeups = 0;          // sleeping workers woken (system calls made)
  std::uint64_t steals_in_group = 0;  // fibers taken from a sibling worker's queue
  std::uint64_t global_queue_size = 0;
  std::uint64_t local_queue_size = 0;  // summed over the workers (v2)
  // Per worker (v2; empty under v1, which has no local queues): runnext + local queue
  // + timer inbox.
  std::vector<std::uint64_t> local_queue_sizes;
};

// How one scheduling group keeps its ready fibers and wakes its workers: the queues,
// the idle and wake-up protocol, and the victim side of stealing between groups. The
// SchedulingGroup in front of it turns entries into running fibers (and back), and is
// the same for every strategy. Entries are run-queue words (fiber_desc.h: a FiberEntity
// or a FiberDesc, tagged); the strategy never dereferences them except through
// ClaimEntry() (dropping descriptors a joiner already ran). Each entry that goes in
// comes out exactly once, from FindRunnable/TakeNext/Steal/TakeBack, or the strategy was
// destroyed with it queued (a CHECK in the group).
//
// Thread-safety: Enqueue* from any thread. TakeNext/FindRunnable by worker `worker`'s
// thread only (`worker` < the group's size). Steal/WakeOneSleeper/MayHaveStealable from
// workers of other groups. Stop from the runtime. Allocated on the group's memory node
// (operator new below); owned by its SchedulingGroup.
class SchedulingStrategy {
 public:
  static constexpr std::size_t kNoWorker = ~std::size_t{0};

  virtual ~SchedulingStrategy() = default;
  static void* operator new(std::size_t size, int numa_node);
  static void operator delete(void* pointer, std::size_t size);
  static void operator delete(void* pointer, int numa_node);  // a throwing constructor

  // ---- Producer side. `origin` is the calling thread's worker number in this group, or
  // kNoWorker (another group's worker, a timer thread, a plain thread).
  virtual void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
                       std::size_t origin) = 0;
  // `n` entries at once (all kStarted or all kWoken), waking up to `n` workers (v1
  // wakes them at once; v2 and relaxed wake one searcher, and each searcher that finds
  // work and was the last one wakes the next while work is queued).
  virtual void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                            std::size_t n, std::size_t origin) = 0;

  // `n` fibers made Ready by one firing round of the group's timers (kWoken): by the
  // TimerWorker thread (`origin` kNoWorker) or by worker `origin` that fired the due
  // timers itself (group_timers.h). They are overdue by definition, so a strategy may
  // run them ahead of fibers that were merely started (v2: the firing worker's
  // WakeInbox, or spread over the workers' inboxes); the default queues them as
  // EnqueueBatch() does.
  virtual void EnqueueWoken(const std::uintptr_t* entries, const bool* stealable,
                            std::size_t n, std::size_t origin) {
    EnqueueBatch(entries, stealable, n, origin);
  }

  // ---- Worker side.
  // The next entry without blocking or waking anyone (between two fibers, Yield, park);
  // 0 if the worker's sources are empty.
  virtual std::uintptr_t TakeNext(std::size_t worker) = 0;
  // The idle path, one pass: the group's queues, then `hooks`, then the strategy's own
  // spinning, announcing, re-checking and sleeping. Returns an entry, or 0 after a sleep
  // or a poll plan (the caller loops), or 0 at once while stopping.
  virtual std::uintptr_t FindRunnable(std::size_t worker, IdleHooks& hooks) = 0;

  // ---- Running fiber side: a joiner taking back fibers it already ran inline (so that
  // join() in a loop leaves no dead entries behind; SchedulingGroup::TakeBackRunInline).
  // `worker` is the joiner's worker in this group, or kNoWorker. Wherever the next entry
  // to leave a queue the joiner may take from (under v2: its runnext and local queue,
  // when `worker` is ours; the group's shared queue) is one that `wanted` accepts, it is
  // removed and passed to `taken`, which returns whether more are wanted; repeated while
  // that brings another wanted entry to the front. Values are only compared: nothing is
  // dereferenced, so `wanted` must accept only values whose referents the caller keeps
  // alive. Entries it could not reach: see NoteDeadEntries().
  virtual void TakeBack(std::size_t worker, absl::FunctionRef<bool(std::uintptr_t)> wanted,
                        absl::FunctionRef<bool(std::uintptr_t)> taken) = 0;
  // A joiner left a dead entry it could not take back in this group's queues: a full
  // shared queue is worth compacting (GlobalRunQueue::NoteDeadEntries()).
  virtual void NoteDeadEntries() = 0;

  // ---- Victim side of stealing between groups (callers: other groups' workers).
  // A stealable entry, or 0. Never blocks; never takes a scheduling_group_local entry.
  virtual std::uintptr_t Steal() = 0;
  // A racy hint: whether Steal() may find something.
  virtual bool MayHaveStealable() const = 0;
  // Wakes one sleeping worker of this group so that it polls its victims; false if none
  // sleeps (see "T1" in strategy_v1.cc).
  virtual bool WakeOneSleeper() = 0;
  // Groups whose workers may steal from this one, woken when every worker of this group
  // is busy and fibers wait. Set before any worker starts.
  virtual void SetThieves(std::vector<SchedulingStrategy*> thieves) = 0;

  // ---- The group's poller (group_poller.h): set by the layer that owns it, or null.
  void SetPoller(GroupPoller* poller) {
    poller_.store(poller, std::memory_order_release);  // pairs with poller()'s acquire
  }
  GroupPoller* poller() const { return poller_.load(std::memory_order_acquire); }
  // Worker `worker`'s thread: whether its last Sleep() left the poller while
  // descriptors are registered, or a sleeper wanted the token (then nobody may poll:
  // the caller hands the duty to a sleeping sibling, WakeOneSleeper). Clears the flag.
  bool TakePollerHandOff(std::size_t worker) {
    const bool hand_off = per_worker_[worker].hand_off_pending;
    per_worker_[worker].hand_off_pending = false;
    return hand_off;
  }

  // Worker `worker`'s thread: it found a fiber to run (the idle path's result), so its
  // last sleep was not spurious.
  void NoteFoundWork(std::size_t worker) { per_worker_[worker].slept_since_work = false; }
  // Idle statistics of worker `worker` (relaxed snapshots): its sleeps (W4: on its
  // futex or in the poller), and the sleeps after which it found no fiber before it
  // slept again (woken for nothing: a spurious or stolen wake-up, or a timed sleep
  // that ended idle).
  std::uint64_t sleeps(std::size_t worker) const { return per_worker_[worker].sleeps.Read(); }
  std::uint64_t spurious_wakeups(std::size_t worker) const {
    return per_worker_[worker].spurious.Read();
  }

  // ---- Lifetime.
  // Makes every worker's FindRunnable return 0 from now on, without sleeping.
  virtual void Stop() = 0;
  bool stopping() const {
    return stopping_.load(std::memory_order_acquire);  // pairs with Stop()'s release
  }
  // Whether any entry is still queued (a relaxed snapshot; exact once workers stopped).
  virtual bool UnsafeEmpty() const = 0;
  virtual StrategyStats stats() const = 0;

 protected:
  // W4 of either strategy: sleeps on `slot` (worker `worker`'s) until woken, or for at
  // most `limit` (0: no limit). While the group's poller has descriptors registered and
  // its token is free, the worker sleeps in the poller instead (WaitSlot::WaitPolling):
  // to the protocol that is the same sleep, woken by the same Wake().
  void Sleep(std::size_t worker, WaitSlot& slot, std::chrono::nanoseconds limit);

  // The search of an idle worker (v2's I3, relaxed's R-I3), on its own thread:
  // `search_once` (the group's queues, then the hooks' sources) until it returns an
  // entry. A searcher repeats it for up to `spin_time`, and for as long as the hooks
  // say their sources are worth polling (pausing between rounds); a non-searcher looks
  // once, then only while the hooks say so. Returns the entry, or 0 (also at once when
  // stopping).
  std::uintptr_t SearchForWork(bool searching, std::chrono::nanoseconds spin_time,
                               IdleHooks& hooks,
                               absl::FunctionRef<std::uintptr_t()> search_once);

  // release in Stop() implementations, acquire in stopping().
  std::atomic<bool> stopping_{false};

 private:
  std::atomic<GroupPoller*> poller_{nullptr};
  // Each written by its worker's thread only.
  struct alignas(64) PerWorker {
    bool hand_off_pending = false;
    bool slept_since_work = false;
    SingleWriterCounter sleeps;
    SingleWriterCounter spurious;
  };
  PerWorker per_worker_[kMaxWorkersPerGroup];
};

// Tests only: the steps of the idle and wake-up protocols (strategy_v1.cc,
// strategy_v2.cc and strategy_relaxed.cc) at which a test may pause, yield or block
// the thread that reaches them, to widen a race window (random pauses under
// oversubscription) or to force one exact interleaving. The hook gets the step and the
// worker's number (kNoWorker on a producer's thread).
enum class SchedulerTestPoint {
  kSpinning,          // v1: a worker that just joined the spinner set (S1), before it polls
  kBeforeSleep,       // a worker, right before it announces that it will sleep
  kMarkedSleeping,    // a worker, announced, before its re-check of the queues
  kBeforeWait,        // a worker whose re-check found nothing, right before it waits
  kSpinnerTookFiber,  // v1: a spinner that popped a fiber, before it leaves the set (S3)
  kBeforeWakeUp,      // a producer, after its push, before its wake-up decision
};
using SchedulerTestHook = void (*)(SchedulerTestPoint point, std::size_t worker);
// Installs `hook` (nullptr removes it) in every group. A test seam (test_seams.h):
// defined only in builds with the seams, where it costs one relaxed load of a global per
// step while none is installed (and one more for chaos mode); in other builds a test
// point is nothing at all.
void SetSchedulerTestHook(SchedulerTestHook hook);

// Tests only, a test seam as well: removes the re-check that a v2 or relaxed worker
// makes after it announces its sleep (v2's W3, relaxed's R-W3), so that the lost-wake-up
// hammer (lost_wake_hammer.h) shows the wake-up that the re-check saves.
void DisableSleepRecheckForTesting(bool disabled);

namespace strategy_internal {
// relaxed (both): a test sets them before it starts the workload they should affect.
extern std::atomic<SchedulerTestHook> g_test_hook;
extern std::atomic<bool> g_sleep_recheck_disabled;
}  // namespace strategy_internal

// Whether a worker re-checks the queues after it announced its sleep: always, but in a
// test that turned it off (DisableSleepRecheckForTesting).
__attribute__((always_inline)) inline bool SleepRecheckEnabled() {
  if constexpr (kTestSeams) {
    return !strategy_internal::g_sleep_recheck_disabled.load(std::memory_order_relaxed);
  } else {
    return true;
  }
}

__attribute__((always_inline)) inline void SchedulerTestPointReached(
    SchedulerTestPoint point, std::size_t worker) {
  if constexpr (kTestSeams) {
    // relaxed: see g_test_hook.
    if (SchedulerTestHook hook =
            strategy_internal::g_test_hook.load(std::memory_order_relaxed)) {
      hook(point, worker);
    }
    ChaosPause();  // chaos mode's pauses (chaos.h, P)
  } else {
    static_cast<void>(point);
    static_cast<void>(worker);
  }
}

// Adds 1 to `count` unless it is already `max` or more; whether it did. v2 and relaxed
// count their searching workers this way (Go's nmspinning). relaxed load: a hint; the
// seq_cst CAS decides, and producers that read the new count skip their wake-up
// (v2's N2, relaxed's R-N2), which the searcher's later seq_cst decrement and fence
// (I4, R-I4) make up for.
inline bool TryIncrementBelow(std::atomic<std::size_t>& count, std::size_t max) {
  std::size_t value = count.load(std::memory_order_relaxed);
  do {
    if (value >= max) return false;
  } while (!count.compare_exchange_weak(value, value + 1, std::memory_order_seq_cst,
                                        std::memory_order_relaxed));
  return true;
}

// Returns the `k` lowest set bits of `mask` (all of them if it has fewer).
std::uint64_t LowestSetBits(std::uint64_t mask, std::size_t k);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_
