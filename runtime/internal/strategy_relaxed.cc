// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy "relaxed": seed 001's sharded relaxed-FIFO ready queue behind
// the SchedulingStrategy seam. The queue (relaxed_queue.cc) is the thesis' "Scheduling
// Core": workers x --fiber_relaxed_lists_per_worker small FIFO lists with a lock and
// the oldest item's stamp each; a push goes to a random list whose lock is free; a pop
// takes the older of two random heads; dynamic entropy makes a worker look first where
// it pushed last. Why: v1's single queue is fair but contended, v2's per-worker queues
// are fast but a fiber behind a busy worker's queue can wait for all of it; the thesis
// claims both speed and a bound on unfairness. This file is the part the thesis leaves
// to its runtime: who takes what, and how idle workers sleep and are woken.
//
// Where it departs from the thesis (and from the other strategies).
//   - The thesis' processors never sleep in its core chapter (the idle sleep comes in
//     a later chapter, with an eventfd per processor). Here idle workers sleep on their
//     WaitSlots under the notifier below, through the seam's one idle path, so the
//     timers, stealing between groups, sync and the poller work unchanged.
//   - Every ready fiber goes through the lists: no runnext slot and no local queue.
//     A fiber started, woken or yielding on worker w is pushed with w's cursor, so w's
//     next pops look at that list first (the thesis' locality, not v2's LIFO). Fork-join
//     trees lose v2's "run the child next"; a joiner that finds its child not yet run
//     still runs it inline (join()), and takes the dead entry back from the list it
//     pushed it to, which the worker's cursor remembers (TakeBack).
//   - Timer wake-ups are pushed like any other ready fiber (the seam's default
//     EnqueueWoken): their stamps are taken when they are queued, so two-choice pops
//     order them among the other fibers by readiness.
//   - Pops end with a sweep of every list after two missed pairs (relaxed_queue.cc), so
//     TakeNext() returning 0 means the group's queue was seen empty: the re-check
//     before sleeping needs that, and it bounds how often a pop can miss.
//
// Taking. TakeNext = the queue's Pop with the worker's cursor, claiming descriptors
// (a joiner may have run one inline: ClaimEntry drops it and we pop again).
//
// Notifier (Go's wakep()/nmspinning, with the hand-over of the count to the woken
// worker; v2 uses a separate wake_pending_ token instead). Shared: `searching_` (the
// workers searching for work, plus those a waker chose and that have not run yet) and
// `sleeping_` (bit i: worker i announced that it sleeps).
//
// Producer, after every push (Notify):
//   R-N1. seq_cst fence (pairs with R-W2 and R-I4's fence).
//   R-N2. searching_ != 0: return. Someone holds a count and will give it back through
//         R-I4 (a fence, then a look at the queue) or go through R-W1-R-W3.
//   R-N3. sleeping_ == 0: nobody to wake. Every worker is busy or will re-check after
//         its R-W2, which is after our R-N1. If a backlog waits, wake a sleeping thief
//         of another group (v1's T1). Return.
//   R-N4. CAS searching_ 0 -> 1 (seq_cst); lost: return (as R-N2).
//   R-N5. Claim the lowest sleeping bit (fetch_and) and Wake() its slot: the count we
//         took is now that worker's, which searches when it wakes. No sleeper left
//         (they cancelled or were claimed meanwhile): give the count back (seq_cst RMW,
//         fence), then look again: producers that skipped at R-N2 because of our count
//         pushed before they read it, so what we read after our fence includes their
//         fibers. Nobody sleeps: as R-N3 (a thief of another group for a backlog).
//         Nothing queued: done (a worker announcing later re-checks after our fence).
//         Someone searches again: done (R-N2's case). Else back to R-N4 for the
//         sleeper we found.
//
// Worker, idle path (FindRunnable):
//   R-I1. TakeNext.
//   R-I2. Become a searcher (searching_ + 1, seq_cst CAS) if fewer than half the group
//         (at least one) search.
//   R-I3. Search: TakeNext, then the IdleHooks (stealing between groups, the poller);
//         a searcher repeats it for up to the spin time, a non-searcher looks once.
//   R-I4. Give the count back (seq_cst fetch_sub, then a fence). The last searcher out
//         that found work wakes another worker if anything is still queued (Go's
//         resetspinning): producers skipped their wake-ups while it searched.
//   R-W1. Set our bit in sleeping_ (seq_cst RMW).  R-W2. seq_cst fence.
//   R-W3. Re-check: TakeNext (which sweeps every list), the stop flag, the hooks' plan.
//         Found a fiber: clear our bit; if a waker had cleared it first, we hold its
//         count: give it back as in R-I4 (found); else "more work" (wake another if
//         anything is queued). A poll plan: clear our bit and return (the caller polls
//         our queue first, R-I1); if a waker had cleared it, give its count back and
//         wake another if anything is queued.
//   R-W4. Sleep on our WaitSlot (counted: a Wake() after R-W3 is kept). On waking, clear
//         our bit: if a waker had cleared it, we hold its count and search (R-I3).
//
// No lost wake-up. Take a fiber F pushed by producer P, and a worker X that sleeps
// without running it.
//   - If P read searching_ != 0 (R-N2, R-N4), some holder of a count decrements it
//     later with a seq_cst RMW and a fence. P's (push; fence; read searching_) against
//     the decrement that brings it to 0 (RMW; fence; read the queue) is the store-
//     buffering pattern: that decrementer sees F. It is either a searcher that found
//     work (R-I4: the last one out wakes another while anything is queued), a searcher
//     that found none (it then runs R-W1-R-W3, whose sweep sees F), a producer giving
//     back a count it could not hand over (R-N5 goes round and wakes any sleeper), or
//     a claimed worker that cancelled at R-W3 (R-I4 again).
//   - If P read sleeping_ == 0 (R-N3), X's R-W1 is after P's read in the fences' total
//     order, so X's R-W3 sweep, after its R-W2, sees F.
//   - If P claimed a sleeper Y, Y wakes (or cancels at R-W3 with a fiber) holding P's
//     count, and the two cases above apply to Y's decrement.
//   - The sweep (relaxed_queue.cc) reads every list's head stamp, written under the
//     list's lock before P's unlock and P's R-N1; a list seen empty after the fence
//     therefore held no F.
// DisableSleepRecheckForTesting() removes R-W3; the lost-wake-up hammer then fails.
//
// Stealing between groups (Steal, for thieves): the oldest stealable fiber among the
// first RelaxedQueue::kStealLookahead of a list, lists tried from a rotating start with
// try_lock; scheduling_group_local fibers are skipped and keep their place.
//
// Rejected: waking on every push (a futex per spawn); v2's token (one more shared
// line and a second hand-over to reason about, where handing the count over suffices).

