// Copyright 2026 The Spindle Authors.
//
// Scheduling strategy v2: per-worker queues, a global queue, and a notifier. Designs
// studied (../shared/reference/io_and_v2.md §1-2): Go's runq/runnext/findRunnable and
// its spinning-M rule, Taskflow's notifier (announce, re-check, commit or cancel), and
// tRPC-Cpp v2's routing. This is our own implementation; where it departs, it says why.
//
// Queues.
//   - Each worker owns a bounded SPMC LocalQueue (local_queue.h: the owner's push is a
//     plain release store, its pop one CAS; thieves grab half with one CAS) and a
//     `runnext` slot.
//   - The group's bounded MPMC queue (GlobalRunQueue, the same as v1's, with its
//     overflow policy) takes fibers queued from outside the group (plain threads,
//     timers, other groups) and the overflow of a full local queue (half of it moves,
//     in one batch).
//   - A fiber that yields goes to the tail of its worker's local queue, behind every
//     fiber ready there. (Go's Gosched sends it to the global queue instead; then the
//     1-in-61 global check below lets it overtake the local queue again and again, and
//     yielding fibers do not get equal shares of a worker.)
//   - A fiber started or woken by a fiber of worker w goes to w's runnext (seed 002's
//     spawn-LIFO, Go's runnext); the entry it displaces goes to w's local tail. A
//     displaced descriptor that its joiner already ran inline is freed instead of
//     queued (DropIfRunInline), so join() in a loop leaves no dead entries behind.
//     --fiber_v2_spawn=fifo turns runnext off (everything goes to the local tail).
//   - Staging (--fiber_v2_stage_size). While no worker of the group searches or sleeps
//     and no thief group has an idle worker (MayStage: relaxed loads of lines that
//     change only when workers go idle), the entry a new runnext displaces goes to the
//     worker's stage (StageBuffer, as v1's: "Staging" in strategy_v1.cc) instead of its
//     local queue. Under fork-join a joiner then takes its child back from anywhere in
//     the stage (G5 in TakeBackEntry), where in the local queue a child behind its
//     ancestors' siblings could not be, and stayed as a dead entry that siblings stole,
//     dropped and freed on their own core, so that every descriptor the spawner reused
//     came from the other core, and a second worker barely sped fork-join up. The
//     stage empties as v1's does: G1, the worker's next TakeNext(), moves it to the
//     local queue (and a yield's swap does not apply while it holds anything); G2, a
//     displacement or a push to the local tail while somebody is idle moves it first; G3,
//     an idle sibling's StealInGroup takes its oldest entry (after the local queues,
//     before the runnext slots); G4, a full stage moves to the local queue; G6, the hog
//     monitor's rescue takes it with the rest. A group of one worker without thieves
//     never stages: its local queue is as private, and cheaper.
//   - Each worker has a WakeInbox (wake_inbox.h) for the fibers that a firing round of
//     the group's TimerWorker makes Ready (EnqueueWoken, below). They are overdue by
//     definition. Queued at the global tail they would wait behind every fiber that
//     overflowed there, while Go puts a timer's goroutine in runnext of the P that runs
//     the timer.
//
// Timer rounds (EnqueueWoken). Due timers are fired by busy workers themselves (an
// assist, group_timers.h), every 16th switch (busy_poll.h), or by the group's TimerWorker
// thread when no worker does. An assist's fibers go to the firing worker's own inbox,
// which it takes from next (Go's runnext of the P that runs the timer, for a whole
// round). The thread's rounds are spread in equal shares over the workers that do not
// sleep, starting one further each round; if all sleep, they go to the global queue (N4
// wakes one). Each post is made under the inbox's lock, then one Notify (N1-N5), as after
// any push. A worker in one long fiber (the sleep workload's spawner) leaves its inbox
// alone: its busy siblings take from it one entry per take when theirs is empty (TK0),
// its idle ones half of it (I3). Rejected: choosing the workers whose count of takes
// moved lately (it costs every take a store); one shared priority queue (every
// worker's take would read a line the timer thread writes, and all wake-ups would go
// through one queue again); the global queue's head (its ring is FIFO).
//
// Taking (TakeNext, the worker's own sources, no blocking):
//   TK1. For every `global_check_interval`-th fiber taken (61, as Go), the global queue
//       first, so fibers from outside cannot starve behind a worker that keeps feeding
//       itself.
//   TK0. The inbox, unless it was picked kMaxInboxStreak (16) times in a row: fibers
//       that sleep in a loop must not starve the local queue and runnext. If it is
//       empty, one entry of one sibling's inbox, a different sibling each time (its
//       owner may be in one long fiber). After TK3, before TK4, the own inbox again.
//       Each empty check is one relaxed load of an inbox's own line, which changes only
//       when a round posts to it or a worker takes from it.
//   TK2. runnext, unless it was picked kMaxRunnextStreak times in a row: we have no
//       preemption, so two fibers that hand off to each other through runnext would
//       otherwise starve the local queue forever (Go relies on sysmon; Tokio caps its
//       LIFO slot the same way).
//   TK3. The local queue (FIFO), then runnext again.
//   TK4. A batch from the global queue (the first runs, the rest to the local queue).
//
// Searching and stealing between groups: strategy_v2_steal.cc.
//
// Waking: the searcher/sleeper notifier shared with relaxed (notifier.cc, steps N1-N5,
// I2-I4, W1-W4, and its proof). What v2 adds to the proof:
//   - The W3 re-check (TakeNext, then StealInGroup) reads every queue a push may go to:
//     the global queue, every worker's inbox, local queue, stage and runnext. AnyQueued(),
//     which "more work" and the last searcher out read, reads the same set. A staged
//     entry is a push like the others: the stage's size is stored (under its lock)
//     before the producer's N1 fence, and read by W3 after W2's.
//   - M1. A worker that moves entries into its local queue (the rest of a global batch,
//     the rest of a stolen half, half a sibling's inbox, its stage) notifies after the
//     move, like any producer: while the entries sat in its private buffer, a
//     searcher's re-check could miss them, and their producers had skipped their
//     wake-up because it searched; if the mover is not a searcher, nobody else would
//     run them while it runs a long fiber (two fibers that spin for each other: the
//     second waits in the first one's local queue while the other worker sleeps).
//   - Inboxes. A round's posts are pushes followed by a Notify like any other; which
//     workers a round goes to (the sleeping mask) is only a hint.
// Pushing to one's own local queue costs the fence and two loads while anyone searches
// or nobody sleeps: "notifies nobody unless idle workers exist and no one is looking".
//
// Rejected: Taskflow <= 3.4's "a thief stays awake while any worker is active" rule
// (burns a core per blocked fiber; removed upstream); a lock around the global queue
// (Go's sched.lock): the lock-free ring exists.

