// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_
#define SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "fiber/internal/atomic.h"
#include "runtime/internal/idle/group_poller.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/base/metrics.h"
#include "runtime/internal/seams/scheduling_test_points.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {

// What every strategy of a group is built from. A strategy's own settings (v2's local
// queue, relaxed's lists) come from its own flags, through its entry in
// strategy_registry.h, not from here.
struct SchedulingGroupOptions {
  std::size_t index = 0;                // the group's number in the runtime
  std::size_t pool = 0;                 // its pool's number (0: the default pool)
  int numa_node = kNoNumaNode;          // its node in the layout (real or fake)
  int memory_node = kNoNumaNode;        // where its queues live (a real node)
  std::size_t workers = 1;              // in [1, kMaxWorkersPerGroup]
  std::size_t run_queue_capacity = 65536;  // a power of two: v1's queue, v2's global one
  std::string strategy = "v1";          // a registered name (strategy_registry.h)
  // How long an idle worker polls for work before it sleeps (--fiber_worker_spin_time_us).
  std::chrono::nanoseconds spin_time = std::chrono::microseconds(20);
};

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

// Counters a strategy keeps (relaxed snapshots).
struct StrategyStats {
  std::uint64_t wakeups = 0;          // sleeping workers woken (system calls made)
  std::uint64_t steals_in_group = 0;  // fibers taken from a sibling worker's queue
  std::uint64_t global_queue_size = 0;
  // Fibers spilled to the shared queue's overflow list because its ring was full (v1,
  // v2; relaxed's lists do not spill).
  std::uint64_t run_queue_spills = 0;
  // Pushes from threads that are not the runtime's that waited for room in that full
  // ring (v1, v2).
  std::uint64_t run_queue_full_waits = 0;
  std::uint64_t local_queue_size = 0;  // summed over the workers (v2)
  // Per worker (v2; empty under v1, which has no local queues): runnext + local queue
  // + timer inbox.
  std::vector<std::uint64_t> local_queue_sizes;
};

// How one scheduling group keeps its ready fibers: storage and policy (push, take,
// steal, take back) and the notifier that wakes its idle workers (notifier.h). The
// loop an idle worker runs over them is the same for every strategy (idle_path.cc);
// the SchedulingGroup in front turns entries into running fibers (and back). Entries
// are run-queue words (fiber_desc.h: a FiberEntity or a FiberDesc, tagged); the
// strategy never dereferences them except through ClaimEntry() (dropping descriptors a
// joiner already ran). Each entry that goes in comes out exactly once, from
// TakeNext/StealInGroup/StealBatch/TakeBackEntry, or the strategy was destroyed with it
// queued (a CHECK in the group).
//
// Thread-safety: Enqueue* from any thread. TakeNext/StealInGroup by worker `worker`'s
// thread only (`worker` < the group's size). StealBatch/WakeOneSleeper/MayHaveStealable
// from workers of other groups. Stop from the runtime. Allocated on the group's memory node
// (operator new below); owned by its SchedulingGroup.
class SchedulingStrategy : public NotifiedQueues {
 public:
  static constexpr std::size_t kNoWorker = kNoWorkerIndex;

  virtual ~SchedulingStrategy() = default;
  static void* operator new(std::size_t size, int numa_node);
  static void operator delete(void* pointer, std::size_t size);
  static void operator delete(void* pointer, int numa_node);  // a throwing constructor