#include "runtime/internal/strategy_relaxed.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "fiber/internal/spinlock.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/futex.h"

DEFINE_uint64(fiber_relaxed_lists_per_worker, 2,
              "Strategy relaxed: the group's queue has this many FIFO lists per worker "
              "(default 2). Range [1, 64]. More lists contend less but leave more of "
              "them empty, so pops miss more often.");

namespace spindle::internal {
namespace {

// RelaxedQueue::kMaxLists over kMaxWorkersPerGroup.
constexpr std::uint64_t kMaxRelaxedListsPerWorker = 64;

std::string ValidateRelaxedFlags() {
  if (FLAGS_fiber_relaxed_lists_per_worker < 1 ||
      FLAGS_fiber_relaxed_lists_per_worker > kMaxRelaxedListsPerWorker) {
    return "--fiber_relaxed_lists_per_worker=" +
           std::to_string(FLAGS_fiber_relaxed_lists_per_worker) +
           " is invalid: expected lists per worker in [1, " +
           std::to_string(kMaxRelaxedListsPerWorker) + "]";
  }
  return "";
}

std::unique_ptr<SchedulingStrategy> CreateRelaxed(const SchedulingGroupOptions& options) {
  return std::unique_ptr<SchedulingStrategy>(new (options.memory_node) StrategyRelaxed(
      options, StrategyRelaxedSettings::FromFlags()));
}

}  // namespace

const StrategyEntry kStrategyRelaxedEntry = {"relaxed", &ValidateRelaxedFlags,
                                             &CreateRelaxed};

StrategyRelaxedSettings StrategyRelaxedSettings::FromFlags() {
  StrategyRelaxedSettings settings;
  settings.lists_per_worker = FLAGS_fiber_relaxed_lists_per_worker;
  return settings;
}

}  // namespace spindle::internal

