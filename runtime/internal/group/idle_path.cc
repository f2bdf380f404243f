// Copyright 2026 The Spindle Authors.
//
// The idle path: how a worker with nothing to run finds the next fiber, or sleeps.
// Written once for every strategy, in Go's order (runtime/proc.go, findRunnable), and
// read top to bottom in FindRunnable and SearchAndSleep below:
//
//   1. Timers and the poller, when due (group_timers.h, group_poller.h): fired or
//      polled here, on the worker's own stack, holding no fiber's lock. Before the
//      queues, as Go checks its timers first: a worker whose queues never empty must
//      still fire them (a ParkFiber() that finds a poll due comes here for it).
//   2. Our own queues (the strategy's TakeNext).
//   I2. Become a searcher, if the notifier lets us (notifier.h: v2 and relaxed count
//      searchers up to half the group; v1 lets two workers spin).
//   I3. Search, in rounds: our own queues, then our siblings' (StealInGroup), then other
//      groups, one attempt on each victim every `every_n` rounds (L2 below). A searcher
//      repeats rounds for up to the spin time; anyone repeats them while victims look
//      worth polling (L4). I4: stop searching (the notifier's give-back).
//   W1-W2. Announce that we sleep (the notifier's bit and fence).
//   W3. Re-check the group's queues (the same TakeNext and StealInGroup, which between
//      them see every queue a push may go to), the stop flag, and the victims (T2 of
//      strategy_v1.cc: poll them, or sleep with a limit). Found work or a poll plan:
//      cancel the announcement.
//   W4. Sleep on our slot (a counted futex word: a Wake() before the Wait() is kept),
//      or in the group's poller (epoll_wait) when descriptors are registered and its
//      token is free. Woken by a producer's claim: search on its behalf (back to I3).
//      With timers of our own (the ones our fibers armed: group_timers.h), we sleep
//      until the earliest at the latest, and then fire them at step 1 (as Go's
//      findRunnable sleeps until its P's next timer): the fibers they wake run here,
//      with no other thread woken to fire them and then to wake us. If one is due
//      already, we do not sleep. Only we arm timers in our queue, so none earlier can
//      arrive while we sleep.
// Why no wake-up is lost between a producer's push and W1-W4 is the notifier's proof
// (notifier.cc for v2 and relaxed, spinner_notifier.cc for v1); this path's part is the
// order: announce, fence, re-check every queue, and only then sleep.
//
// Stealing between groups. Each worker keeps its victims (every other group it may
// steal from) with a ratio N: --fiber_work_stealing_ratio for groups on its NUMA node,
// and --fiber_cross_numa_work_stealing_ratio for the others (0 = not a victim at all).
// Every search round is one idle round; a victim with ratio N gets one steal attempt
// every N rounds (L2). Every victim of the same node is a victim, including when the
// runtime's list meets the worker's own group (it is skipped and the scan goes on,
// where flare and tRPC returned early and so never registered same-node victims:
// anchors_design.md §3.4).
//   L3. An attempt takes a batch (SchedulingStrategy::StealBatch: up to half of one of
//       the victim's queues, at most SchedulingGroup::kMaxStealBatch; v1: one fiber):
//       we run the first and queue the rest as our own pushes, whose wake-up sends our
//       idle siblings to them. One fiber per attempt left a thief group as short of
//       work after each steal as before it.
//   L4. Poll: while some victim looked non-empty at our last attempt on it and fewer
//       than kMaxFruitlessSteals attempts in a row failed, a searcher searches again;
//       a worker the notifier did not let search (it bounds searchers to half the
//       group) sleeps instead, for at most kStuckVictimRecheck (L5's limit). A round
//       without a steal attempt costs one look at our own queues and reads none of the
//       victim's lines (its busy workers write them on every push and pop), so with a
//       backlog to steal an attempt comes every few hundred nanoseconds at the default
//       ratio; after a failed attempt the worker backs off (a short pause, and a yield
//       of the CPU every eighth time).
//   L5. Giving up: L4 stops after kMaxFruitlessSteals failed attempts at queues that
//       looked non-empty (the oldest entry is scheduling_group_local, which hides
//       everything behind it from thieves, or the victim's own workers keep winning).
//       The worker then sleeps for at most kStuckVictimRecheck (1 ms) while some
//       victim's queue is still not empty, and looks again: without that, a stealable
//       fiber that reaches the head of a queue whose workers are all busy, after the
//       last push, would wait for them.
// Idle CPU: L4 polls, and L5 and the workers not let search sleep with a time limit,
// only while a victim's queue is non-empty, so an idle runtime sleeps until woken,
// exactly as without stealing. The worst case is a victim whose queue stays non-empty
// with unstealable fibers at its head: each thief then makes kMaxFruitlessSteals
// attempts per kStuckVictimRecheck.
// A victim whose workers are all busy wakes a sleeping thief itself (T1 in
// strategy_v1.cc, SchedulingStrategy::WakeUpThief).
//
// Rejected: always sleeping with a time limit (a steal check every T): it wakes idle
// workers of an idle runtime for nothing and still leaves a sleeping group blind for T.
// One idle loop per strategy: the same announce, re-check and sleep written three
// times, where a lost wake-up can hide in any one copy.

