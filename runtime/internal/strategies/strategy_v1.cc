// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy v1 (behind the SchedulingStrategy seam): one bounded MPMC run
// queue per group, at most two spinning workers, lowest-numbered workers first. The
// design is flare's (and tRPC-Cpp's v1); see ../shared/reference/anchors_design.md §3.2.
// This is our own implementation.
//
// The problem. A producer (any thread) pushes a ready fiber; an idle worker must run it
// soon. Polling forever burns CPU; a futex wake on every push costs a system call for
// the producer and the wake-up's latency. So a few idle workers poll ("spin") for a
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
//       and a futex wake only where a thief sleeps and none searches. (A shared
//       fetch_add and reads of our own queues on every push would make a saturated
//       group's every push contend with its thieves.)
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
//       never strands a fiber: our own workers still run everything queued here. A
//       fiber re-queued by Yield() or Dispatch() (RequeueBeforeSwitch) is pushed with
//       P1-P4 like any other, so T1 covers it too.

//
// Staging (--fiber_v1_stage_size). Under fork-join (skynet, fib: a fiber starts
// children and joins them, running each inline if it has not started) every start
// would be a push into the shared ring and most of them a dead entry, run inline by its
// joiner before anyone popped it: with two workers the ring's tail and head lines move
// between cores on every start, and the ring, full of dead entries, is compacted every
// few hundred pushes, so more workers run fork-join slower. Yet while every worker is
// busy no worker can take a new fiber anyway. So a fiber made ready by a worker's fiber
// (any reason but a yield), while no worker of the group spins or sleeps and no thief
// group has an idle worker (MayStage: relaxed loads of lines that change only when
// workers go idle), waits in its worker's stage (StageBuffer: a small FIFO under a lock
// that only that worker takes in the common case) instead of the ring. It leaves the
// stage:
//   G1. at the worker's next scheduling point: TakeNext() moves the whole stage to the
//       ring first (one batch push), then takes the ring's oldest entry, so v1's order
//       is kept: a worker's own fibers run in the order made ready, behind what was
//       queued before them;
//   G2. when a fiber is made ready and some worker is idle: the stage goes to the ring
//       first, then the new fiber, with the producer's wake-up (an idle worker gets the
//       oldest staged fiber, in fork-join the largest piece of work);
//   G3. to an idle sibling: TakeNext() of a worker whose own sources are empty takes the
//       oldest entry of a sibling's stage (so a stage is part of what every poll sees:
//       a spinner's, a claimed spinner's S3, W3's re-check);
//   G4. when full: its older half goes to the ring;
//   G5. to a joiner taking back the child it ran inline (TakeBackEntry): from its own
//       stage, wherever the child is, so fork-join leaves no dead entry behind;
//   G6. to the hog monitor's rescue (RescueStalledWorker), when the worker's fiber has
//       run for --fiber_hog_rescue_ms: the stage goes to the ring, where thieves of
//       other groups can take it too.
// No lost wake-up: staging is a push like any other, followed by the producer's P1-P4
// (Notify). Against an idle worker's W1-W3 it is the same Dekker pair: the stage's
// size is stored before P1's fence, and W3's re-check (TakeNext, G3) reads it after
// W2's; a spinner claimed by P2 polls through TakeNext, which sees the stage (G3).
// UnsafeEmpty() counts the stages, so "more work" sees them too. Every staged entry
// leaves through exactly one of G1-G6, each under the stage's lock. What staging gives
// up: a thief group cannot see a stage (only the ring), so while every worker of every
// group is busy a staged fiber waits for its own worker's next scheduling point, or an
// idle worker's G3, or G6; MayStage() stages nothing while a thief group has an idle
// worker, and that group is woken by the next push (P4, T1).
//
// Timer-woken fibers (EnqueueWoken). A fiber whose sleep ended is overdue; behind a
// burst of started fibers in the shared FIFO it would wait for all of them. Timers'
// fibers go to a second queue instead (a GlobalRunQueue of their own), which
// TakeNext() serves first, but for one take in kSharedFirstEvery where the shared queue
// goes first, so that timers that keep firing cannot starve it (Go's check of its global
// queue every 61 schedules). Its entries stay in the group (thieves see the shared
// queue only); the producer's P1-P4 and UnsafeEmpty() cover it as any queue.

#include "runtime/internal/strategies/strategy_v1.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "fiber/internal/spinlock.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/futex.h"

