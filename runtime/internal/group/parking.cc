// Copyright 2026 The Spindle Authors.
//
// Entries. A strategy queues words (fiber_desc.h): a new fiber's FiberDesc (no stack
// yet; Instantiate() takes one on the worker that runs it, so stacks are taken and
// returned on the same thread) or a Ready FiberEntity. MakeRunning() turns a taken
// entry into a Running fiber of its group; a fiber stolen from another group (or
// adopted on a wake-up, SchedulingGroup::AdoptsOnWake) becomes that group's there, so
// every later YieldFiber(), and ResumeFiber() but for another adoption, queues it there.
//
// Parking. A fiber parks (ParkFiber) while holding its own scheduler lock; the context
// it switches to releases the lock in its landing hook (FiberEntity::SwitchTo, inlined
// here as SwitchToInline: fiber_switch.h).
// ResumeFiber() takes that lock first, so it cannot queue the fiber before its
// registers are saved.
//
// Yielding. YieldFiber and DispatchFiber queue the fiber they leave before the switch,
// holding its scheduler lock, which the landing hook releases, as a park does. Whoever
// takes the entry meanwhile (a sibling, a thief) waits for that lock in MakeRunning
// (TakeOver takes it before it touches the fiber), so it cannot run the fiber before its
// registers are saved. The wait cannot deadlock: see "Lock waits" below. (Made by the
// landing hook itself, the push would cost a second indirect call and a detour per
// yield.) The push is a producer's like any other, with the strategy's wake-up
// decision (P1-P4 under v1). Waking nobody, on the argument that the yielding worker is
// busy and comes back to the queue, holds only once the fiber it switched to stops
// running. A partner fiber yields, its worker takes the waiter fiber and re-queues the
// partner, the waiter spins until the partner has run, and the other worker sleeps:
// stranded (tests/scheduler_stress_test.cc, PartnerThatYieldsAlwaysGetsAWorkerBack). A
// runnable fiber must never wait while a worker of its group is idle; the price is
// P1's fence per yield.
//
// The swap (SwapToNext, v2 only). Where v2 would take the next fiber from the worker's
// local queue, the yielder is made Ready under its lock first, pushed to that queue's
// tail, and the oldest entry popped after: the queue never looks emptier than before,
// so no sibling can look in between and sleep, and the swap needs no Notify(), no
// fence (StrategyV2::SwapOnYield, SW1-SW2; strategy_v2_model_test). Its price: the
// yielder holds its lock while it waits for the next fiber's, which SwapToNext shows
// cannot close a cycle. Elsewhere (runnext, an inbox, TK1's round, v1, relaxed) a yield
// takes the general path above.
//
// Lock waits. A thread waits for a fiber's scheduler lock while it holds another in two
// places only: ParkFiber (its own, while it makes its next fiber Running) and the swap
// (likewise). A parker's lock is waited for only by wakers and the fiber dump, which
// hold no other fiber's lock meanwhile (a parker is in no queue, so no taker waits for
// it). A general-path yielder or a dispatcher holds its own lock between its push and
// its switch and waits for nothing then (it made its next fiber Running before it took
// its own). What is left is swappers waiting for swappers, which cannot close a cycle
// (SwapToNext).

#include "runtime/internal/group/parking.h"

#include <mutex>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/fiber_switch.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/group/group_chaos.h"
#include "runtime/internal/group/group_stats.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/base/os_lock_check.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/internal/strategies/strategy_v2.h"

