// Copyright 2026 The Spindle Authors.
//
// The strategy-neutral face of a scheduling group. The strategies' protocols are at the
// top of strategy_v1.cc and strategy_v2.cc; what is here is the same for both.
//
// Entries. A strategy queues words (fiber_desc.h): a new fiber's FiberDesc (no stack
// yet; Instantiate() takes one on the worker that runs it, so stacks are taken and
// returned on the same thread) or a Ready FiberEntity. MakeRunning() turns a taken
// entry into a Running fiber of this group; a fiber stolen from another group becomes
// ours there, so every later Resume()/Yield() queues it here.
//
// Parking. A fiber parks (Halt) while holding its own scheduler lock; the context it
// switches to releases the lock in its landing hook (FiberEntity::SwitchTo). Resume()
// takes that lock first, so it cannot queue the fiber before its registers are saved.
// Yield and Dispatch queue the fiber they leave from a landing hook for the same reason,
// and that push is a producer's like any other, with the strategy's wake-up decision
// (P1-P4 under v1). It used to wake nobody, on the
// argument that the yielding worker is busy and comes back to the queue: true only once
// the fiber it switched to stops running. A partner fiber yields, its worker takes the
// waiter fiber and re-queues the partner, the waiter spins until the partner has run,
// and the other worker sleeps: stranded (tests/scheduler_stress_test.cc,
// PartnerThatYieldsAlwaysGetsAWorkerBack, failed in 2 runs of 2 that way). A runnable
// fiber must never wait while a worker of its group is idle; the price is P1's fence
// per yield.


#include "runtime/internal/scheduling_group.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"
#include "runtime/internal/chaos.h"
#include "runtime/internal/foreign_producers.h"
#include "runtime/internal/group_chaos.h"
#include "runtime/internal/live_fibers.h"
#include "runtime/internal/os_lock_check.h"
#include "runtime/internal/strategy_registry.h"
#include "runtime/internal/test_seams.h"

namespace spindle::internal {
namespace {

// Which worker of which group this thread is (none on other threads). Read through the
// switch-safe accessor: a fiber may resume on another worker, so no read may be cached
// across a switch. The hot paths (yield, park, taking a fiber) do not read it: they know
// their worker (FiberEntity::scheduling_worker, or the caller's argument).
struct BoundWorker {
  const SchedulingGroup* group = nullptr;
  std::size_t index = SchedulingGroup::kNoWorker;
};
thread_local BoundWorker tls_bound_worker;
SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(BoundWorker, tls_bound_worker, BoundWorkerSlot)

void ReclaimFiber(FiberEntity* dead) {
  const Stack stack = DestroyFiberEntity(dead);
  StackCache::ForStack(stack).Put(stack);
  CountFiberFinished();
}

std::unique_ptr<SchedulingStrategy> MakeStrategy(const SchedulingGroupOptions& options) {
  const StrategyEntry* entry = FindStrategy(options.strategy);
  CHECK(entry != nullptr) << ValidateSchedulingStrategy(options.strategy);
  return entry->create(options);
}

}  // namespace

SchedulingGroup::SchedulingGroup(const SchedulingGroupOptions& options)
    : options_(options), stats_(options.workers) {
  CHECK(options.workers >= 1 && options.workers <= kMaxWorkers)
      << "a scheduling group has 1 to " << kMaxWorkers << " workers, not "
      << options.workers;
  strategy_ = MakeStrategy(options);
}

SchedulingGroup::~SchedulingGroup() {
  // Every queue is empty (checked below), so each pending descriptor has lost its queue
  // reference: ours is the last. Freed here, on the thread that ends the runtime, not
  // at a worker's exit: freeing runs the exit hook's destructors, which may use that
  // thread's caches, already gone while its thread_local objects are destroyed.
  for (WorkerState& state : worker_state_) {
    for (auto& [group, desc] : state.pending_take_backs) ReleaseRunInlineDesc(desc);
  }
  CHECK(strategy_->UnsafeEmpty())
      << "scheduling group " << index() << " destroyed with fibers still queued";
}

void* SchedulingGroup::operator new(std::size_t size, int numa_node) {
  return AllocateOnNode(size, numa_node);  // page-aligned, so alignas(64) holds
}

void SchedulingGroup::operator delete(void* pointer, std::size_t size) {
  FreeOnNode(pointer, size);
}

void SchedulingGroup::operator delete(void* pointer, int) {
  FreeOnNode(pointer, sizeof(SchedulingGroup));
}

void SchedulingGroup::BindWorkerThread(std::size_t worker) {
  CHECK(worker == kNoWorker || worker < options_.workers) << "no worker " << worker;
  *BoundWorkerSlot() = worker == kNoWorker ? BoundWorker{} : BoundWorker{this, worker};
}

void SchedulingGroup::SetThieves(const std::vector<SchedulingGroup*>& thieves) {
  std::vector<SchedulingStrategy*> strategies;
  for (SchedulingGroup* thief : thieves) strategies.push_back(thief->strategy_.get());
  strategy_->SetThieves(std::move(strategies));
}

__attribute__((always_inline)) inline void SchedulingGroup::EnqueueFrom(
    std::size_t origin, bool foreign, std::uintptr_t entry, bool stealable,
    ReadyReason reason) {
  ForeignProducerScope scope(foreign);
  strategy_->Enqueue(entry, stealable, reason, origin);
}

void SchedulingGroup::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason reason) {
  // One read of the thread's binding serves both the count and the origin (a push is
  // a hot path).
  const BoundWorker bound = *BoundWorkerSlot();
  EnqueueFrom(bound.group == this ? bound.index : kNoWorker, bound.group == nullptr, entry,
              stealable, reason);
}