namespace spindle::internal {
namespace {

// The queue's size, checked here (in the constructor's initializer list, before the
// queue exists) so that a bad value names the flag rather than the queue's bound.
std::size_t ListCount(const SchedulingGroupOptions& options,
                      const StrategyRelaxedSettings& settings) {
  const std::size_t per_worker = settings.lists_per_worker;
  CHECK(per_worker >= 1 && options.workers * per_worker <= RelaxedQueue::kMaxLists)
      << "--fiber_relaxed_lists_per_worker=" << per_worker << " with " << options.workers
      << " workers per group is invalid: expected lists per worker in [1, "
      << RelaxedQueue::kMaxLists / std::max<std::size_t>(1, options.workers) << "]";
  return options.workers * per_worker;
}

std::uint64_t SeedFor(std::size_t group, std::size_t worker) {
  return 0x9E3779B97F4A7C15ULL * (worker + 1) + 0xD1B54A32D192ED03ULL * (group + 1);
}

}  // namespace

StrategyRelaxed::StrategyRelaxed(const SchedulingGroupOptions& options,
                                 const StrategyRelaxedSettings& settings)
    : options_(options),
      max_searching_(std::max<std::size_t>(1, (options.workers + 1) / 2)),
      queue_(ListCount(options, settings), options.memory_node, &DropIfRunInline),
      workers_(new Worker[options.workers]) {
  for (std::size_t i = 0; i < options.workers; ++i) {
    workers_[i].cursor = RelaxedCursor(SeedFor(options.index, i));
  }
}

StrategyRelaxed::~StrategyRelaxed() = default;

void StrategyRelaxed::SetThieves(std::vector<SchedulingStrategy*> thieves) {
  thieves_ = std::move(thieves);
}

RelaxedCursor& StrategyRelaxed::CursorFor(std::size_t origin) {
  if (origin < options_.workers) return workers_[origin].cursor;
  // Plain threads, timer threads and other groups' workers: a cursor per thread (its
  // last-push list may be another group's; TakeBack() only compares values).
  thread_local RelaxedCursor foreign(
      SeedFor(std::hash<std::thread::id>()(std::this_thread::get_id()), 1000));
  return foreign;
}

// ---- Producer side.

void StrategyRelaxed::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason,
                              std::size_t origin) {
  queue_.Push(CursorFor(origin), entry, stealable);
  Notify();
}

void StrategyRelaxed::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                                   std::size_t n, std::size_t origin) {
  RelaxedCursor& cursor = CursorFor(origin);
  for (std::size_t i = 0; i < n; ++i) queue_.Push(cursor, entries[i], stealable[i]);
  // One wake-up: the woken searcher that finds work and is the last one out wakes the
  // next while fibers remain (R-I4), so a batch ramps the group up without a system
  // call per fiber.
  Notify();
}

void StrategyRelaxed::Notify() {
  SchedulerTestPointReached(SchedulerTestPoint::kBeforeWakeUp, kNoWorker);
  StoreLoadFence();  // R-N1: pairs with R-W2 and with R-I4's fence.
  // relaxed loads: ordered after the push by R-N1.
  if (searching_.load(std::memory_order_relaxed) != 0) return;  // R-N2
  if (sleeping_.load(std::memory_order_relaxed) == 0) {         // R-N3
    WakeUpThief();
    return;
  }
  WakeSleeperAsSearcher(/*only_if_none_search=*/true);  // R-N4, R-N5
}