#include "runtime/internal/group/idle_path.h"

#include <thread>
#include <utility>

#include "fiber/internal/spinlock.h"
#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/group/group_chaos.h"
#include "runtime/internal/group/parking.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/scheduling_test_points.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {
namespace {

constexpr std::uint64_t kMaxFruitlessSteals = 64;
// How long a worker that gave up on victims whose queues are not empty sleeps before it
// looks again (L5).
constexpr std::chrono::milliseconds kStuckVictimRecheck{1};

}  // namespace

IdlePath::IdlePath(SchedulingGroup* group, std::size_t worker,
                   std::vector<StealVictim> victims)
    : group_(group),
      strategy_(*group->strategy()),
      notifier_(group->strategy()->notifier()),
      worker_(worker) {
  CHECK_LT(worker, group->size()) << "no worker " << worker << " in its group";
  for (const StealVictim& victim : victims) {
    CHECK(victim.group != group_ && victim.every_n >= 1)
        << "a worker's victims are other groups with a ratio >= 1";
    victims_.push_back(Victim{victim.group, victim.every_n, victim.every_n, false});
  }
}

FiberEntity* IdlePath::FindRunnable() {
  // We ran a fiber, or were woken (maybe by a saturated victim, T1): look again.
  fruitless_steals_ = 0;
  fruitless_at_last_pause_ = 0;
  group_->busy_poll().FromIdle(worker_);  // 1
  std::uintptr_t entry = strategy_.TakeNext(worker_);  // 2
  if (entry == 0) entry = SearchAndSleep();
  if (entry == 0) return nullptr;
  slept_since_work_ = false;
  if constexpr (kTestSeams) {
    if (ChaosDecides()) entry = ChaosPick(group_, entry, worker_);
  }
  return MakeRunning(group_, entry, worker_);
}

std::uintptr_t IdlePath::SearchAndSleep() {
  bool searching = notifier_.StartSearching(worker_);  // I2
  for (;;) {
    const bool searched = searching;
    std::uintptr_t entry = Search(searching);                     // I3
    entry = notifier_.StopSearching(worker_, searching, entry);  // I4
    if (entry != 0) return entry;

    SchedulerTestPointReached(SchedulerTestPoint::kBeforeSleep, worker_);
    notifier_.Announce(worker_);  // W1, W2
    SchedulerTestPointReached(SchedulerTestPoint::kMarkedSleeping, worker_);
    if (SleepRecheckEnabled()) entry = LookInGroup();  // W3
    if (entry != 0) {
      notifier_.Cancel(worker_, /*found=*/true);
      return entry;
    }
    // The plan is made only now, after W2, so a victim's fiber queued before its
    // producer could see our bit is seen here (T2 of strategy_v1.cc).
    const Plan plan = strategy_.stopping() ? Plan{true, {}} : PlanWhenAnnounced(searched);
    if (plan.poll) {
      notifier_.Cancel(worker_, /*found=*/false);  // the caller looks at our queues first
      return 0;
    }
    BusyPoll& busy_poll = group_->busy_poll();
    const std::int64_t own_timer_ns = busy_poll.OwnTimerFrontNs(worker_);
    if (own_timer_ns != INT64_MAX && own_timer_ns <= MonotonicNowNs()) {
      notifier_.Cancel(worker_, /*found=*/false);  // a timer of ours is due: fire it
      busy_poll.RequestPoll(worker_);
      return 0;
    }
    SchedulerTestPointReached(SchedulerTestPoint::kBeforeWait, worker_);
    if (own_timer_ns != INT64_MAX) busy_poll.NoteSleepingUntil(worker_, own_timer_ns);
    SleepOnSlot(plan.limit, own_timer_ns);  // W4
    if (own_timer_ns != INT64_MAX) {
      busy_poll.NoteSleepingUntil(worker_, INT64_MAX);
      busy_poll.RequestPoll(worker_);  // woken for it or not, look at our timers first
    }
    const bool claimed = notifier_.EndSleep(worker_);
    // Our sleep left the poller vacant: a sleeping sibling takes it over (it finds no
    // fiber, sleeps again, and wins the token), unless someone already has. Our
    // sleeping bit is clear by now, so the wake-up cannot come back to us.
    if (hand_off_pending_) {
      hand_off_pending_ = false;
      if (strategy_.poller()->vacant()) strategy_.WakeOneSleeper();
    }
    if (strategy_.stopping()) {
      notifier_.StopSearching(worker_, claimed, 0);  // a waker's count goes back
      return 0;
    }
    // A time limit, or a wake-up banked earlier: the caller starts over.
    if (!claimed) return 0;
    searching = true;  // a producer's wake-up: we search on its behalf
  }
}