namespace spindle::internal {
namespace {

constexpr std::size_t kNoWorker = SchedulingGroup::kNoWorker;

void ReclaimFiber(FiberEntity* dead) {
  // Its group and worker: where it ran last, a group of the pool it started in.
  SchedulingGroup* group = dead->scheduling_group;
  const std::size_t worker = dead->scheduling_worker;
  Trace(TraceKind::kExit, dead->id);
  const Stack stack = DestroyFiberEntity(dead);
  StackCache::ForStack(stack).Put(stack);
  CountFiberFinished();
  group->stats().CountEnded(worker);  // Instantiate() gave it a group
  if (PoolAdmission* admission = group->admission()) admission->Release();
}

// Gives `desc` a stack on the calling thread, worker `worker` of `group` (or kNoWorker:
// not one of its workers).
// A stack for `desc`: the one its start reserved, else one from this thread's cache.
__attribute__((noinline)) Stack TakeReservedStack(FiberDesc* desc) {
  StackCache& cache = StackCache::ForThisThread(desc->stack_class);
  const Stack stack = UnpackStack(desc->reserved_stack, cache.allocator()->stack_size());
  desc->reserved_stack = 0;
  return stack;
}

FiberEntity* Instantiate(SchedulingGroup* group, FiberDesc* desc, std::size_t worker) {
  FiberEntity* fiber = InstantiateFiberEntity(
      __builtin_expect(desc->reserved_stack != 0, 0)
          ? TakeReservedStack(desc)
          : StackCache::ForThisThread(desc->stack_class).Get(),
      std::move(desc->start_proc), desc->id);
  if (desc->hooks != nullptr) {
    fiber->exit_barrier_hook = desc->hooks->on_exit;
    fiber->exit_barrier_arg = desc;  // its owner outlives the fiber's exit
  }
  fiber->scheduling_group = group;
  fiber->scheduling_group_local = desc->scheduling_group_local;
  fiber->reclaim = &ReclaimFiber;
  group->stats().CountBegun(worker);
  FreeFiberDesc(desc);
  return fiber;
}

// MakeRunning()'s last step, once the fiber is known: ours, on `worker` (kNoWorker:
// not one of our workers), Running. `stamp`: its readiness stamp (0: not sampled).
__attribute__((always_inline)) inline FiberEntity* TakeOver(SchedulingGroup* group,
                                                            FiberEntity* fiber,
                                                            std::size_t worker,
                                                            std::uint64_t stamp) {
  if (worker != kNoWorker) group->stats().NoteRun(worker, stamp);
  // A fiber that yielded is queued before it switched out, holding this lock until its
  // registers are saved (see "Yielding" at the top): wait for it before touching it.
  SpinlockGuard lock(fiber->scheduler_lock);
  // A fiber may have been stolen from another group: it belongs to ours from now on.
  // Plain writes: we took its entry, so no one else makes it Running; whoever reads
  // them next is ordered after us through this lock or the switch to it.
  fiber->scheduling_group = group;
  fiber->scheduling_worker = static_cast<std::uint32_t>(worker);
  fiber->TransitionJustLocked<FiberState::kReady, FiberState::kRunning>();
  return fiber;
}

// MakeRunning() with its common case inline: a Ready fiber (not a new one) whose
// readiness was not sampled (a call and the general path would be paid on every
// switch). `worker` is the switching fiber's, one of ours.
__attribute__((always_inline)) inline FiberEntity* MakeRunningOnSwitch(SchedulingGroup* group,
                                                                       std::uintptr_t entry,
                                                                       std::size_t worker) {
  if (__builtin_expect(IsDescEntry(entry), 0)) return MakeRunning(group, entry, worker);
  FiberEntity* fiber = DecodeFiber(entry);
  if (__builtin_expect(fiber->ready_stamp != 0, 0)) return MakeRunning(group, entry, worker);
  return TakeOver(group, fiber, worker, 0);
}

// The next Ready fiber for `self`, which leaves its worker (Yield, Park), made Running;
// nullptr if none. Inlined into both (a call here would be paid on every switch).
// kChaos: chaos mode's decisions are on (ChaosDecides(), fixed for a runtime's
// life; the callers look once per switch, not once per step). True only in builds with
// the test seams.
template <bool kChaos>
__attribute__((always_inline)) inline FiberEntity* TakeNextForSwitch(FiberEntity* self) {
  // self is Running here, on the worker MakeRunning() recorded.
  SchedulingGroup* group = self->scheduling_group;
  const std::size_t worker = self->scheduling_worker;
  std::uintptr_t entry = group->strategy()->TakeNext(worker);
  if (entry == 0) return nullptr;
  if constexpr (kChaos) entry = ChaosPick(group, entry, worker);
  return MakeRunningOnSwitch(group, entry, worker);
}

// The landing hook of Park, Yield and Dispatch. Not analysed: releases the scheduler
// lock that the fiber switched out took before the switch.
void UnlockFiber(void* fiber) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<FiberEntity*>(fiber)->scheduler_lock.unlock();
}

// Yield's and Dispatch's push of `self`, Ready, which holds its scheduler lock and has
// not switched out yet (see "Yielding" at the top): a producer's push like any other,
// with its wake-up. We run on the worker self ran on, which it recorded when it was made
// Running (none: a test's plain thread, a foreign producer). Nothing of self is read
// after the push: a taker may write its scheduling fields once it holds the lock.
// The caller has stamped self's readiness (written before the push, which orders it
// for the taker).
template <bool kChaos>
__attribute__((always_inline)) inline void RequeueBeforeSwitch(FiberEntity* self) {
  SchedulingGroup* group = self->scheduling_group;
  const std::size_t worker = self->scheduling_worker;
  const bool group_local = self->scheduling_group_local;
  if constexpr (kChaos) {
    ChaosQueue(group, EncodeEntry(self), group_local, ReadyReason::kYielded, worker,
               /*foreign=*/worker >= group->size());
    ChaosPause();  // queued but not yet switched out: a taker spins on our lock meanwhile
  } else {
    group->strategy()->Enqueue(EncodeEntry(self), !group_local, ReadyReason::kYielded, worker);
  }
}

// Yield's switch to the next ready fiber, if any (kChaos: chaos mode's decisions). Not
// analysed: takes self's scheduler lock for the landing hook to release on the other
// side of the switch, a hand-over the thread-safety analysis cannot follow.
template <bool kChaos>
__attribute__((always_inline)) inline void SwitchToNext(FiberEntity* self, std::uint64_t tick)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  // Taken and made Running before self's lock is taken: the yielder holds no lock while
  // it waits for next's (see "Yielding" at the top).
  FiberEntity* next = TakeNextForSwitch<kChaos>(self);
  if (next == nullptr) {  // nothing else is ready: keep running
    self->scheduling_group->stats().NoteKeptRunning(self->scheduling_worker);
    return;
  }
  self->scheduler_lock.lock();
  self->TransitionJustLocked<FiberState::kRunning, FiberState::kReady>();
  GroupStats::StampReadyAtTick(tick, self);
  RequeueBeforeSwitch<kChaos>(self);
  self->SwitchToInline(next, LandingHook{&UnlockFiber, self});
}