#include "runtime/internal/strategies/strategy_v2.h"

#include <algorithm>
#include <chrono>

#include "fiber/internal/cycle_clock.h"
#include "fiber/internal/spinlock.h"
#include "glog/logging.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/futex.h"

namespace spindle::internal {
namespace {

constexpr unsigned kMaxRunnextStreak = 3;
// TK0: after this many inbox picks in a row, one from runnext or the local queue.
constexpr unsigned kMaxInboxStreak = 16;

}  // namespace

bool StrategyV2::IsStealable(std::uintptr_t entry) {
  // The caller owns the entry (it grabbed it), so reading its flag is safe.
  return IsDescEntry(entry) ? !DecodeDesc(entry)->scheduling_group_local
                            : !DecodeFiber(entry)->scheduling_group_local;
}

StrategyV2::StrategyV2(const SchedulingGroupOptions& options,
                       const StrategyV2Settings& settings)
    : SchedulingStrategy(notifier_),
      options_(options),
      settings_(settings),
      global_(options.index, options.run_queue_capacity, options.memory_node),
      notifier_(*this, options.workers) {
  CHECK_GE(settings.global_check_interval, 1u)
      << "--fiber_v2_global_check_interval must be >= 1";
  workers_ = new std::unique_ptr<Worker>[options.workers];
  for (std::size_t i = 0; i < options.workers; ++i) {
    workers_[i] = std::make_unique<Worker>(settings.local_queue_capacity, options.memory_node,
                                           settings.stage_capacity);
    workers_[i]->random = 0x9E3779B97F4A7C15ULL * (i + 1) + options.index;
    workers_[i]->index = i;
    workers_[i]->inbox_peek = i + 1;
  }
  // Sized now: a rescue allocates nothing (timer_allocation_test counts every thread's).
  rescue_entries_.resize(settings.local_queue_capacity + 1 + settings.stage_capacity);
#if !defined(SPINDLE_MODEL_CHECK)
  // Models leave it 0: their scheduler explores every order of the look and the CAS,
  // and a wait in ticks means nothing there.
  runnext_grace_ticks_ = static_cast<std::uint64_t>(
      static_cast<double>(settings.runnext_grace_ns) / CycleClockNanosPerTick());
#endif
  rescue_stealable_.reset(
      new bool[settings.local_queue_capacity + 1 + settings.stage_capacity]);
}

StrategyV2::~StrategyV2() { delete[] workers_; }

// ---- Producer side.

void StrategyV2::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason,
                         std::size_t origin) {
  // The common cases (a yield, a spawn or a wake-up by a worker of ours) inline; the
  // rest out of line, so that they do not make every push save registers.
  if (__builtin_expect(origin >= options_.workers, 0)) return EnqueueFromOutside(entry, stealable);
  Worker& me = *workers_[origin];
  if (reason == ReadyReason::kYielded || reason == ReadyReason::kStartedBack ||
      (reason != ReadyReason::kStartedNext && !settings_.spawn_lifo)) {
    if (__builtin_expect(me.stage.UnsafeSize() != 0, 0)) FlushStage(me);  // older first
    if (__builtin_expect(!me.local.Push(entry), 0)) PushLocalOverflow(me, entry);
  } else {
    // The owner's exchange; a sibling may CAS the slot away concurrently (acq_rel: the
    // entry's referent is published to whoever takes it, and we see what it published).
    const std::uintptr_t old = me.runnext.exchange(entry, std::memory_order_acq_rel);
    if (old != 0) PlaceDisplaced(me, old);
  }
  Notify();
}

