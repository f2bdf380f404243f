// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_STRATEGY_V2_H_
#define SPINDLE_RUNTIME_INTERNAL_STRATEGY_V2_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "fiber/internal/atomic.h"
#include "fiber/internal/spinlock.h"
#include "gflags/gflags_declare.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/queues/local_queue.h"
#include "runtime/internal/queues/stage_buffer.h"
#include "runtime/internal/queues/wake_inbox.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

DECLARE_uint64(fiber_v2_local_queue_size);
DECLARE_string(fiber_v2_steal);
DECLARE_string(fiber_v2_spawn);
DECLARE_uint64(fiber_v2_global_check_interval);

namespace spindle::internal {

// Strategy v2's own settings, from its flags (--fiber_v2_*, defined in strategy_v2.cc).
struct StrategyV2Settings {
  // --fiber_v2_global_take: what a worker takes from the global queue.
  enum class GlobalTake { kShare, kOne, kAll };
  std::size_t local_queue_capacity = 256;   // each worker's, a power of two
  bool steal_half = true;    // --fiber_v2_steal: half of a sibling's queue, or one fiber
  bool spawn_lifo = true;    // --fiber_v2_spawn: a fiber's new child runs next (runnext)
  std::uint64_t global_check_interval = 61;  // --fiber_v2_global_check_interval, >= 1
  GlobalTake global_take = GlobalTake::kShare;
  // --fiber_v2_stage_size: each worker's stage, in fibers (0: none).
  std::size_t stage_capacity = 64;
  bool overflow_half = true;  // --fiber_v2_overflow: half of a full local queue, or one
  // --fiber_v2_runnext_grace_ns: how long a thief leaves a busy sibling's runnext to it.
  std::uint64_t runnext_grace_ns = 3000;
  // The flags' values (which kStrategyV2Entry.validate_flags checks).
  static StrategyV2Settings FromFlags();
};

// Strategy v2 in the registry (strategy_registry.h): "v2", its flags, its factory.
extern const StrategyEntry kStrategyV2Entry;

// Scheduling strategy v2: a bounded SPMC local queue, a `runnext` slot and an inbox for
// timer wake-ups per worker, the group's bounded MPMC queue as the global queue, stealing half of a sibling's
// queue, and the searcher/sleeper notifier it shares with relaxed (notifier.cc).
// The queues and what v2 adds to the notifier's proof are at the top of strategy_v2.cc.
// Thread-safety as SchedulingStrategy says.
class StrategyV2 final : public SchedulingStrategy {
 public:
  StrategyV2(const SchedulingGroupOptions& options, const StrategyV2Settings& settings);
  ~StrategyV2() override;