bool StrategyRelaxed::WakeSleeperAsSearcher(bool only_if_none_search) {
  for (;;) {
    if (only_if_none_search) {
      std::size_t none = 0;
      // seq_cst: a count producers read at R-N2; given back below or by the wakee.
      if (!searching_.compare_exchange_strong(none, 1, std::memory_order_seq_cst,
                                              std::memory_order_relaxed)) {
        return false;  // R-N4: someone searches
      }
    } else {
      searching_.fetch_add(1, std::memory_order_seq_cst);  // as above
    }
    // R-N5. relaxed load: a hint; the fetch_and decides.
    std::uint64_t sleeping = sleeping_.load(std::memory_order_relaxed);
    while (sleeping != 0) {
      const std::uint64_t bit = sleeping & (~sleeping + 1);
      // release: a worker that clears its own bit without sleeping (R-W3's cancel)
      // acquires it and sees our count and the push; a sleeper gets them through the
      // WaitSlot's release/acquire.
      if (sleeping_.fetch_and(~bit, std::memory_order_release) & bit) {
        wakeups_.Add(1);  // per-thread cells: no shared read-modify-write
        workers_[static_cast<std::size_t>(__builtin_ctzll(bit))].slot.Wake();
        return true;
      }
      sleeping = sleeping_.load(std::memory_order_relaxed);
    }
    // Nobody left to hand the count to. seq_cst RMW, then a fence: pairs with the R-N1
    // of producers that skipped at R-N2 because of it; what we read next includes
    // their fibers.
    searching_.fetch_sub(1, std::memory_order_seq_cst);
    StoreLoadFence();
    // relaxed: ordered by the fence above.
    if (sleeping_.load(std::memory_order_relaxed) == 0) {
      // Every worker of ours is busy after all: as R-N3 (a producer's call only; a
      // thief's wake-up of us is not passed on).
      if (only_if_none_search) WakeUpThief();
      return false;
    }
    if (queue_.UnsafeEmpty()) return false;
    if (only_if_none_search && searching_.load(std::memory_order_relaxed) != 0) return false;
  }
}

void StrategyRelaxed::WakeUpThief() {
  if (thieves_.empty() || !queue_.UnsafeHasStealable()) return;
  // relaxed: only spreads the wake-ups over the thieves.
  const std::size_t turn = next_thief_.fetch_add(1, std::memory_order_relaxed);
  for (std::size_t i = 0; i < thieves_.size(); ++i) {
    if (thieves_[(turn + i) % thieves_.size()]->WakeOneSleeper()) return;
  }
}

bool StrategyRelaxed::WakeOneSleeper() {
  // A victim group's producer wants one of our sleepers to look for work (its queue
  // has a backlog): the woken worker searches, so it holds a count like any wakee.
  // Not only from 0: other searchers of ours do not poll the victim's queue. Nobody
  // asleep: nothing to do, and no write to our shared lines (a busy victim asks on
  // every push). relaxed: a best-effort wake-up; the claim decides.
  if (sleeping_.load(std::memory_order_relaxed) == 0) return false;
  return WakeSleeperAsSearcher(/*only_if_none_search=*/false);
}

// ---- Worker side.