// Yield's swap, where the strategy has one (v2) and it applies now
// (StrategyV2::SwapApplies, SwapOnYield): self is made Ready under its lock first, then
// queued and the next entry taken in one step with no wake-up, then that entry is made
// Running while self's lock is still held.
// Returns false, having changed nothing, where the swap does not apply. Not analysed:
// takes self's scheduler lock for the landing hook to release, as SwitchToNext.
//
// Waiting for next's lock while holding self's cannot deadlock ("Lock waits" above
// leaves only swappers waiting for swappers). A swapper waits for the entry it popped
// from its own worker's local queue, put there by its own thread before this swap
// began (the swap's own push is self). For X to wait for Y, Y's entry was pushed (by
// Y's swap, at p(Y)) before X's thread took it (by a steal, into its own queue) before
// X's swap began, before p(X): p(Y) < p(X). Around a cycle, p(X) < p(X).
__attribute__((always_inline)) inline bool SwapToNext(FiberEntity* self, std::uint64_t tick)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  SchedulingGroup* group = self->scheduling_group;
  StrategyV2* strategy = group->strategy_v2();  // the one strategy with a swap
  if (strategy == nullptr) return false;
  const std::size_t worker = self->scheduling_worker;
  // Checked before the lock: a yield the swap does not apply to (runnext, an inbox,
  // TK1's round, nothing else queued) pays nothing for it.
  StrategyV2::Worker* queues = strategy->SwapApplies(worker);
  if (queues == nullptr) return false;
  self->scheduler_lock.lock();
  self->TransitionJustLocked<FiberState::kRunning, FiberState::kReady>();
  // Written before the push, which orders it for the taker.
  GroupStats::StampReadyAtTick(tick, self);
  const std::uintptr_t me = EncodeEntry(self);
  const std::uintptr_t entry = strategy->SwapOnYield(*queues, me);
  // Queued but not switched out: a taker spins on our lock meanwhile.
  ChaosPause();
  if (__builtin_expect(entry == me, 0)) {
    // Taken back (thieves took the rest meanwhile): Running again, as if nothing had
    // happened.
    self->ready_stamp = 0;
    self->TransitionJustLocked<FiberState::kReady, FiberState::kRunning>();
    self->scheduler_lock.unlock();
    group->stats().NoteKeptRunning(worker);
    return true;
  }
  // 0: a sibling took self too, and waits for our lock: leave for the worker's own
  // loop, which holds no lock (so no cycle of lock waits either way).
  FiberEntity* next =
      entry != 0 ? MakeRunningOnSwitch(group, entry, worker) : GetMasterFiberEntity();
  self->SwitchToInline(next, LandingHook{&UnlockFiber, self});
  return true;
}

}  // namespace