  // ---- Producer side. `origin` is the calling thread's worker number in this group, or
  // kNoWorker (another group's worker, a timer thread, a plain thread). Each push ends
  // with the notifier's producer side.
  virtual void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
                       std::size_t origin) = 0;
  // `n` entries at once (all kStarted, all kWoken, or stolen from another group),
  // waking up to `n` workers (v1 wakes them at once; v2 and relaxed wake one searcher,
  // and each searcher that finds work and was the last one wakes the next while work
  // is queued).
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

  // ---- Worker side: never blocks, never sleeps.
  // The next entry of the worker's own sources (between two fibers, Yield, park, and
  // the idle path's first look); 0 if they are empty.
  std::uintptr_t TakeNext(std::size_t worker) override = 0;
  // An entry taken from the worker's siblings in this group (v2: their inboxes, local
  // queues and runnext slots), or 0. The idle path asks after TakeNext; strategies whose
  // TakeNext already sees the whole group (v1, relaxed) keep the default.
  virtual std::uintptr_t StealInGroup(std::size_t /*worker*/) { return 0; }

  // ---- Running fiber side: a joiner taking back fibers it already ran inline (so that
  // join() in a loop leaves no dead entries behind; TakeBackRunInline() in take_back.h).
  // `worker` is the joiner's worker in this group, or kNoWorker. Where `entry` is the
  // next to leave a queue the joiner may take from (under v2: its runnext and local
  // queue, when `worker` is ours; the group's shared queue), removes it and returns true
  // (the caller owns it then). Values are only compared: nothing is dereferenced, so the
  // caller keeps `entry`'s referent alive. Entries it could not reach: see
  // NoteDeadEntries().
  virtual bool TakeBackEntry(std::size_t worker, std::uintptr_t entry) = 0;
  // A joiner left a dead entry it could not take back in this group's queues: a full
  // shared queue is worth compacting (GlobalRunQueue::NoteDeadEntries()).
  virtual void NoteDeadEntries() = 0;

  // ---- The hog monitor (hog_monitor.h), from its own thread: worker `worker` has run
  // one fiber for --fiber_hog_rescue_ms without switching. Moves the entries that only
  // that worker would take before its siblings do to where busy siblings take from
  // too, with the producer's wake-up, and returns how many it moved. v2: its runnext
  // and local queue go to the group's global queue (busy siblings look there every
  // --fiber_v2_global_check_interval-th take; idle ones at once); its timer inbox stays
  // (busy siblings already take one entry of a sibling's inbox per take, TK0). The
  // default moves nothing: v1's workers share one queue, relaxed's pick any list.
  virtual std::size_t RescueStalledWorker(std::size_t /*worker*/) { return 0; }

  // ---- The busy poll (busy_poll.h), from worker `worker`: how many descriptor events
  // its poll may take now, the fibers it makes ready being queued on this worker.
  // Events left in the kernel wait there in arrival order for the next poll; fibers
  // queued beyond what the worker holds would push older ready fibers out of its turn
  // (v2: a full local queue moves its oldest half to the global queue, which busy
  // workers look at every --fiber_v2_global_check_interval-th take). v2: the room in
  // its local queue, less one place for the fiber switching out; the default, no limit
  // (v1's and relaxed's queues are shared). 0: no poll now (BusyPoll polls for one
  // event anyway once nobody has polled for GroupPoller::kStarvedPollNs).
  virtual std::size_t PollBudget(std::size_t /*worker*/) const { return SIZE_MAX; }

  // ---- Victim side of stealing between groups (callers: other groups' workers).
  // Up to `max` (>= 1) stealable entries, the oldest of one of the victim's queues (v2:
  // up to half of it; relaxed: of each of its lists; v1: one), for a thief that runs the
  // first and queues the rest in its own group (SchedulingGroup::StealEntryFrom): one
  // fiber per steal left a thief's group as short of work after each steal as before it. out[0]
  // is claimed (ClaimEntry: ready to run); out[1..n) are not (whoever takes them from
  // the thief's queues claims them, as for any queued entry: a second claim would read
  // as "its joiner ran it" and drop the fiber), and descriptors their joiners already
  // ran are dropped. Returns n, 0 if nothing was stolen. Never blocks; never takes a
  // scheduling_group_local entry.
  virtual std::size_t StealBatch(std::uintptr_t* out, std::size_t max) = 0;
  // A racy hint: whether StealBatch() may find something.
  virtual bool MayHaveStealable() const = 0;
  // Wakes one sleeping worker of this group so that it searches (and polls its
  // victims); false if none sleeps.
  bool WakeOneSleeper() { return notifier_.WakeOneSleeper(); }
  // Groups whose workers may steal from this one, woken when every worker of this group
  // is busy and fibers wait (WakeUpThief). Set before any worker starts.
  // Each thief gets us as one of its victims (VictimsMayHaveStealable).
  void SetThieves(const std::vector<SchedulingStrategy*>& thieves) {
    thieves_.clear();
    for (SchedulingStrategy* thief : thieves) {
      thieves_.push_back(&thief->notifier_);
      thief->victims_.push_back(this);
    }
    has_thieves_ = !thieves_.empty();
  }
  // Whether a group we may steal from may have something to steal (racy hints).
  bool VictimsMayHaveStealable() const override {
    for (const SchedulingStrategy* victim : victims_) {
      if (victim->MayHaveStealable()) return true;
    }
    return false;
  }
  // Whether every worker of every group that may steal from this one is busy (neither
  // searches nor sleeps): relaxed hints, a load of a line per thief group that changes
  // only when its workers go idle or wake (StateForVictim). True without thieves.
  bool ThievesAllBusy() const {
    for (const IdleNotifier* thief : thieves_) {
      if (thief->StateForVictim() != IdleNotifier::ThiefState::kBusy) return false;
    }
    return true;
  }
  // T1 (strategy_v1.cc): unless a worker of a thief group already searches, wakes one
  // sleeping worker of a thief group (tried in turn until one has a sleeper) if a
  // stealable backlog waits (WakeOneThief in notifier.h). Called by the notifier after
  // its fence, when every worker of ours is busy.
  void WakeUpThief() final;

  // ---- The idle side (idle_path.cc): the notifier, and the group's poller.
  IdleNotifier& notifier() const { return notifier_; }
  // The group's poller (group_poller.h): set by the layer that owns it, or null.
  void SetPoller(GroupPoller* poller) {
    poller_.store(poller, std::memory_order_release);  // pairs with poller()'s acquire
  }
  GroupPoller* poller() const { return poller_.load(std::memory_order_acquire); }

  // ---- Lifetime.
  // Every idle worker's path returns at once from now on, without sleeping.
  void Stop() {
    stopping_.store(true, std::memory_order_release);  // pairs with stopping()'s acquire
    notifier_.WakeAll();
  }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // Whether any entry is still queued (a relaxed snapshot; exact once workers stopped).
  bool UnsafeEmpty() const override = 0;
  virtual StrategyStats stats() const = 0;

 protected:
  // `notifier`: the strategy's own (a member of the derived class, so it is built
  // after this base; only its address is kept here).
  explicit SchedulingStrategy(IdleNotifier& notifier) : notifier_(notifier) {}

 private:
  IdleNotifier& notifier_;
  Atomic<bool> stopping_{false};
  Atomic<GroupPoller*> poller_{nullptr};
  // Its own line: read by every producer while our workers are all busy; the cursor
  // is written only when a thief is woken (sharing a line with a flag that wake-ups
  // write slows every round trip).
  alignas(64) std::vector<IdleNotifier*> thieves_;  // immutable once workers run
  std::vector<const SchedulingStrategy*> victims_;    // the same
  Atomic<std::size_t> next_thief_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_STRATEGY_H_