DEFINE_uint64(fiber_v1_stage_size, 64,
              "Strategy v1: fibers a worker's running fiber may make ready while every "
              "worker is busy before they go to the group's shared queue (default 64; "
              "0 = none: every fiber goes to the shared queue at once). Range [0, 256]. "
              "Staged fibers move to the shared queue at the worker's next switch, when "
              "a worker goes idle (which takes them), or when the stage is full.");

namespace spindle::internal {
namespace {

// One take in this many serves the shared queue before the timers' woken queue.
constexpr std::uint32_t kSharedFirstEvery = 61;
// The woken queue's ring: a burst of timers larger than this spills to its overflow
// list (the timer thread and the workers are runtime threads), as any full ring does.
constexpr std::size_t kMaxWokenRing = 8192;

std::string ValidateV1Flags() {
  if (FLAGS_fiber_v1_stage_size > kMaxStageCapacity) {
    return "--fiber_v1_stage_size=" + std::to_string(FLAGS_fiber_v1_stage_size) +
           " is out of range: accepted [0, " + std::to_string(kMaxStageCapacity) + "]";
  }
  return std::string();
}

std::unique_ptr<SchedulingStrategy> CreateV1(const SchedulingGroupOptions& options) {
  return std::unique_ptr<SchedulingStrategy>(
      new (options.memory_node) StrategyV1(options, StrategyV1Settings::FromFlags()));
}

}  // namespace

const StrategyEntry kStrategyV1Entry = {"v1", &ValidateV1Flags, &CreateV1};

StrategyV1Settings StrategyV1Settings::FromFlags() {
  StrategyV1Settings settings;
  settings.stage_capacity = static_cast<std::size_t>(FLAGS_fiber_v1_stage_size);
  return settings;
}

StrategyV1::StrategyV1(const SchedulingGroupOptions& options,
                       const StrategyV1Settings& settings)
    : SchedulingStrategy(notifier_),
      options_(options),
      stage_capacity_(settings.stage_capacity),
      queue_(options.index, options.run_queue_capacity, options.memory_node),
      woken_(options.index, std::min(options.run_queue_capacity, kMaxWokenRing),
             options.memory_node),
      notifier_(*this, options.workers) {
  CHECK_LE(stage_capacity_, kMaxStageCapacity) << "StrategyV1 stage capacity";
  workers_.reserve(options.workers);
  for (std::size_t i = 0; i < options.workers; ++i) {
    workers_.push_back(std::make_unique<Worker>(stage_capacity_));
  }
}

bool StrategyV1::MayStage() const {
  // relaxed: hints. A worker that goes idle after these loads still finds the staged
  // fiber (G3 through W3's re-check, or P2/P3 of the Notify() that follows the push);
  // a thief group that goes idle is woken by our next push to the ring (P4).
  return notifier_.spinning_workers() == 0 && notifier_.sleeping_workers() == 0 &&
         ThievesAllBusy();
}

void StrategyV1::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
                         std::size_t origin) {
  if (stage_capacity_ != 0 && origin < options_.workers && reason != ReadyReason::kYielded) {
    StageBuffer& stage = workers_[origin]->stage;
    if (MayStage()) {
      // G4: a full stage sends its older half to the ring (with its wake-up) first.
      if (stage.UnsafeSize() == stage_capacity_) FlushStage(origin, (stage_capacity_ + 1) / 2);
      if (stage.Push(entry, stealable)) {
        notifier_.Notify();  // P1-P4: the stage is a queue like the ring (see "Staging")
        return;
      }
    } else if (stage.UnsafeSize() != 0) {
      FlushStage(origin, stage_capacity_);  // G2: the older fibers first
    }
  }
  queue_.Push(entry, stealable, [this] { notifier_.NotifyMany(options_.workers); });
  notifier_.Notify();
}

void StrategyV1::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, std::size_t origin) {
  // A worker's own staged fibers were made ready first: they go first (G1's order).
  if (origin < options_.workers && workers_[origin]->stage.UnsafeSize() != 0) {
    FlushStage(origin, stage_capacity_);
  }
  queue_.PushMany(entries, stealable, n,
                  [this] { notifier_.NotifyMany(options_.workers); });
  notifier_.NotifyMany(n);
}

void StrategyV1::EnqueueWoken(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, std::size_t) {
  woken_.PushMany(entries, stealable, n, [this] { notifier_.NotifyMany(options_.workers); });
  notifier_.NotifyMany(n);
}