// Yield under chaos mode's decisions: out of line and cold, off the plain path.
// Declared always, defined only in builds with the test seams (as group_chaos.h's).
__attribute__((noinline, cold)) void ChaosYield(FiberEntity* self, std::uint64_t tick);
#if SPINDLE_HAS_TEST_SEAMS
void ChaosYield(FiberEntity* self, std::uint64_t tick) {
  // Half the time the swap, so that chaos runs cover both paths.
  if (ChaosOneIn(2) && SwapToNext(self, tick)) return;
  SwitchToNext<true>(self, tick);
}
#endif

FiberEntity* MakeRunning(SchedulingGroup* group, std::uintptr_t entry, std::size_t worker) {
  // The readiness stamp (written before the push, which our pop is ordered after).
  std::uint64_t stamp;
  FiberEntity* fiber;
  if (IsDescEntry(entry)) {
    FiberDesc* desc = DecodeDesc(entry);
    stamp = desc->ready_stamp;
    fiber = Instantiate(group, desc, worker);
  } else {
    fiber = DecodeFiber(entry);
    stamp = fiber->ready_stamp;
    if (stamp != 0) fiber->ready_stamp = 0;  // written only when sampled (StampReady)
  }
  TakeOver(group, fiber, worker, stamp);
  // The scheduling trace (trace.h): a run begins (counted with fibers_run, in
  // TakeOver()). Only here, not on the inline path (MakeRunningOnSwitch()): while a
  // trace records every readiness is stamped, so every run comes this way
  // (GroupStats::SampleEveryReadinessForTrace).
  Trace(TraceKind::kRun, fiber->id, group->index(), static_cast<std::uint32_t>(worker));
  return fiber;
}

// noinline, as ParkFiber: each inlines its switch (fiber_switch.h), and a function that
// inlined both would switch twice (ParkFiber's chaos yield).
__attribute__((noinline)) void YieldFiber(FiberEntity* self) {
  CheckNoOsMutexHeld(self->id, "yield");  // even when nothing else is ready
  // A fiber yields on a worker of its group (MakeRunning() recorded which): the
  // strategies index their per-worker queues with it.
  DCHECK_LT(self->scheduling_worker, self->scheduling_group->size());
  BusyPoll& busy_poll = self->scheduling_group->busy_poll();
  // One count per yield, for the busy poll and for the readiness sample.
  const std::uint64_t tick = busy_poll.Tick(self->scheduling_worker);
  if (busy_poll.DueAtTick(self->scheduling_worker, tick)) {
    // No lock is held here: poll and fire in place (the fibers they ready queue behind
    // us, or in the workers' timer inboxes).
    busy_poll.PollAndFireIfDue(self->scheduling_worker);
  }
  // One look at chaos mode for the pick and the re-queue (two would cost every yield).
  if constexpr (kTestSeams) {
    if (__builtin_expect(ChaosDecides(), 0)) return ChaosYield(self, tick);
  }
  if (SwapToNext(self, tick)) return;
  SwitchToNext<false>(self, tick);
}