std::uintptr_t StrategyRelaxed::TakeNext(std::size_t worker) {
  RelaxedCursor& cursor = workers_[worker].cursor;
  for (;;) {
    const std::uintptr_t entry = queue_.Pop(cursor);
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

std::uintptr_t StrategyRelaxed::SearchOnce(std::size_t worker, IdleHooks* hooks) {
  if (std::uintptr_t entry = TakeNext(worker)) return entry;
  if (hooks != nullptr) return hooks->TryOtherSources();
  return 0;
}

void StrategyRelaxed::StopSearching(bool found) {
  // R-I4. seq_cst RMW, then a fence: pairs with R-N1 (a producer that saw our count).
  const std::size_t before = searching_.fetch_sub(1, std::memory_order_seq_cst);
  StoreLoadFence();
  if (found && before == 1) WakeAnotherIfQueued();
}

void StrategyRelaxed::WakeAnotherIfQueued() {
  // A relaxed snapshot, read after the caller's fence (R-I4, R-W2).
  if (!queue_.UnsafeEmpty()) Notify();
}

bool StrategyRelaxed::ClearSleepingBit(std::size_t worker) {
  const std::uint64_t bit = std::uint64_t{1} << worker;
  // acq_rel: if a waker cleared it first (R-N5), its count and push are visible to
  // what we do next.
  return (sleeping_.fetch_and(~bit, std::memory_order_acq_rel) & bit) == 0;
}

std::uintptr_t StrategyRelaxed::FindRunnable(std::size_t worker, IdleHooks& hooks) {
  if (std::uintptr_t entry = TakeNext(worker)) return entry;  // R-I1
  bool searching = TryIncrementBelow(searching_, max_searching_);  // R-I2
  for (;;) {
    std::uintptr_t entry = SearchForWork(searching, options_.spin_time, hooks,  // R-I3
                                         [&] { return SearchOnce(worker, &hooks); });
    if (searching) {
      StopSearching(entry != 0);  // R-I4
      searching = false;
    }
    if (entry != 0) return entry;

    const std::uint64_t bit = std::uint64_t{1} << worker;
    SchedulerTestPointReached(SchedulerTestPoint::kBeforeSleep, worker);
    sleeping_.fetch_or(bit, std::memory_order_seq_cst);  // R-W1
    StoreLoadFence();                                     // R-W2: pairs with R-N1
    SchedulerTestPointReached(SchedulerTestPoint::kMarkedSleeping, worker);
    // R-W3. relaxed: a test switch.
    if (SleepRecheckEnabled()) entry = SearchOnce(worker, nullptr);
    if (entry != 0) {
      if (ClearSleepingBit(worker)) {
        StopSearching(/*found=*/true);  // a waker's count: give it back as a searcher
      } else {
        WakeAnotherIfQueued();  // "more work"
      }
      return entry;
    }
    const IdlePlan plan = stopping() ? IdlePlan{true, {}} : hooks.PlanWhenMarkedSleeping();
    if (plan.poll) {
      if (ClearSleepingBit(worker)) {
        StopSearching(/*found=*/false);
        WakeAnotherIfQueued();  // its fiber: we go back to polling other sources first
      }
      return 0;
    }
    SchedulerTestPointReached(SchedulerTestPoint::kBeforeWait, worker);
    Sleep(worker, workers_[worker].slot, plan.limit);  // R-W4 (maybe in the poller)
    const bool claimed = ClearSleepingBit(worker);
    if (stopping()) {
      if (claimed) StopSearching(/*found=*/false);
      return 0;
    }
    if (!claimed) return 0;  // a time limit, or a wake-up banked earlier: the caller loops
    searching = true;        // a waker's count is ours: search (R-I3)
  }
}

// ---- Victim side of stealing between groups.

std::uintptr_t StrategyRelaxed::Steal() {
  for (;;) {
    // relaxed: only spreads the thieves over the lists.
    const std::size_t start =
        next_victim_list_.fetch_add(1, std::memory_order_relaxed) % queue_.lists();
    const std::uintptr_t entry = queue_.Steal(start);
    if (entry == 0 || ClaimEntry(entry)) return entry;  // else a joiner ran it
  }
}

bool StrategyRelaxed::MayHaveStealable() const { return queue_.UnsafeHasStealable(); }

// ---- Lifetime and statistics.

void StrategyRelaxed::Stop() {
  // release: pairs with the acquire load in stopping().
  stopping_.store(true, std::memory_order_release);
  for (std::size_t i = 0; i < options_.workers; ++i) workers_[i].slot.WakeForever();
}

void StrategyRelaxed::TakeBack(std::size_t worker,
                               absl::FunctionRef<bool(std::uintptr_t)> wanted,
                               absl::FunctionRef<bool(std::uintptr_t)> taken) {
  // The joiner pushed its children with its own cursor (or its thread's, off a worker
  // of ours), which remembers where. A joiner that moved to another worker since, or
  // children queued through a plain thread's cursor (chaos mode's shared-queue pushes)
  // are not found: their dead entries wait for a pop or a full list's compaction.
  // Nothing to wake: the queue only shrinks.
  queue_.TakeBack(CursorFor(worker), wanted, taken);
}

bool StrategyRelaxed::UnsafeEmpty() const { return queue_.UnsafeEmpty(); }

StrategyStats StrategyRelaxed::stats() const {
  StrategyStats stats;
  stats.wakeups = wakeups_.Read();
  stats.global_queue_size = queue_.UnsafeSize();
  return stats;
}

}  // namespace spindle::internal