std::size_t StrategyV1::FlushStage(std::size_t worker, std::size_t max) {
  constexpr std::size_t kChunk = 64;  // on the caller's stack: a fiber's, possibly
  std::uintptr_t entries[kChunk];
  bool stealable[kChunk];
  StageBuffer& stage = workers_[worker]->stage;
  std::size_t moved = 0;
  while (moved < max) {
    const std::size_t n = stage.TakeOldest(entries, stealable, std::min(kChunk, max - moved));
    if (n == 0) break;
    queue_.PushMany(entries, stealable, n,
                    [this] { notifier_.NotifyMany(options_.workers); });
    moved += n;
  }
  // The entries were out of every queue between the take and the push, as if pushed
  // anew: the producer's P1-P4 for them (v1 wakes up to one worker per fiber).
  if (moved != 0) notifier_.NotifyMany(moved);
  return moved;
}

std::uintptr_t StrategyV1::TakeFromSiblingStage(std::size_t worker) {
  // A descriptor whose joiner ran it inline fails its claim and is dropped.
  const std::uintptr_t entry = TakeFromSiblingStages(
      worker, workers_.size(), [this](std::size_t i) -> StageBuffer& { return workers_[i]->stage; },
      &ClaimEntry);
  if (entry != 0) steals_in_group_.Add(1);
  return entry;
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

std::uintptr_t StrategyV1::TakeNext(std::size_t worker) {
  std::uint32_t takes = 0;
  if (worker < workers_.size()) {
    Worker& me = *workers_[worker];
    if (me.stage.UnsafeSize() != 0) FlushStage(worker, stage_capacity_);  // G1
    takes = ++me.takes;
  }
  const bool woken_first = takes % kSharedFirstEvery != 0;
  if (woken_first) {
    if (const std::uintptr_t entry = TakeWoken()) return entry;
  }
  if (const std::uintptr_t entry = queue_.Take()) return entry;
  if (!woken_first) {
    if (const std::uintptr_t entry = TakeWoken()) return entry;
  }
  return stage_capacity_ != 0 && worker < workers_.size() ? TakeFromSiblingStage(worker)
                                                          : 0;  // G3
}

std::size_t StrategyV1::RescueStalledWorker(std::size_t worker) {
  // G6. relaxed: a hint, checked first: the monitor asks every few milliseconds while
  // the fiber runs, mostly about an empty stage.
  if (worker >= workers_.size() || workers_[worker]->stage.UnsafeSize() == 0) return 0;
  // Nobody else could run them: moving them would only reorder (as v2 does).
  if (workers_.size() == 1 && !has_thieves()) return 0;
  return FlushStage(worker, stage_capacity_);
}

bool StrategyV1::StagesEmpty() const {
  for (const auto& worker : workers_) {
    if (worker->stage.UnsafeSize() != 0) return false;
  }
  return true;
}

std::size_t StrategyV1::StealBatch(std::uintptr_t* out, std::size_t /*max*/) {
  // One fiber per steal: the thief would queue the rest with EnqueueBatch, which under
  // v1 wakes a worker per fiber (NotifyMany), so batches slow v1's fork-join down
  // across groups (not v2's or relaxed's).
  bool moved_pinned = false;
  out[0] = queue_.Steal(&moved_pinned);
  // A moved entry was out of the queue for a moment, as if pushed again: P1-P4.
  if (moved_pinned) notifier_.Notify();
  return out[0] != 0 ? 1 : 0;
}

bool StrategyV1::MayHaveStealable() const { return queue_.UnsafeRingSize() != 0; }

bool StrategyV1::TakeBackEntry(std::size_t worker, std::uintptr_t entry) {
  // G5: the joiner's own stage, anywhere in it; else the shared queue's head only
  // (taking an entry out frees its slot at once). Nothing to wake: a queue only shrank.
  if (worker < workers_.size() && workers_[worker]->stage.UnsafeSize() != 0 &&
      workers_[worker]->stage.Remove(entry)) {
    return true;
  }
  return queue_.TakeBackEntry(entry);
}

void StrategyV1::NoteDeadEntries() { queue_.NoteDeadEntries(); }

bool StrategyV1::UnsafeEmpty() const {
  return queue_.UnsafeEmpty() && woken_.UnsafeEmpty() && StagesEmpty();
}

StrategyStats StrategyV1::stats() const {
  StrategyStats stats;
  stats.wakeups = notifier_.wakeups();
  stats.run_queue_spills = queue_.spills() + woken_.spills();
  stats.run_queue_full_waits = queue_.full_waits() + woken_.full_waits();
  stats.global_queue_size = queue_.UnsafeSize() + woken_.UnsafeSize();
  stats.steals_in_group = steals_in_group_.Read();
  for (const auto& worker : workers_) stats.local_queue_size += worker->stage.UnsafeSize();
  return stats;
}

}  // namespace spindle::internal