void SchedulingGroup::StartFiber(FiberDesc* desc) {
  // One read of the binding for the count, the origin and the foreign-producer count
  // (a call each cost spawn_join ~1.5%).
  const BoundWorker bound = *BoundWorkerSlot();
  const std::size_t origin = bound.group == this ? bound.index : kNoWorker;
  stats_.CountStarted(origin, 1);
  GroupStats::StampReady(desc);
  EnqueueFrom(origin, bound.group == nullptr, EncodeEntry(desc),
              !desc->scheduling_group_local,
              static_cast<ReadyReason>(desc->start_reason));
}

template <class T>
void SchedulingGroup::EnqueueMany(T* const* items, std::size_t n, bool timer_round) {
  const BoundWorker bound = *BoundWorkerSlot();
  ForeignProducerScope scope(bound.group == nullptr);
  const std::size_t origin = bound.group == this ? bound.index : kNoWorker;
  constexpr std::size_t kChunk = 64;
  std::uintptr_t entries[kChunk];
  bool stealable[kChunk];
  for (std::size_t done = 0; done < n; done += kChunk) {
    const std::size_t count = std::min(kChunk, n - done);
    for (std::size_t i = 0; i < count; ++i) {
      GroupStats::StampReady(items[done + i]);
      entries[i] = EncodeEntry(items[done + i]);
      stealable[i] = !items[done + i]->scheduling_group_local;
    }
    if (timer_round) {
      strategy_->EnqueueWoken(entries, stealable, count, origin);
    } else {
      strategy_->EnqueueBatch(entries, stealable, count, origin);
    }
  }
}

void SchedulingGroup::StartFibers(FiberDesc* const* descs, std::size_t n) {
  const BoundWorker bound = *BoundWorkerSlot();
  stats_.CountStarted(bound.group == this ? bound.index : kNoWorker, n);
  EnqueueMany(descs, n, /*timer_round=*/false);
}

void QueueReadyFibers(SchedulingGroup* group, FiberEntity* const* fibers, std::size_t n,
                      bool timer_round) {
  group->EnqueueMany(fibers, n, timer_round);
}