std::uintptr_t IdlePath::Search(bool searching) {
  std::uintptr_t entry = 0;
  const auto deadline = std::chrono::steady_clock::now() + group_->options().spin_time;
  // L4 polls on what each victim looked like at our last attempt on it: start from now.
  if (searching) {
    for (Victim& victim : victims_) victim.looked_stealable = victim.group->MayHaveStealable();
  }
  for (int round = 0;; ++round) {
    entry = LookInGroup();
    if (entry == 0) entry = TryOtherGroups();
    if (entry != 0 || strategy_.stopping()) break;
    if (searching && !notifier_.KeepSearching(worker_)) break;
    if (searching && ShouldPollVictims()) {  // L4: searchers only (a bounded number)
      PausePolling();
      continue;
    }
    if (!searching) break;  // a non-searcher looks once
    if ((round & 15) == 15 && std::chrono::steady_clock::now() >= deadline) break;
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
  return entry;
}

std::uintptr_t IdlePath::LookInGroup() {
  if (std::uintptr_t entry = strategy_.TakeNext(worker_)) return entry;
  return strategy_.StealInGroup(worker_);
}

std::uintptr_t IdlePath::TryOtherGroups() {
  if (victims_.empty()) return 0;
  ++idle_rounds_;
  group_->stats().CountStealRound();
  for (Victim& victim : victims_) {
    if (victim.next_round > idle_rounds_) continue;  // not its turn; the scan goes on
    victim.next_round = idle_rounds_ + victim.every_n;
    group_->stats().CountStealAttempt();
    if (std::uintptr_t entry = group_->StealEntryFrom(victim.group, worker_)) {
      victim.looked_stealable = true;  // there may be more
      return entry;
    }
    // Only attempts at a queue that still looks non-empty count: the entry at its head
    // is not stealable, or another worker keeps beating us to it.
    victim.looked_stealable = victim.group->MayHaveStealable();
    if (victim.looked_stealable) ++fruitless_steals_;
  }
  return 0;
}

bool IdlePath::ShouldPollVictims() const {
  if (fruitless_steals_ >= kMaxFruitlessSteals) return false;
  for (const Victim& victim : victims_) {
    if (victim.looked_stealable) return true;
  }
  return false;
}

void IdlePath::PausePolling() {
  // L4. Rounds without an attempt are cheap, so the ratio decides how often we steal.
  // After a failed attempt, back off, and yield now and then: on an oversubscribed
  // machine the victim's workers need the CPU more than we need to look again.
  if (fruitless_steals_ == fruitless_at_last_pause_) {
    CpuRelax();
  } else if ((fruitless_steals_ & 7) == 0) {
    std::this_thread::yield();
  } else {
    for (int i = 0; i < 16; ++i) CpuRelax();
  }
  fruitless_at_last_pause_ = fruitless_steals_;
}

IdlePath::Plan IdlePath::PlanWhenAnnounced(bool searched) const {
  // A victim's queue that is not empty now is either polled (by a searcher), or looked
  // at again within kStuckVictimRecheck (a worker that was not let search, or after
  // kMaxFruitlessSteals failed attempts); an empty one cannot strand a fiber (its next
  // push sees our sleeping bit in T1). Fresh reads, after W2: the victims' producers
  // pair with them. (The strategy's victims, registered by SetThieves, are the groups
  // in our victims_; the notifier's last-searcher look reads the same set.)
  if (!strategy_.VictimsMayHaveStealable()) return {false, std::chrono::nanoseconds(0)};
  if (searched && fruitless_steals_ < kMaxFruitlessSteals) {
    return {true, std::chrono::nanoseconds(0)};
  }
  return {false, kStuckVictimRecheck};
}

void IdlePath::SleepOnSlot(std::chrono::nanoseconds limit, std::int64_t until_ns) {
  notifier_.CountSleep(worker_, /*spurious=*/slept_since_work_);
  Trace(TraceKind::kSleep, group_->index(), 0, static_cast<std::uint32_t>(worker_));
  SleepOnSlotUntraced(limit, until_ns);
  Trace(TraceKind::kSleepEnd, group_->index(), 0, static_cast<std::uint32_t>(worker_));
}

void IdlePath::SleepOnSlotUntraced(std::chrono::nanoseconds limit, std::int64_t until_ns) {
  slept_since_work_ = true;
  MonotonicDeadline deadline = limit.count() == 0 ? MonotonicDeadline::None() : MonotonicDeadline::In(limit);
  if (until_ns < deadline.ns()) deadline = MonotonicDeadline::AtNs(until_ns);
  WaitSlot& slot = notifier_.slot(worker_);
  // While the group's poller has descriptors registered and its token is free, we
  // sleep in the poller instead (WaitSlot::WaitPolling): to the notifier that is the
  // same sleep, woken by the same Wake().
  GroupPoller* poller = strategy_.poller();
  if (poller != nullptr && poller->HasInterest() && poller->TryAcquireOrMarkWanted()) {
    slot.WaitPolling(poller, deadline);
    const bool wanted = poller->Release();
    // Leaving the poller with descriptors registered: the fibers we dispatched (or the
    // work we were woken for) are about to run here, and our siblings may all sleep on
    // their futexes. One of them takes the duty over (after our EndSleep).
    hand_off_pending_ = wanted || (!strategy_.stopping() && poller->HasInterest());
    return;
  }
  slot.Wait(deadline);
}

}  // namespace spindle::internal