void StrategyV2::EnqueueFromOutside(std::uintptr_t entry, bool stealable) {
  global_.Push(entry, stealable, [this] { Notify(); });
  Notify();
}

void StrategyV2::PlaceDisplaced(Worker& me, std::uintptr_t old) {
  if (DropIfRunInline(old)) return;
  // A lone worker with no thieves has nobody to keep its fibers from: the local queue
  // is as private as a stage, and cheaper.
  if (settings_.stage_capacity != 0 && (options_.workers > 1 || has_thieves())) {
    if (MayStage()) {
      // G4: a full stage goes to the local queue first (where siblings steal it).
      if (me.stage.UnsafeSize() == settings_.stage_capacity) FlushStage(me);
      // The caller's Notify() follows: the stage is a queue like the others. Its
      // stealable bits go unused here, as the local queue's: an entry leaves the group
      // only through the global queue, where PushLiveToGlobal reads the fiber's own.
      if (me.stage.Push(old, /*stealable=*/true)) return;
    } else if (me.stage.UnsafeSize() != 0) {
      FlushStage(me);  // G2: somebody is idle: the older fibers first, where it looks
    }
  }
  if (!me.local.Push(old)) PushLocalOverflow(me, old);
}

void StrategyV2::FlushStage(Worker& me) {
  constexpr std::size_t kChunk = 64;  // on the caller's stack: a fiber's, possibly
  std::uintptr_t entries[kChunk];
  bool stealable[kChunk];
  std::size_t moved = 0;
  for (std::size_t n; (n = me.stage.TakeOldest(entries, stealable, kChunk)) != 0;) {
    for (std::size_t i = 0; i < n; ++i) {
      if (!me.local.Push(entries[i])) PushLocalOverflow(me, entries[i]);
    }
    moved += n;
  }
  // M1: the entries were in no queue for a moment, so a worker's re-check may have
  // missed them; moving them is a push, with the producer's wake-up decision.
  if (moved != 0) Notify();
}

std::uintptr_t StrategyV2::TakeFromSiblingStage(std::size_t worker) {
  // A descriptor whose joiner ran it inline fails its claim and is dropped.
  const std::uintptr_t entry = TakeFromSiblingStages(
      worker, options_.workers,
      [this](std::size_t i) -> StageBuffer& { return workers_[i]->stage; }, &ClaimEntry);
  if (entry != 0) steals_in_group_.Add(1);
  return entry;
}