__attribute__((noinline)) void ParkFiber(FiberEntity* self,
                                         std::unique_lock<Spinlock> self_lock) {
  CheckNoOsMutexHeld(self->id, "park");
  CHECK(self_lock.owns_lock() && self_lock.mutex() == &self->scheduler_lock)
      << "ParkFiber() needs the fiber's own scheduler lock";
  self->SetState(FiberState::kWaiting);
  Trace(TraceKind::kPark, self->id, 0, static_cast<std::uint32_t>(self->wait_kind));
  self_lock.release();  // unlocked by the landing hook below
  // A busy poll is due: we hold our own lock, which dispatching could need (our own
  // IO wait), so go through the worker's idle path, which polls first.
  FiberEntity* next = nullptr;
  if (!self->scheduling_group->busy_poll().Due(self->scheduling_worker)) {
    if constexpr (kTestSeams) {
      next = ChaosDecides() ? TakeNextForSwitch<true>(self) : TakeNextForSwitch<false>(self);
    } else {
      next = TakeNextForSwitch<false>(self);
    }
  }
  FiberEntity* target = next != nullptr ? next : GetMasterFiberEntity();
  ChaosPause();  // Waiting but not yet switched out: a waker spins on our lock meanwhile
  // The hook releases the lock self_lock held (released above).
  self->SwitchToInline(target, LandingHook{&UnlockFiber, self});
  // D3 (chaos.h): back from the park, holding no lock (a park is allowed only there),
  // sometimes yield at once. We may have moved to another group meanwhile.
  if constexpr (kTestSeams) {
    if (ChaosDecides() && self->scheduling_worker < self->scheduling_group->size() &&
        ChaosOneIn(8)) {
      ChaosCount(ChaosEvent::kForcedYield);
      YieldFiber(self);
    }
  }
}

// Not analysed: takes self's scheduler lock for the landing hook (UnlockFiber) on the
// other side of the switch to release.
void DispatchFiber(FiberEntity* self, FiberDesc* desc) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CheckNoOsMutexHeld(self->id, "dispatch");
  SchedulingGroup* group = self->scheduling_group;
  // Runs now, so nobody may run it inline later. relaxed: the only possible joiner is
  // the caller's own handle, which this fiber creates after we return.
  if (desc->claim != nullptr) desc->claim->store(true, std::memory_order_relaxed);
  // self runs on its worker of its group (LaunchFiber dispatches only into self's
  // group), so that worker's cells are this thread's.
  group->stats().CountStarted(self->scheduling_worker, 1);
  Trace(TraceKind::kSpawn, self->id, desc->id);
  group->CountAdmission(desc);
  desc->ready_stamp = 0;  // runs at once: no ready-to-run wait to measure
  // A fiber made Running on this worker, as NoteRun counts every other (the hog
  // monitor's progress, GroupStats::RunProgress, must move with it).
  group->stats().NoteRun(self->scheduling_worker, 0);
  FiberEntity* next = Instantiate(group, desc, self->scheduling_worker);
  next->scheduling_worker = self->scheduling_worker;  // runs on self's worker
  {
    std::lock_guard<Spinlock> lock(next->scheduler_lock);
    next->SetState(FiberState::kRunning);
  }
  Trace(TraceKind::kRun, next->id, group->index(),
        static_cast<std::uint32_t>(self->scheduling_worker));
  // next was made Running before self's lock is taken (see "Yielding" at the top).
  self->scheduler_lock.lock();
  self->TransitionJustLocked<FiberState::kRunning, FiberState::kReady>();
  bool chaos = false;
  if constexpr (kTestSeams) chaos = ChaosDecides();
  group->stats().StampReadyOn(self->scheduling_worker, self);
  if (chaos) {
    RequeueBeforeSwitch<kTestSeams>(self);
  } else {
    RequeueBeforeSwitch<false>(self);
  }
  self->SwitchTo(next, LandingHook{&UnlockFiber, self});
}

}  // namespace spindle::internal
