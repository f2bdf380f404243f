// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy v1 (behind the SchedulingStrategy seam): one bounded MPMC run
// queue per group, at most two spinning workers, lowest-numbered workers first. The
// design is flare's (and tRPC-Cpp's v1); see ../shared/reference/anchors_design.md §3.2.
// This is our own implementation.
//
// The problem. A producer (any thread) pushes a ready fiber; an idle worker must run it
// soon. Polling forever burns CPU; a futex wake on every push costs ~25-30 us on this
// VM and a system call for the producer. So a few idle workers poll ("spin") for a
// short time, and only when none does is a sleeping worker woken.
//
// The protocol is SpinnerNotifier's (runtime/internal/idle/spinner_notifier.cc: P1-P4,
// S1-S3, W1-W4 and why it loses no wake-up); the idle path that calls its idle side is
// the same for every strategy (idle_path.cc), where "searching" is spinning. This file
// is the strategy's storage: one GlobalRunQueue, its overflow, and stealing from it.
//
// Overflow. The queue is bounded; a fiber is never dropped when it is full (see
// global_run_queue.h: plain threads wait for room, runtime threads spill to an overflow
// list). The overflow size is part of what W3 re-checks, and a spilling producer runs
// P1-P3 like any other, so the no-lost-wake-up argument covers it unchanged.
//
// Stealing (between groups; the policy of when to try lives in idle_path.cc). A thief
// (a worker of another group) calls StealBatch(), RunQueue::Steal() on the victim's
// ring (one entry per steal under v1): it takes the oldest entry unless that entry was
// pushed by a scheduling_group_local fiber (PIN bit), so such fibers never leave their
// group. The
// stolen fiber's `scheduling_group` becomes the thief's group before it runs
// (MakeRunning): it belongs to the thief from then on. Stealing only ever removes entries
// from a victim, and every entry is still run exactly once (the ring hands each position
// to one taker), so the no-lost-wake-up argument above is unchanged: a claimed spinner
// or a woken sleeper whose fiber was stolen finds the queue empty and goes idle, which
// is right, since a thief is running that fiber. The overflow list is never stolen from.
//   T1. Sleeping thieves. A whole group may sleep while another is overloaded. P4 above
//       ("every worker is busy") is where that shows: then the producer looks at the
//       groups that may steal from us, in turn (WakeOneThief in notifier.h): a group
//       with a searcher ends the look (v2 and relaxed: the searcher will look at us;
//       notifier.cc says why it cannot miss us), a group whose workers are all busy is
//       passed over, and the first with a sleeper gets one woken, if our queue is still
//       not empty, which then polls its victims and steals (see idle_path.cc); one that
//       finds nothing sleeps again. v1's notifier always answers "a sleeper" or "all
//       busy" (its spinners leave without a last look at the victims), so a v1 thief
//       group is woken whether or not it spins. The woken thief is running from the v1
//       point of view of its own group, and it polls its own queue on every round.
//       Cost: nothing while the runtime is idle or our workers keep up (P2/P3 succeed
//       first); while all our workers are busy, two relaxed loads per thief group, of
//       lines that change only when its workers start or stop searching or sleeping,
//       and a futex wake only where a thief sleeps and none searches. (It was a shared
//       fetch_add and reads of our own queues on every push: at 16 workers in two
//       groups, that made skynet 2.4x slower than at 8 in one.)
//   T2. No lost steal. A thief about to sleep runs W1 and W2, then, in W3, after its
//       own queue, asks its worker whether a victim's queue holds fibers; if so it
//       does not sleep and polls its victims instead if it searched (or sleeps for at
//       most 1 ms and looks again: a worker the notifier did not let search, or one
//       whose recent attempts all failed; idle_path.cc, L4 and L5). Against the
//       producer's push, P1 and its read of the thief's sleeping mask in T1, that is
//       the same Dekker pair as above: either the producer sees the thief's bit and
//       wakes it, or the thief sees the fiber (v2 and relaxed: or the producer sees a
//       searcher, whose give-back is the other half of the pair; notifier.cc). So a
//       stealable fiber queued behind busy workers is always seen by some awake thief
//       within 1 ms, where any thief worker is free (unless a non-stealable entry is
//       ahead of it: RunQueue::Steal() looks at the oldest entry only). Missing a thief
//       never strands a fiber: our own workers still run everything queued here. A fiber re-queued by Yield() or Dispatch()
//       (RequeueBeforeSwitch) is pushed with P1-P4 like any other, so T1 covers it too.