void StrategyV2::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, std::size_t origin) {
  if (origin == kNoWorker) {
    global_.PushMany(entries, stealable, n, [this] { Notify(); });
  } else {
    for (std::size_t i = 0; i < n; ++i) PushLocal(origin, entries[i]);
  }
  // One Notify per entry at most wakes as many workers as there are fibers; each stops
  // early once a searcher exists (N2), and woken searchers wake more while work remains
  // (I4), so a batch ramps the group up without a system call per fiber.
  Notify();
}

void StrategyV2::EnqueueWoken(const std::uintptr_t* entries, const bool* stealable,
                              std::size_t n, std::size_t origin) {
  if (n == 0) return;
  if (origin < options_.workers) {
    // A worker fired them (an assist): it is scheduling, so its own inbox, which it
    // takes from next; siblings steal from it like from any inbox.
    workers_[origin]->inbox.PostMany(entries, n);
    Notify();  // as after any push (notifier.cc)
    return;
  }
  // From the TimerWorker thread: in equal shares to the workers that do not sleep,
  // starting one further each round. A share that lands on a worker stuck in one long
  // fiber is taken by its siblings (TK0's look at a sibling's inbox).
  const std::size_t workers = options_.workers;
  std::size_t chosen[kMaxWorkersPerGroup];
  std::size_t k = 0;
  // relaxed: a hint for the choice only; whoever the entries go to, N1-N5 below and
  // every worker's re-check (W3 looks at all inboxes) decide the wake-ups.
  const std::uint64_t sleeping = notifier_.sleeping_hint();
  // relaxed: only spreads the rounds; any value is correct.
  const std::size_t start = next_woken_.fetch_add(1, std::memory_order_relaxed) % workers;
  for (std::size_t i = 0; i < workers; ++i) {
    const std::size_t w = (start + i) % workers;
    if (((sleeping >> w) & 1) == 0) chosen[k++] = w;
  }
  if (k == 0) {
    // Everybody sleeps: the global queue, whose wake-up takes a sleeper.
    EnqueueBatch(entries, stealable, n, kNoWorker);
    return;
  }
  const std::size_t share = (n + k - 1) / k;
  for (std::size_t i = 0, done = 0; done < n; ++i) {
    const std::size_t m = std::min(share, n - done);
    workers_[chosen[i]]->inbox.PostMany(entries + done, m);
    done += m;
  }
  Notify();  // as after any push (notifier.cc)
}

std::size_t StrategyV2::PollBudget(std::size_t worker) const {
  // The owner asks: only it pushes to its local queue, so the room cannot shrink
  // meanwhile (siblings only take from it). One place stays for the fiber that is
  // switching out (a yield polls before it queues itself).
  const LocalQueue& local = workers_[worker]->local;
  const std::size_t held = local.UnsafeSize();
  return held + 1 >= local.capacity() ? 0 : local.capacity() - held - 1;
}

void StrategyV2::PushLocal(std::size_t worker, std::uintptr_t entry) {
  Worker& me = *workers_[worker];
  if (__builtin_expect(!me.local.Push(entry), 0)) PushLocalOverflow(me, entry);
}

void StrategyV2::PushLocalOverflow(Worker& me, std::uintptr_t entry) {
  // Full: move half of it, and the new entry, to the global queue in one batch (Go's
  // runqputslow), so siblings and thieves see the backlog there too; or, with
  // --fiber_v2_overflow=one, the new entry alone.
  std::uintptr_t* moved = me.overflow_buffer.get();  // half + 1 entries
  std::size_t grabbed = 0;
  if (settings_.overflow_half) {
    grabbed = me.local.Grab(moved, me.local.capacity() / 2 + 1, /*half=*/true);
  }
  moved[grabbed] = entry;
  PushLiveToGlobal(moved, grabbed + 1, me.overflow_stealable.get());
}

std::size_t StrategyV2::PushLiveToGlobal(std::uintptr_t* entries, std::size_t n,
                                         bool* stealable) {
  // Descriptors whose joiners ran them inline (and could not take them back) end here
  // rather than costing the global queue capacity.
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!DropIfRunInline(entries[i])) entries[kept++] = entries[i];
  }
  if (kept == 0) return 0;
  for (std::size_t i = 0; i < kept; ++i) stealable[i] = IsStealable(entries[i]);
  global_.PushMany(entries, stealable, kept, [this] { Notify(); });
  return kept;
}