void ResumeFiber(FiberEntity* fiber) {
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kReady);
  }
  fiber->scheduling_group->QueueReady(fiber);
}

void QueueReadyFiber(FiberEntity* fiber) { fiber->scheduling_group->QueueReady(fiber); }

void ParkFiber(FiberEntity* self, std::unique_lock<Spinlock> self_lock) {
  self->scheduling_group->Halt(self, std::move(self_lock));
}

void YieldFiber(FiberEntity* self) { self->scheduling_group->Yield(self); }

void SchedulingGroup::QueueReady(FiberEntity* fiber) {
  if (std::vector<FiberEntity*>* batch = ThisThreadReadyBatch()) {
    batch->push_back(fiber);  // stamped when the batch is queued
    return;
  }
  GroupStats::StampReady(fiber);
  if constexpr (kTestSeams) {
    if (ChaosDecides()) {
      const BoundWorker bound = *BoundWorkerSlot();
      ChaosQueue(this, EncodeEntry(fiber), fiber->scheduling_group_local,
                 ReadyReason::kWoken, bound.group == this ? bound.index : kNoWorker,
                 bound.group == nullptr);
      return;
    }
  }
  Enqueue(EncodeEntry(fiber), !fiber->scheduling_group_local, ReadyReason::kWoken);
}

FiberEntity* SchedulingGroup::Instantiate(FiberDesc* desc, std::size_t worker) {
  FiberEntity* fiber = InstantiateFiberEntity(StackCache::ForThisThread(desc->stack_class).Get(),
                                              std::move(desc->start_proc), desc->id);
  fiber->exit_barrier_hook = std::move(desc->exit_hook);
  fiber->scheduling_group = this;
  fiber->scheduling_group_local = desc->scheduling_group_local;
  fiber->reclaim = &ReclaimFiber;
  stats_.CountBegun(worker);
  FreeFiberDesc(desc);
  return fiber;
}

void SchedulingGroup::PollAndFireFromIdle(std::size_t worker) {
  // With a poller, every pass looks at the clock, as a reactor's latency wants; for the
  // timers alone, only when Halt() found them due or every 64th pass (a clock read on
  // every fiber's exit cost spawn_join 25%).
  WorkerState& counters = worker_state_[worker];
  if (counters.poll_due || (++counters.switches & 63) == 0 ||
      strategy_->poller() != nullptr) {
    counters.poll_due = false;
    PollAndFireIfDue();
  }
}

void SchedulingGroup::EnsurePollerAwake() {
  GroupPoller* poller = strategy_->poller();
  // The token is free (nobody blocks in epoll_wait) although something is registered:
  // a sleeping worker, if any, becomes the poller; busy ones poll as they switch.
  if (poller != nullptr && poller->vacant() && poller->HasInterest()) {
    strategy_->WakeOneSleeper();
  }
}

bool SchedulingGroup::BusyPollDueSlow(std::size_t worker) {
  WorkerState& counters = worker_state_[worker];
  GroupPoller* poller = strategy_->poller();
  // acquire: pairs with SetTimers().
  GroupTimers* timers = timers_.load(std::memory_order_acquire);
  if (poller == nullptr && timers == nullptr) return false;
  const std::int64_t now = MonotonicNowNs();
  counters.poll_due = (poller != nullptr && poller->PollDue(now)) ||
                      (timers != nullptr && timers->Due(now));
  return counters.poll_due;
}

void SchedulingGroup::PollAndFireIfDue() {
  GroupPoller* poller = strategy_->poller();
  // acquire: pairs with SetTimers().
  GroupTimers* timers = timers_.load(std::memory_order_acquire);
  if (poller == nullptr && timers == nullptr) return;
  const std::int64_t now = MonotonicNowNs();
  if (poller != nullptr && poller->PollDue(now) && poller->PollNow(now)) {
    strategy_->WakeOneSleeper();
  }
  // The fibers it wakes are queued as a timer round (ReadyBatch), like the TimerWorker's.
  if (timers != nullptr && timers->Due(now)) timers->FireDue(now);
}