#include "runtime/internal/strategies/strategy_v1.h"

#include <algorithm>
#include <chrono>

#include "fiber/internal/spinlock.h"
#include "glog/logging.h"
#include "runtime/internal/group/fiber_desc.h"
#include "runtime/internal/idle/futex.h"

namespace spindle::internal {
namespace {

std::unique_ptr<SchedulingStrategy> CreateV1(const SchedulingGroupOptions& options) {
  return std::unique_ptr<SchedulingStrategy>(new (options.memory_node) StrategyV1(options));
}

}  // namespace

const StrategyEntry kStrategyV1Entry = {
    "v1", [] { return std::string(); }, &CreateV1};

StrategyV1::StrategyV1(const SchedulingGroupOptions& options)
    : SchedulingStrategy(notifier_),
      options_(options),
      queue_(options.index, options.run_queue_capacity, options.memory_node),
      notifier_(*this, options.workers) {}

void StrategyV1::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason,
                         std::size_t) {
  queue_.Push(entry, stealable, [this] { notifier_.NotifyMany(options_.workers); });
  notifier_.Notify();
}

void StrategyV1::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, std::size_t) {
  queue_.PushMany(entries, stealable, n,
                  [this] { notifier_.NotifyMany(options_.workers); });
  notifier_.NotifyMany(n);
}

#if SPINDLE_HAS_TEST_SEAMS
std::uint64_t StrategyV1::BeginStalledPushForTesting() {
  std::uint64_t position = 0;
  CHECK(queue_.ClaimForTesting(&position)) << "run queue full";
  return position;
}

void StrategyV1::FinishStalledPushForTesting(std::uint64_t position, std::uintptr_t entry,
                                             bool stealable) {
  queue_.PublishForTesting(position, entry, stealable);
  notifier_.Notify();
}
#endif  // SPINDLE_HAS_TEST_SEAMS

std::uintptr_t StrategyV1::TakeNext(std::size_t) { return queue_.Take(); }

std::size_t StrategyV1::StealBatch(std::uintptr_t* out, std::size_t /*max*/) {
  // One fiber per steal, as before batches: the thief would queue the rest with
  // EnqueueBatch, which under v1 wakes a worker per fiber (NotifyMany). With batches
  // (and searcher-only polling, measured together) 16 workers in two groups ran fib
  // 1.4-1.5x slower under v1 (a 16-core machine, two runs each); v2 and relaxed did not.
  bool moved_pinned = false;
  out[0] = queue_.Steal(&moved_pinned);
  // A moved entry was out of the queue for a moment, as if pushed again: P1-P4.
  if (moved_pinned) notifier_.Notify();
  return out[0] != 0 ? 1 : 0;
}

bool StrategyV1::MayHaveStealable() const { return queue_.UnsafeRingSize() != 0; }

bool StrategyV1::TakeBackEntry(std::size_t /*worker*/, std::uintptr_t entry) {
  // The shared queue's head only: taking an entry out frees its slot at once. Nothing to
  // wake: the queue only shrank.
  return queue_.TakeBackEntry(entry);
}

void StrategyV1::NoteDeadEntries() { queue_.NoteDeadEntries(); }

bool StrategyV1::UnsafeEmpty() const { return queue_.UnsafeEmpty(); }

StrategyStats StrategyV1::stats() const {
  StrategyStats stats;
  stats.wakeups = notifier_.wakeups();
  stats.run_queue_spills = queue_.spills();
  stats.run_queue_full_waits = queue_.full_waits();
  stats.global_queue_size = queue_.UnsafeSize();
  return stats;
}

}  // namespace spindle::internal