// ---- Worker side.

// Inlined into its callers (TakeOwnSources on every switch).
__attribute__((always_inline)) inline std::uintptr_t StrategyV2::TakeLocal(Worker& me) {
  for (;;) {
    const std::uintptr_t entry = me.local.Pop();
    if (entry == 0 || ClaimEntry(entry)) return entry;
  }
}

std::uintptr_t StrategyV2::TakeFromGlobal(Worker& me) {
  // TK4: a share of the global queue (Go's globrunqget), the first to run now; or one
  // entry, or as much as half our local queue holds (--fiber_v2_global_take).
  const std::size_t room = me.local.capacity() / 2;
  std::size_t share = 1;
  switch (settings_.global_take) {
    case StrategyV2Settings::GlobalTake::kShare:
      // At most one batch, as before the choice existed.
      share = std::min<std::size_t>(
          {global_.UnsafeSize() / options_.workers + 1, room, std::size_t{32}});
      break;
    case StrategyV2Settings::GlobalTake::kOne:
      share = 1;
      break;
    case StrategyV2Settings::GlobalTake::kAll:
      share = std::max<std::size_t>(std::min<std::size_t>(global_.UnsafeSize(), room), 1);
      break;
  }
  constexpr std::size_t kBatch = 32;
  std::uintptr_t batch[kBatch];
  for (;;) {
    std::uintptr_t run = 0;
    std::size_t queued = 0;  // moved to our local queue
    std::size_t taken = 0;
    while (taken < share) {
      const std::size_t n =
          global_.TakeBatchUnclaimed(batch, std::min<std::size_t>(share - taken, kBatch));
      if (n == 0) break;
      taken += n;
      for (std::size_t i = 0; i < n; ++i) {
        // Claim only the one we run: the others are claimed by whoever takes them from
        // our local queue (a second claim of the same descriptor would read as "its
        // joiner ran it" and drop the fiber: runtime_test's idle test lost fibers that
        // way).
        if (run == 0) {
          if (ClaimEntry(batch[i])) run = batch[i];
          continue;
        }
        ++queued;
        if (!me.local.Push(batch[i])) {
          // Cannot happen while our local queue was empty enough; keep it safe anyway.
          global_.Push(batch[i], IsStealable(batch[i]), [this] { Notify(); });
        }
      }
    }
    // M1: the rest of the batch was in no queue for a moment, so a worker's re-check
    // may have missed it; moving it is a push, with the producer's wake-up decision.
    if (queued != 0) Notify();
    if (run != 0) return run;
    // Nothing left, or a batch of descriptors that their joiners all ran, which says
    // nothing about what is behind it: take the next one (returning 0 here once left
    // fibers queued while their worker went to sleep).
    if (taken == 0) return 0;
  }
}

std::uintptr_t StrategyV2::TakeNext(std::size_t worker) {
  Worker& me = *workers_[worker];
  if (__builtin_expect(me.stage.UnsafeSize() != 0, 0)) FlushStage(me);  // G1
  // TK1 counts fibers taken, as Go's schedtick counts goroutines run: polls that find
  // nothing (an idle worker searching) do not move it, so its phase does not depend on
  // how long a worker spun (chaos mode's same-seed-same-order on one worker needs
  // that). A count-down, not a modulo: a 64-bit division costs more than the rest of
  // this path.
  if (me.rounds_to_global_check == 1) {  // TK1: this take is the interval-th
    if (std::uintptr_t entry = global_.Take()) {
      me.rounds_to_global_check = settings_.global_check_interval;
      return entry;
    }
  }
  const std::uintptr_t entry = TakeOwnSources(me);
  if (entry != 0 && --me.rounds_to_global_check == 0) {
    me.rounds_to_global_check = settings_.global_check_interval;
  }
  return entry;
}