std::uintptr_t SchedulingGroup::StealEntryFrom(SchedulingGroup* victim) {
  const std::uintptr_t entry = victim->strategy_->Steal();
  if (entry == 0) return 0;
  // relaxed: statistics.
  victim->stats_.CountStealOut();
  stats_.CountStealIn(victim->numa_node() == numa_node());
  return entry;
}

FiberEntity* SchedulingGroup::MakeRunning(std::uintptr_t entry, std::size_t worker) {
  // The readiness stamp (written before the push, which our pop is ordered after).
  std::uint64_t stamp;
  FiberEntity* fiber;
  if (IsDescEntry(entry)) {
    FiberDesc* desc = DecodeDesc(entry);
    stamp = desc->ready_stamp;
    fiber = Instantiate(desc, worker);
  } else {
    fiber = DecodeFiber(entry);
    stamp = fiber->ready_stamp;
    if (stamp != 0) fiber->ready_stamp = 0;  // written only when sampled (StampReady)
  }
  // A fiber may have been stolen from another group: it belongs to ours from now on.
  // Plain write: the fiber is not running and no one else holds it (we took its entry);
  // whoever reads it next is ordered after us through the scheduler lock below.
  fiber->scheduling_group = this;
  fiber->scheduling_worker = static_cast<std::uint32_t>(worker);
  if (worker != kNoWorker) stats_.NoteRun(worker, stamp);
  std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
  fiber->SetState(FiberState::kRunning);
  return fiber;
}

// Inlined into Yield and Halt (a call here cost yield 15 instructions per switch).
// kChaos: chaos mode's decisions are on (ChaosDecides(), fixed for a runtime's life;
// the callers look once per switch, not once per step). True only in builds with the
// test seams.
template <bool kChaos>
__attribute__((always_inline)) inline FiberEntity* SchedulingGroup::TakeNextForSwitch(
    FiberEntity* self) {
  // self is Running here, on the worker MakeRunning() recorded.
  const std::size_t worker = self->scheduling_worker;
  std::uintptr_t entry = strategy_->TakeNext(worker);
  if (entry == 0) return nullptr;
  if constexpr (kChaos) entry = ChaosPick(this, entry, worker);
  return MakeRunning(entry, worker);
}

template <bool kChaos>
void SchedulingGroup::UnlockAndRequeue(void* arg) {
  auto* fiber = static_cast<FiberEntity*>(arg);
  fiber->scheduler_lock.unlock();
  GroupStats::StampReady(fiber);  // ours until queued: Ready, and no queue holds it yet
  // A producer's push like any other, with its wake-up (see "Parking" at the top). We
  // run on the worker the fiber left, which it recorded when it was made Running.
  if constexpr (kChaos) {
    ChaosQueue(fiber->scheduling_group, EncodeEntry(fiber), fiber->scheduling_group_local,
               ReadyReason::kYielded, fiber->scheduling_worker,
               BoundWorkerSlot()->group == nullptr);
  } else {
    fiber->scheduling_group->strategy_->Enqueue(EncodeEntry(fiber),
                                                !fiber->scheduling_group_local,
                                                ReadyReason::kYielded,
                                                fiber->scheduling_worker);
  }
}

void SchedulingGroup::Yield(FiberEntity* self) {
  CheckNoOsMutexHeld(self->id, "yield");  // even when nothing else is ready
  if (BusyPollDue(self->scheduling_worker)) {
    // No lock is held here: poll and fire in place (the fibers they ready queue behind
    // us, or in the workers' timer inboxes).
    PollAndFireIfDue();
  }
  // One look at chaos mode for the pick and the re-queue (two cost yield 1%).
  if constexpr (kTestSeams) {
    if (__builtin_expect(ChaosDecides(), 0)) return ChaosYield(self);
  }
  SwitchToNext<false>(self);
}