  void Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
               std::size_t origin) override;
  void EnqueueBatch(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  void EnqueueWoken(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                    std::size_t origin) override;
  std::uintptr_t TakeNext(std::size_t worker) override;
  // A yield's swap, for worker `worker`'s thread (parking.cc's SwapToNext, which takes
  // self's lock between the two calls): where TakeNext() would take the oldest entry of
  // the worker's local queue, the yielder goes to its tail and that entry is taken, with
  // no Notify(): the proof is SW1-SW2 below.
  // A worker's queues and slots (defined below the class; opaque to the yield path,
  // which only hands SwapApplies()'s answer back to SwapOnYield()).
  struct Worker;
  // SW1: whether TakeNext() would take from the local queue now, which holds an entry
  // and has room (the owner's view: thieves may still empty it): worker `worker`'s
  // queues if so, else nullptr.
  Worker* SwapApplies(std::size_t worker);
  // SW2, right after SwapApplies() answered `me`: queues `self` (an entry word: Ready,
  // its scheduler lock held until it has switched out) and returns the entry taken,
  // claimed: `self` itself when thieves took everything else meanwhile (keep running),
  // 0 when they took `self` too (a sibling runs it once it switched out: leave).
  std::uintptr_t SwapOnYield(Worker& me, std::uintptr_t self);
  // Siblings: half an inbox, half a local queue (or one entry), else a runnext.
  std::uintptr_t StealInGroup(std::size_t worker) override;
  std::size_t StealBatch(std::uintptr_t* out, std::size_t max) override;
  bool MayHaveStealable() const override;
  std::size_t RescueStalledWorker(std::size_t worker) override;
  std::size_t PollBudget(std::size_t worker) const override;
  bool TakeBackEntry(std::size_t worker, std::uintptr_t entry) override;
  void NoteDeadEntries() override;
  bool UnsafeEmpty() const override;
  StrategyStats stats() const override;

 private:
  // Whether an entry the caller grabbed may leave the group (not
  // scheduling_group_local).
  static bool IsStealable(std::uintptr_t entry);

  std::uintptr_t TakeLocal(Worker& me);
  // Sibling inboxes, then local queues, then runnext slots.
  std::uintptr_t StealFromInboxes(Worker& me, std::size_t worker, std::size_t start);
  std::uintptr_t TakeOwnSources(Worker& me);  // TK0, TK2-TK4
  // TK0's look at one sibling's inbox, a different one each time.
  std::uintptr_t TakeFromSiblingInbox(Worker& me);
  std::uintptr_t TakeFromGlobal(Worker& me);
  void PushLocal(std::size_t worker, std::uintptr_t entry);
  // PushLocal()'s slow path: `me`'s local queue is full.
  __attribute__((noinline)) void PushLocalOverflow(Worker& me, std::uintptr_t entry);
  // Pushes entries[0, n) to the global queue in one batch, dropping descriptors their
  // joiners already ran (entries is compacted; stealable, n long, is scratch); returns
  // how many went. No Notify(): the caller's push ends with one.
  std::size_t PushLiveToGlobal(std::uintptr_t* entries, std::size_t n, bool* stealable);
  // Enqueue() from a thread that is none of our workers: the global queue.
  __attribute__((noinline)) void EnqueueFromOutside(std::uintptr_t entry, bool stealable);
  // Enqueue()'s place for the entry a new runnext displaced: dropped if its joiner ran
  // it, else the local tail.
  __attribute__((noinline)) void PlaceDisplaced(Worker& me, std::uintptr_t old);
  // Staging (see strategy_v2.cc): whether nobody could take a displaced entry now.
  bool MayStage() const {
    return notifier_.StateForVictim() == IdleNotifier::ThiefState::kBusy &&
           ThievesAllBusy();
  }
  // G1: moves worker `me`'s stage, oldest first, to its local queue.
  __attribute__((noinline)) void FlushStage(Worker& me);
  // G3: the oldest live entry of a sibling's stage (claimed), or 0.
  std::uintptr_t TakeFromSiblingStage(std::size_t worker);
  // After a push: the notifier's producer side (N1-N5 in notifier.cc).
  void Notify() { notifier_.Notify(); }
  // Whether any queue of the group holds an entry (a relaxed snapshot).
  bool AnyQueued() const;
  // RG1 (strategy_v2_steal.cc): whether `entry` is still in a sibling's runnext `slot`
  // after the grace (runnext_grace_ticks_), during which its owner may take it.
  bool RunnextOutlastsGrace(const Atomic<std::uintptr_t>& slot, std::uintptr_t entry) const;

  const SchedulingGroupOptions options_;
  const StrategyV2Settings settings_;
  GlobalRunQueue global_;
  std::unique_ptr<Worker>* workers_ = nullptr;  // options_.workers of them
  SearchNotifier notifier_;  // notifier.cc: the protocol relaxed shares
  // The worker the TimerWorker's next round starts with (EnqueueWoken).
  alignas(64) Atomic<std::size_t> next_woken_{0};
  ThreadCounter steals_in_group_;
  // RescueStalledWorker()'s, whose one caller is the hog monitor's thread.
  std::vector<std::uintptr_t> rescue_entries_;
  std::unique_ptr<bool[]> rescue_stealable_;
  Atomic<std::size_t> next_victim_{0};  // spreads cross-group steals
  // settings_.runnext_grace_ns in CycleClockNow() ticks (0: no grace, and in models).
  std::uint64_t runnext_grace_ticks_ = 0;
};

struct alignas(64) StrategyV2::Worker {
  Worker(std::size_t capacity, int numa_node, std::size_t stage_capacity)
      : local(capacity, numa_node),
        steal_buffer(new std::uintptr_t[capacity / 2 + 1]),
        overflow_buffer(new std::uintptr_t[capacity / 2 + 2]),
        overflow_stealable(new bool[capacity / 2 + 2]),
        stage(stage_capacity) {}
  // A fiber started or woken by this worker's fiber, run next here (seed 002's
  // spawn-LIFO). Exchanged by the owner, CASed away by siblings that steal it.
  Atomic<std::uintptr_t> runnext{0};
  LocalQueue local;
  // The owner's alone.
  // TK1's count-down of fibers taken (reset after each check).
  std::uint64_t rounds_to_global_check = 1;
  unsigned runnext_streak = 0;     // consecutive picks from runnext
  unsigned inbox_streak = 0;       // consecutive picks from the inbox (TK0)
  std::size_t index = 0;           // this worker's index in the group
  std::size_t inbox_peek = 0;      // the sibling whose inbox TK0 looks at next
  std::uint64_t random = 0;        // victim choice
  std::unique_ptr<std::uintptr_t[]> steal_buffer;  // half a local queue
  // PushLocal's batch to the global queue when the local one is full: half of it and
  // the new entry. Not allocated per overflow: a 1 KiB malloc is a large-bin request,
  // which first consolidates glibc's fast bins.
  std::unique_ptr<std::uintptr_t[]> overflow_buffer;
  std::unique_ptr<bool[]> overflow_stealable;
  // Fibers woken by timer rounds (EnqueueWoken), run before the local queue (TK0). Its
  // own line: the producer writes it once per round.
  alignas(64) WakeInbox inbox;
  // Fibers the running fiber displaced from runnext while every worker was busy
  // ("Staging" in strategy_v2.cc). Its own lines: its lock is the owner's.
  alignas(64) StageBuffer stage;
};

// Inline, for the yield path (parking.cc), which calls them through a StrategyV2*: a
// call through the base's vtable, with its prologue, would be paid on every yield.
__attribute__((always_inline)) inline StrategyV2::Worker* StrategyV2::SwapApplies(
    std::size_t worker) {
  Worker& me = *workers_[worker];
  // SW1. Only where TakeNext() would take from the local queue (TK3): not TK1's round,
  // and TK0 and TK2 find nothing. runnext is exact here (only we store to it; siblings
  // only take it away); an inbox post that lands after our look is taken at the next
  // switch, as if it had come a moment later.
  if (me.rounds_to_global_check == 1 ||
      me.runnext.load(std::memory_order_relaxed) != 0 ||  // relaxed: ours (see above)
      me.inbox.MaybeNonEmpty() || me.stage.UnsafeSize() != 0) {  // G1 first
    return nullptr;
  }
  if (options_.workers > 1) {
    // TK0's look at one sibling's inbox (TakeFromSiblingInbox), the same one it would
    // look at: something there, and the general path takes it.
    std::size_t v = me.inbox_peek;
    if (v >= options_.workers) v = 0;
    if (v == me.index) v = v + 1 == options_.workers ? 0 : v + 1;
    if (workers_[v]->inbox.MaybeNonEmpty()) return nullptr;
    me.inbox_peek = v + 1;
  }
  // Something to swap with, and room for self.
  return me.local.OwnerHasEntryAndRoom() ? &me : nullptr;
}

__attribute__((always_inline)) inline std::uintptr_t StrategyV2::SwapOnYield(
    Worker& me, std::uintptr_t self) {
  // SwapApplies() saw room, which only our pushes take. If thieves emptied the queue
  // since, we take self back.
  std::uintptr_t entry = me.local.PushAndPop(self);
  me.inbox_streak = 0;
  me.runnext_streak = 0;
  // SW2. Push, then pop, from the one ring: its count never drops below what it was, so
  // every reader that would have seen the entry we take (a searcher's W3 re-check, the
  // last searcher's AnyQueued, a thief's Grab) sees an entry still, self or that one:
  // each reads head_ (acquire) before tail_, and a head_ that our pop's release CAS
  // moved brings our push's tail_ with it. So the swap queues no work that was not
  // queued before, and needs no Notify(): whatever wake-up accounted for the entry we
  // take (its own push's N1-N5) now accounts for self. (A pop first, then the push,
  // would open a window for a lost wake-up: a sibling looks between the two, finds
  // nothing, sleeps; the general path pays a Notify() for it.)
  // 0: thieves took everything, self included. self: everything before it. A
  // descriptor that its joiner ran is dropped, and the next one taken.
  while (entry != 0 && entry != self && !ClaimEntry(entry)) entry = me.local.Pop();
  if (entry != 0 && entry != self) --me.rounds_to_global_check;  // >= 2 before: never 0
  return entry;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_STRATEGY_V2_H_