// Inlined into TakeNext, its only caller: a call here would be paid on every switch.
__attribute__((always_inline)) inline std::uintptr_t StrategyV2::TakeOwnSources(Worker& me) {
  auto take_runnext = [&me]() -> std::uintptr_t {
    // relaxed load: a hint; acquire exchange: pairs with the producer's exchange.
    while (me.runnext.load(std::memory_order_relaxed) != 0) {
      const std::uintptr_t entry = me.runnext.exchange(0, std::memory_order_acquire);
      if (entry == 0) return 0;  // a sibling stole it
      if (ClaimEntry(entry)) return entry;
    }
    return 0;
  };
  if (me.inbox_streak < kMaxInboxStreak) {  // TK0
    if (std::uintptr_t entry = me.inbox.Take()) {
      ++me.inbox_streak;
      return entry;
    }
    if (options_.workers > 1) {
      if (std::uintptr_t entry = TakeFromSiblingInbox(me)) {
        ++me.inbox_streak;
        return entry;
      }
    }
  }
  me.inbox_streak = 0;
  if (me.runnext_streak < kMaxRunnextStreak) {  // TK2
    if (std::uintptr_t entry = take_runnext()) {
      ++me.runnext_streak;
      return entry;
    }
  }
  me.runnext_streak = 0;
  if (std::uintptr_t entry = TakeLocal(me)) return entry;  // TK3
  if (std::uintptr_t entry = take_runnext()) return entry;
  if (std::uintptr_t entry = me.inbox.Take()) return entry;  // TK0 after its streak
  return TakeFromGlobal(me);  // TK4
}

std::uintptr_t StrategyV2::TakeFromSiblingInbox(Worker& me) {
  // A worker that runs one long fiber (a spawner that never yields) leaves its inbox
  // alone meanwhile, however overdue its wake-ups: the busy siblings take them, not
  // only the idle ones (StealFromInboxes). One sibling per take, in turn: one relaxed
  // load of a line that changes only when a round posts to it.
  const std::size_t n = options_.workers;
  std::size_t v = me.inbox_peek;
  if (v >= n) v = 0;
  if (v == me.index) v = v + 1 == n ? 0 : v + 1;
  me.inbox_peek = v + 1;
  std::uintptr_t entry = 0;
  // Grab() looks at the inbox's size first and locks only when it holds something.
  if (workers_[v]->inbox.Grab(&entry, 1, /*half=*/false) == 0) return 0;
  steals_in_group_.Add(1);
  return entry;
}

// ---- Lifetime and statistics.

bool StrategyV2::TakeBackEntry(std::size_t worker, std::uintptr_t entry) {
  // A joiner's children sit in its own runnext and at the head of its own local queue
  // (in start order), or at the global queue's head when they came from elsewhere or
  // overflowed. Owner operations on our own queues, one CAS each; a thief that copied an
  // entry first loses its CAS (or we lose ours and leave the entry to it).
  if (worker != kNoWorker) {
    Worker& me = *workers_[worker];
    // relaxed: a value to compare; the CAS decides (acquire: we take over the entry).
    std::uintptr_t next = me.runnext.load(std::memory_order_relaxed);
    if (next == entry &&
        me.runnext.compare_exchange_strong(next, 0, std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
      return true;
    }
    if (me.stage.UnsafeSize() != 0 && me.stage.Remove(entry)) return true;  // G5
    if (me.local.TakeOldestIf([entry](std::uintptr_t queued) { return queued == entry; }) != 0) {
      return true;
    }
  }
  return global_.TakeBackEntry(entry);
}

void StrategyV2::NoteDeadEntries() { global_.NoteDeadEntries(); }

bool StrategyV2::UnsafeEmpty() const { return !AnyQueued(); }

StrategyStats StrategyV2::stats() const {
  StrategyStats stats;
  // relaxed: statistics.
  stats.wakeups = notifier_.wakeups();
  stats.run_queue_spills = global_.spills();
  stats.run_queue_full_waits = global_.full_waits();
  stats.steals_in_group = steals_in_group_.Read();
  stats.global_queue_size = global_.UnsafeSize();
  for (std::size_t i = 0; i < options_.workers; ++i) {
    const std::uint64_t depth = workers_[i]->local.UnsafeSize() +
                                workers_[i]->inbox.UnsafeSize() +
                                workers_[i]->stage.UnsafeSize() +
                                (workers_[i]->runnext.load(std::memory_order_relaxed) != 0);
    stats.local_queue_size += depth;
    stats.local_queue_sizes.push_back(depth);
  }
  return stats;
}

}  // namespace spindle::internal
