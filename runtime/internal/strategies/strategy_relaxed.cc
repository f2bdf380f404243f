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
//     a later chapter, with an eventfd per processor). Here idle workers sleep through
//     the one idle path (idle_path.cc) under the shared notifier, so the timers,
//     stealing between groups, sync and the poller work unchanged.
//   - Every ready fiber goes through the lists: no runnext slot and no local queue.
//     A fiber started, woken or yielding on worker w is pushed with w's cursor, to one
//     of w's home lists while their locks are free, so w's next pops look at that list
//     first (the thesis' locality, not v2's LIFO), and siblings meet w's lists only
//     through their pops' random picks. Fork-join
//     trees lose v2's "run the child next"; a joiner that finds its child not yet run
//     still runs it inline (join()), and takes the dead entry back from the list it
//     pushed it to, which the worker's cursor remembers (TakeBackEntry).
//   - Timer wake-ups (EnqueueWoken) go to the head of a list with the oldest stamp
//     (RelaxedQueue::PushUrgent): they are overdue already, and stamped by readiness
//     they would wait behind every fiber started before them (after a burst of starts,
//     far longer than the sleep itself).
//   - Pops end with a sweep of every list after two missed pairs (relaxed_queue.cc), so
//     TakeNext() returning 0 means the group's queue was seen empty: the re-check
//     before sleeping needs that, and it bounds how often a pop can miss.
//
// Taking. TakeNext = the queue's Pop with the worker's cursor, claiming descriptors
// (a joiner may have run one inline: ClaimEntry drops it and we pop again).
//
// Waking. The searcher/sleeper notifier of notifier.cc, shared with v2: producers wake
// a sleeper only when nobody searches, and the woken worker holds the searcher count
// from the moment it is chosen. Its W3 re-check is TakeNext, whose sweep sees every
// list; the proof that no wake-up is lost is at the top of notifier.cc.
//
// Stealing between groups (StealBatch, for thieves): half of each list in turn, from a
// rotating start with try_lock, up to the thief's batch: each list's oldest stealable
// fibers among its first RelaxedQueue::kStealLookahead; scheduling_group_local fibers
// are skipped and keep their place.

#include "runtime/internal/strategies/strategy_relaxed.h"

#include <algorithm>
#include <functional>
#include <thread>

#include "fiber/internal/spinlock.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/base/fiber_desc.h"

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
    : SchedulingStrategy(notifier_),
      options_(options),
      queue_(ListCount(options, settings), options.memory_node, &DropIfRunInline),
      workers_(new Worker[options.workers]),
      notifier_(*this, options.workers) {
  // Each worker's home: its own lists_per_worker lists (relaxed_queue.cc).
  const std::size_t per_worker = queue_.lists() / options.workers;
  for (std::size_t i = 0; i < options.workers; ++i) {
    workers_[i].cursor = RelaxedCursor(SeedFor(options.index, i), i * per_worker, per_worker);
  }
}

StrategyRelaxed::~StrategyRelaxed() = default;

RelaxedCursor& StrategyRelaxed::CursorFor(std::size_t origin) {
  if (origin < options_.workers) return workers_[origin].cursor;
  // Plain threads, timer threads and other groups' workers: a cursor per thread (its
  // last-push list may be another group's; TakeBackEntry() only compares values).
  thread_local RelaxedCursor foreign(
      SeedFor(std::hash<std::thread::id>()(std::this_thread::get_id()), 1000));
  return foreign;
}

// ---- Producer side.

void StrategyRelaxed::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason,
                              std::size_t origin) {
  queue_.Push(CursorFor(origin), entry, stealable);
  notifier_.Notify();
}

void StrategyRelaxed::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                                   std::size_t n, std::size_t origin) {
  RelaxedCursor& cursor = CursorFor(origin);
  for (std::size_t i = 0; i < n; ++i) queue_.Push(cursor, entries[i], stealable[i]);
  // One wake-up: the woken searcher that finds work and is the last one out wakes the
  // next while fibers remain (I4 in notifier.cc), so a batch ramps the group up without a system
  // call per fiber.
  notifier_.Notify();
}

void StrategyRelaxed::EnqueueWoken(const std::uintptr_t* entries, const bool* stealable,
                                   std::size_t n, std::size_t origin) {
  RelaxedCursor& cursor = CursorFor(origin);
  for (std::size_t i = 0; i < n; ++i) queue_.PushUrgent(cursor, entries[i], stealable[i]);
  notifier_.Notify();  // one wake-up, as EnqueueBatch()
}

// ---- Worker side.

std::uintptr_t StrategyRelaxed::TakeNext(std::size_t worker) {
  RelaxedCursor& cursor = workers_[worker].cursor;
  for (;;) {
    const std::uintptr_t entry = queue_.Pop(cursor);
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

// ---- Victim side of stealing between groups.

std::size_t StrategyRelaxed::StealBatch(std::uintptr_t* out, std::size_t max) {
  for (;;) {
    // relaxed: only spreads the thieves over the lists.
    const std::size_t start =
        next_victim_list_.fetch_add(1, std::memory_order_relaxed) % queue_.lists();
    const std::size_t got = queue_.StealMany(start, out, max);
    if (got == 0) return 0;  // every list was seen without a stealable value (or locked)
    // The first that no joiner ran is claimed (the thief runs it); the rest stay
    // unclaimed, less those already run inline. n <= k: compacts in place.
    std::size_t n = 0;
    for (std::size_t k = 0; k < got; ++k) {
      if (n == 0 ? !ClaimEntry(out[k]) : DropIfRunInline(out[k])) continue;
      out[n++] = out[k];
    }
    if (n != 0) return n;
  }
}

bool StrategyRelaxed::MayHaveStealable() const { return queue_.UnsafeHasStealable(); }

// ---- Lifetime and statistics.

bool StrategyRelaxed::TakeBackEntry(std::size_t worker, std::uintptr_t entry) {
  // The joiner pushed its children with its own cursor (or its thread's, off a worker
  // of ours), which remembers where. A joiner that moved to another worker since, or
  // children queued through a plain thread's cursor (chaos mode's shared-queue pushes)
  // are not found: their dead entries wait for a pop or a full list's compaction.
  // Nothing to wake: the queue only shrinks.
  return queue_.TakeBack(CursorFor(worker), entry);
}

bool StrategyRelaxed::UnsafeEmpty() const { return queue_.UnsafeEmpty(); }

StrategyStats StrategyRelaxed::stats() const {
  StrategyStats stats;
  stats.wakeups = notifier_.wakeups();
  stats.global_queue_size = queue_.UnsafeSize();
  return stats;
}

}  // namespace spindle::internal