template <bool kChaos>
__attribute__((always_inline)) inline void SchedulingGroup::SwitchToNext(FiberEntity* self) {
  FiberEntity* next = TakeNextForSwitch<kChaos>(self);
  if (next == nullptr) return;  // nothing else is ready: keep running
  self->scheduler_lock.lock();
  self->SetState(FiberState::kReady);
  // Re-queued by the landing hook, once self is saved.
  self->SwitchTo(next, LandingHook{&UnlockAndRequeue<kChaos>, self});
}

void SchedulingGroup::Halt(FiberEntity* self, std::unique_lock<Spinlock> self_lock) {
  CheckNoOsMutexHeld(self->id, "park");
  CHECK(self_lock.owns_lock() && self_lock.mutex() == &self->scheduler_lock)
      << "Halt() needs the fiber's own scheduler lock";
  self->SetState(FiberState::kWaiting);
  self_lock.release();  // unlocked by the landing hook below
  // A busy poll is due: we hold our own lock, which dispatching could need (our own
  // IO wait), so go through the worker's idle path, which polls first.
  FiberEntity* next = nullptr;
  if (!BusyPollDue(self->scheduling_worker)) {
    if constexpr (kTestSeams) {
      next = ChaosDecides() ? TakeNextForSwitch<true>(self) : TakeNextForSwitch<false>(self);
    } else {
      next = TakeNextForSwitch<false>(self);
    }
  }
  FiberEntity* target = next != nullptr ? next : GetMasterFiberEntity();
  ChaosPause();  // Waiting but not yet switched out: a waker spins on our lock meanwhile
  // Not analysed: the hook releases the lock self_lock held (released above).
  self->SwitchTo(target, LandingHook{[](void* fiber) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                       static_cast<FiberEntity*>(fiber)
                                           ->scheduler_lock.unlock();
                                     },
                                     self});
  // D3 (chaos.h): back from the park, holding no lock (a park is allowed only there),
  // sometimes yield at once. We may have moved to another group meanwhile.
  if constexpr (kTestSeams) {
    if (ChaosDecides() &&
        self->scheduling_worker < self->scheduling_group->options_.workers &&
        ChaosOneIn(8)) {
      ChaosCount(ChaosEvent::kForcedYield);
      YieldFiber(self);
    }
  }
}

// Chaos mode's decisions exist only with the test seams (test_seams.h).
#if SPINDLE_HAS_TEST_SEAMS
void SchedulingGroup::ChaosYield(FiberEntity* self) { SwitchToNext<true>(self); }
#endif  // SPINDLE_HAS_TEST_SEAMS

// Not analysed: takes self's scheduler lock for the landing hook (UnlockAndRequeue) on
// the other side of the switch to release.
void SchedulingGroup::Dispatch(FiberEntity* self, FiberDesc* desc)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CheckNoOsMutexHeld(self->id, "dispatch");
  // Runs now, so nobody may run it inline later. relaxed: the only possible joiner is
  // the caller's own handle, which this fiber creates after we return.
  if (desc->claim != nullptr) desc->claim->store(true, std::memory_order_relaxed);
  // self runs on its worker of this group (LaunchFiber dispatches only into self's
  // group), so that worker's cells are this thread's.
  stats_.CountStarted(self->scheduling_worker, 1);
  desc->ready_stamp = 0;  // runs at once: no ready-to-run wait to measure
  FiberEntity* next = Instantiate(desc, self->scheduling_worker);
  next->scheduling_worker = self->scheduling_worker;  // runs on self's worker
  {
    std::lock_guard<Spinlock> lock(next->scheduler_lock);
    next->SetState(FiberState::kRunning);
  }
  self->scheduler_lock.lock();
  self->SetState(FiberState::kReady);
  void (*requeue)(void*) = &UnlockAndRequeue<false>;
  if constexpr (kTestSeams) {
    if (ChaosDecides()) requeue = &UnlockAndRequeue<true>;
  }
  self->SwitchTo(next, LandingHook{requeue, self});
}

}  // namespace spindle::internal
