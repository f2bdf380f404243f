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
//
// Dead entries. join() on a child that has not started runs it inline (Fiber::join()
// wins FiberDesc::claim), but the child's descriptor is still queued; whoever takes it
// drops it (ClaimEntry). A fiber that fans out and joins in a loop without parking left
// one such entry per child: on one worker nobody took them, and they filled the queue
// (65,536 entries within a second), after which plain-thread producers waited for room
// that never came. Now the joiner takes its child back (TakeBackRunInline): where the
// entry is the next to leave a queue the joiner may take from, it removes it (a value
// compare and one CAS; SchedulingStrategy::TakeBack). Children are queued in start
// order and usually joined in that order, so the child is usually at the front. If not
// (joined out of order, or behind another fiber), the worker keeps it in a short list
// and retries on its next inline join, when earlier entries may have left the front;
// the joiner's reference on the descriptor (run_inline_refs) keeps its address from
// being reused meanwhile, which is what makes the bare value compare safe. An entry a
// consumer takes first is dropped by that consumer. v2 also drops dead entries when a
// full local queue moves half of itself to the global queue, so what the list cannot
// reach costs at most one local queue.

#include "runtime/internal/scheduling_group.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"
#include "runtime/internal/chaos.h"
#include "runtime/internal/live_fibers.h"
#include "runtime/internal/os_lock_check.h"
#include "runtime/internal/ready_batch.h"
#include "runtime/internal/strategy_registry.h"
#include "runtime/internal/test_seams.h"

namespace spindle::internal {
namespace {

thread_local std::vector<FiberEntity*>* tls_ready_batch = nullptr;

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

// Producers running on threads that are no worker of any group (plain threads, the
// RunBlocking pool), between their push and the end of its wake-up. A fiber such a
// thread wakes may finish, and the runtime terminate, while that thread is still inside
// the strategy (waking a sleeper): TerminateRuntime() waits for this count to reach 0
// (WaitForForeignProducers) before it frees the groups. Workers are joined first and
// timer threads stopped first, so only these threads need counting.
//
// Why a count read after "no live fiber" sees every producer that matters: the
// increment is sequenced before the push, the push (release) before the worker's pop
// (acquire), which is before the fiber's finish, whose count Terminate reads with
// acquire before it reads this one; so that read finds the increment, or a later value.
std::atomic<std::size_t> g_foreign_producers{0};

class ForeignProducerScope {
 public:
  // `foreign`: the calling thread is no group's worker (BoundWorker::group null).
  explicit ForeignProducerScope(bool foreign) : foreign_(foreign) {
    // relaxed: ordered before the push, see above.
    if (foreign_) g_foreign_producers.fetch_add(1, std::memory_order_relaxed);
  }
  ~ForeignProducerScope() {
    // release: pairs with WaitForForeignProducers()'s acquire, so all this producer
    // did to the strategy happens before the runtime frees it.
    if (foreign_) g_foreign_producers.fetch_sub(1, std::memory_order_release);
  }
  ForeignProducerScope(const ForeignProducerScope&) = delete;
  ForeignProducerScope& operator=(const ForeignProducerScope&) = delete;

 private:
  const bool foreign_;
};

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

FiberDesc* NewFiberDesc(absl::AnyInvocable<void()> start_proc) {
  FiberDesc* desc = AllocateFiberDesc();
  desc->start_proc = std::move(start_proc);
  desc->id = NewFiberId();
  CountFiberStarted(1);
  return desc;
}

SchedulingGroup::SchedulingGroup(const SchedulingGroupOptions& options)
    : options_(options), nanos_per_tick_(CycleClockNanosPerTick()) {
  CHECK(options.workers >= 1 && options.workers <= kMaxWorkers)
      << "a scheduling group has 1 to " << kMaxWorkers << " workers, not "
      << options.workers;
  strategy_ = MakeStrategy(options);
}

SchedulingGroup::~SchedulingGroup() {
  // Every queue is empty (checked below), so each pending descriptor has lost its queue
  // reference: ours is the last.
  for (WorkerCounters& counters : worker_counters_) {
    for (auto& [group, desc] : counters.pending_take_backs) ReleaseRunInlineDesc(desc);
    counters.pending_take_backs.clear();
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
  CountOn(origin, &WorkerCounters::fibers_started, fibers_started_elsewhere_, 1);
  StampReady(desc);
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
      StampReady(items[done + i]);
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
  CountOn(bound.group == this ? bound.index : kNoWorker, &WorkerCounters::fibers_started,
          fibers_started_elsewhere_, n);
  EnqueueMany(descs, n, /*timer_round=*/false);
}

void SchedulingGroup::QueueReadyBatch(FiberEntity* const* fibers, std::size_t n) {
  EnqueueMany(fibers, n, /*timer_round=*/false);
}

void SchedulingGroup::QueueTimerRound(FiberEntity* const* fibers, std::size_t n) {
  EnqueueMany(fibers, n, /*timer_round=*/true);
}

void SchedulingGroup::Resume(FiberEntity* fiber) {
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kReady);
  }
  QueueReady(fiber);
}

void SchedulingGroup::QueueReady(FiberEntity* fiber) {
  if (tls_ready_batch != nullptr) {
    tls_ready_batch->push_back(fiber);  // stamped when the batch is queued
    return;
  }
  StampReady(fiber);
  if constexpr (kTestSeams) {
    if (ChaosDecides()) {
      const BoundWorker bound = *BoundWorkerSlot();
      ChaosQueue(EncodeEntry(fiber), fiber->scheduling_group_local, ReadyReason::kWoken,
                 bound.group == this ? bound.index : kNoWorker);
      return;
    }
  }
  Enqueue(EncodeEntry(fiber), !fiber->scheduling_group_local, ReadyReason::kWoken);
}

namespace {

// Where a thread's outermost ReadyBatch collects: one buffer per thread, kept with its
// capacity (a vector per batch cost a malloc per timer round, 272k of them in 500k
// sleeps).
std::vector<FiberEntity*>& ThisThreadReadyBuffer() {
  thread_local std::vector<FiberEntity*> buffer;
  return buffer;
}

}  // namespace

ReadyBatch::ReadyBatch(Source source) : source_(source) {
  if (tls_ready_batch == nullptr) {  // else the outer one collects
    tls_ready_batch = &ThisThreadReadyBuffer();
    outermost_ = true;
  }
}

ReadyBatch::~ReadyBatch() {
  if (!outermost_) return;  // nested: the outer scope flushes
  tls_ready_batch = nullptr;
  // Taken out of the thread's buffer while queued: a batch that the queueing opens
  // finds it empty, not in use.
  std::vector<FiberEntity*> fibers;
  fibers.swap(ThisThreadReadyBuffer());
  const auto queue = [this](SchedulingGroup* group, FiberEntity* const* first,
                            std::size_t n) {
    if (source_ == Source::kTimerRound) {
      group->QueueTimerRound(first, n);
    } else {
      group->QueueReadyBatch(first, n);
    }
  };
  // Usually all of one group: one batch, no partition (whose temporary buffer was a
  // malloc too).
  if (!fibers.empty()) {
    SchedulingGroup* group = fibers.front()->scheduling_group;
    if (std::all_of(fibers.begin(), fibers.end(),
                    [group](FiberEntity* f) { return f->scheduling_group == group; })) {
      queue(group, fibers.data(), fibers.size());
      fibers.clear();
    }
  }
  // Else each group's share as one batch.
  while (!fibers.empty()) {
    SchedulingGroup* group = fibers.front()->scheduling_group;
    auto split = std::stable_partition(fibers.begin(), fibers.end(), [group](FiberEntity* f) {
      return f->scheduling_group != group;
    });
    queue(group, &*split, static_cast<std::size_t>(fibers.end() - split));
    fibers.erase(split, fibers.end());
  }
  std::vector<FiberEntity*>& buffer = ThisThreadReadyBuffer();
  if (buffer.capacity() < fibers.capacity()) buffer.swap(fibers);
}

void WaitForForeignProducers() {
  // acquire: pairs with ForeignProducerScope's release. Such a producer is at most a
  // wake-up system call away from leaving.
  while (g_foreign_producers.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void ResumeFiber(FiberEntity* fiber) { fiber->scheduling_group->Resume(fiber); }
void QueueReadyFiber(FiberEntity* fiber) { fiber->scheduling_group->QueueReady(fiber); }
void ParkFiber(FiberEntity* self, std::unique_lock<Spinlock> self_lock) {
  self->scheduling_group->Halt(self, std::move(self_lock));
}
void YieldFiber(FiberEntity* self) { self->scheduling_group->Yield(self); }

FiberEntity* SchedulingGroup::Instantiate(FiberDesc* desc, std::size_t worker) {
  FiberEntity* fiber = InstantiateFiberEntity(StackCache::ForThisThread(desc->stack_class).Get(),
                                              std::move(desc->start_proc), desc->id);
  fiber->exit_barrier_hook = std::move(desc->exit_hook);
  fiber->scheduling_group = this;
  fiber->scheduling_group_local = desc->scheduling_group_local;
  fiber->reclaim = &ReclaimFiber;
  CountOn(worker, &WorkerCounters::fibers_begun, fibers_begun_elsewhere_, 1);
  FreeFiberDesc(desc);
  return fiber;
}

void SchedulingGroup::PollAndFireFromIdle(std::size_t worker) {
  // With a poller, every pass looks at the clock, as a reactor's latency wants; for the
  // timers alone, only when Halt() found them due or every 64th pass (a clock read on
  // every fiber's exit cost spawn_join 25%).
  WorkerCounters& counters = worker_counters_[worker];
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
  WorkerCounters& counters = worker_counters_[worker];
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
  victim->steals_out_.Add(1);
  (victim->numa_node() == numa_node() ? steals_in_same_node_ : steals_in_cross_node_).Add(1);
  return entry;
}

bool SchedulingGroup::ThisThreadSamplesReadiness() {
  thread_local std::uint32_t tick = 0;
  return (++tick & ReadySampleMask()) == 0;
}

std::atomic<std::uint32_t> SchedulingGroup::ready_sample_mask_{kDefaultReadySamplePeriod - 1};

void SchedulingGroup::SetReadySamplePeriod(std::uint32_t period) {
  CHECK(period >= 1 && (period & (period - 1)) == 0)
      << "ready-to-run sample period " << period << " is not a power of two";
  ready_sample_mask_.store(period - 1, std::memory_order_relaxed);  // see ReadySampleMask()
}

std::uint32_t SchedulingGroup::ReadySamplePeriod() { return ReadySampleMask() + 1; }

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
  if (worker != kNoWorker) {
    // Single writer (this worker's thread): no read-modify-write.
    WorkerCounters& counters = worker_counters_[worker];
    counters.fibers_run.Add(1);
    if (stamp != 0) {
      const std::uint64_t now = CycleClockNow();
      counters.ready_latency.Record(
          now > stamp ? static_cast<std::uint64_t>(static_cast<double>(now - stamp) *
                                                   nanos_per_tick_)
                      : 0);
    }
  }
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
  if constexpr (kChaos) entry = ChaosPick(entry, worker);
  return MakeRunning(entry, worker);
}

template <bool kChaos>
void SchedulingGroup::UnlockAndRequeue(void* arg) {
  auto* fiber = static_cast<FiberEntity*>(arg);
  fiber->scheduler_lock.unlock();
  StampReady(fiber);  // ours until queued: it is Ready and no queue holds it yet
  // A producer's push like any other, with its wake-up (see "Parking" at the top). We
  // run on the worker the fiber left, which it recorded when it was made Running.
  if constexpr (kChaos) {
    fiber->scheduling_group->ChaosQueue(EncodeEntry(fiber), fiber->scheduling_group_local,
                                        ReadyReason::kYielded,
                                        fiber->scheduling_worker);
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

std::uintptr_t SchedulingGroup::ChaosPick(std::uintptr_t entry, std::size_t worker) {
  if (worker >= options_.workers || !ChaosOneIn(2)) return entry;
  std::uintptr_t taken[4] = {entry};
  std::size_t n = 1;
  for (const std::size_t want = 2 + ChaosBelow(3); n < want; ++n) {
    taken[n] = strategy_->TakeNext(worker);  // claimed, like any taken entry
    if (taken[n] == 0) break;
  }
  if (n > 1) ChaosCount(ChaosEvent::kPick);
  for (std::size_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    std::swap(taken[i], taken[ChaosBelow(i + 1)]);
  }
  for (std::size_t i = 1; i < n; ++i) {
    if (IsDescEntry(taken[i])) {
      // Not begun: give the claim we won in TakeNext back before the entry is queued
      // again (release: whoever wins it next, a worker or the joiner running it inline,
      // sees what the starter published, as our acquiring claim did). It stays a
      // descriptor, without a stack: giving each one a stack here kept thousands of
      // queued fibers alive (ThreadSanitizer ran out of memory on a million fibers).
      FiberDesc* desc = DecodeDesc(taken[i]);
      if (desc->claim != nullptr) desc->claim->store(false, std::memory_order_release);
      ChaosQueue(taken[i], desc->scheduling_group_local, ReadyReason::kYielded, worker);
    } else {
      FiberEntity* fiber = DecodeFiber(taken[i]);
      ChaosQueue(taken[i], fiber->scheduling_group_local, ReadyReason::kYielded, worker);
    }
  }
  return taken[0];
}

void SchedulingGroup::ChaosQueue(std::uintptr_t entry, bool group_local,
                                 ReadyReason reason, std::size_t origin) {
  SchedulingGroup* target = this;
  if (!group_local) {
    if (ChaosOneIn(4)) target = ChaosGroupOnNode(this, numa_node());
    if (target != this) {
      ChaosCount(ChaosEvent::kGroupMove);
      origin = kNoWorker;
    } else if (origin != kNoWorker && ChaosOneIn(4)) {
      // A migration between workers: the shared queue, not the caller's local one.
      ChaosCount(ChaosEvent::kSharedQueue);
      origin = kNoWorker;
    }
  }
  // A push from this thread like any other (Enqueue()), with an origin that is ours in
  // `target` or none.
  ForeignProducerScope scope(BoundWorkerSlot()->group == nullptr);
  target->strategy_->Enqueue(entry, !group_local, reason, origin);
}
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
  CountOn(self->scheduling_worker, &WorkerCounters::fibers_started,
          fibers_started_elsewhere_, 1);
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

void SchedulingGroup::TakeBackRunInline(FiberEntity* joiner, FiberDesc* desc) {
  // Started here; it never gets a stack. The joiner runs on our worker's thread when
  // it is one of ours.
  CountOn(joiner->scheduling_group == this ? joiner->scheduling_worker : kNoWorker,
          &WorkerCounters::fibers_run_inline, fibers_run_inline_elsewhere_, 1);
  // acquire: pairs with a consumer's release of its reference (acq_rel fetch_sub). A
  // consumer already dropped the entry (v2 does when runnext is taken over): ours is the
  // last reference.
  if (desc->run_inline_refs.load(std::memory_order_acquire) == 1) {
    FreeFiberDesc(desc);
    return;
  }
  SchedulingGroup* home = joiner->scheduling_group;
  const bool on_worker = joiner->scheduling_worker < home->options_.workers;
  // The child alone first: usually it is at the front (fan-out joined in start order).
  const std::uintptr_t entry = EncodeEntry(desc);
  bool taken = false;
  strategy_->TakeBack(
      home == this && on_worker ? joiner->scheduling_worker : kNoWorker,
      [entry](std::uintptr_t queued) { return queued == entry; },
      [&taken](std::uintptr_t) {
        taken = true;
        return false;
      });
  if (!on_worker) {  // a test's fiber, not on a worker: no list to keep it in
    if (taken) {
      FreeFiberDesc(desc);  // both references were ours now
    } else {
      strategy_->NoteDeadEntries();
      ReleaseRunInlineDesc(desc);
    }
    return;
  }
  // Only this worker's thread touches its list: the joiner runs on it, and does not
  // switch while it is in here.
  auto& pending = home->worker_counters_[joiner->scheduling_worker].pending_take_backs;
  if (taken) {
    FreeFiberDesc(desc);
    // Taking it may have brought an earlier one of ours to the front.
    if (!pending.empty()) TakeBackPending(pending, joiner);
    return;
  }
  strategy_->NoteDeadEntries();  // left behind, for now at least
  // A short list: joined in reverse order, a small fan-out drains once its first child
  // is joined. Nested fork-join leaves entries in the middle of the queue, where no
  // retry reaches them, so a long list would only cost every inline join a long scan
  // (skynet spent half its time there with 128); what it cannot hold, a full queue
  // drops (GlobalRunQueue::Compact(), v2's local overflow).
  constexpr std::size_t kMaxPending = 8;
  if (pending.size() >= kMaxPending) {
    auto gone = std::remove_if(pending.begin(), pending.end(), [](const auto& item) {
      // acquire: as above.
      if (item.second->run_inline_refs.load(std::memory_order_acquire) != 1) return false;
      FreeFiberDesc(item.second);
      return true;
    });
    pending.erase(gone, pending.end());
    if (pending.size() >= kMaxPending) {
      ReleaseRunInlineDesc(pending.front().second);  // given up: the queue's ref frees it
      pending.erase(pending.begin());
    }
  }
  pending.emplace_back(this, desc);
}

void SchedulingGroup::TakeBackPending(
    std::vector<std::pair<SchedulingGroup*, FiberDesc*>>& pending,
    const FiberEntity* joiner) {
  std::size_t left = pending.size();
  // Usually one group; each group's strategy looks for all of its entries at once.
  for (std::size_t i = 0; i < pending.size() && left != 0; ++i) {
    SchedulingGroup* const group = pending[i].first;
    bool seen = false;  // an earlier entry of the same group: done already
    for (std::size_t j = 0; j < i && !seen; ++j) seen = pending[j].first == group;
    if (seen) continue;
    const bool ours = group == joiner->scheduling_group &&
                      joiner->scheduling_worker < group->options_.workers;
    group->strategy_->TakeBack(
        ours ? joiner->scheduling_worker : kNoWorker,
        [&](std::uintptr_t entry) {
          if (!IsDescEntry(entry)) return false;
          const FiberDesc* desc = DecodeDesc(entry);
          for (const auto& item : pending) {
            if (item.second == desc && item.first == group) return true;
          }
          return false;
        },
        [&](std::uintptr_t entry) {
          FiberDesc* desc = DecodeDesc(entry);
          for (auto& item : pending) {
            if (item.second == desc) item.second = nullptr;
          }
          FreeFiberDesc(desc);  // both references were ours now
          return --left != 0;
        });
  }
  if (left != pending.size()) {
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](const auto& item) { return item.second == nullptr; }),
                  pending.end());
  }
}

std::uint64_t SchedulingGroup::SumOverWorkers(SingleWriterCounter WorkerCounters::*field,
                                              const ThreadCounter* elsewhere) const {
  std::uint64_t sum = elsewhere != nullptr ? elsewhere->Read() : 0;
  for (const WorkerCounters& counters : worker_counters_) sum += (counters.*field).Read();
  return sum;
}
std::uint64_t SchedulingGroup::fibers_run() const {
  return SumOverWorkers(&WorkerCounters::fibers_run, nullptr);
}
std::uint64_t SchedulingGroup::fibers_started() const {
  return SumOverWorkers(&WorkerCounters::fibers_started, &fibers_started_elsewhere_);
}
std::uint64_t SchedulingGroup::fibers_begun() const {
  return SumOverWorkers(&WorkerCounters::fibers_begun, &fibers_begun_elsewhere_);
}
std::uint64_t SchedulingGroup::fibers_run_inline() const {
  return SumOverWorkers(&WorkerCounters::fibers_run_inline, &fibers_run_inline_elsewhere_);
}
std::uint64_t SchedulingGroup::fibers_run(std::size_t worker) const {
  return worker_counters_[worker].fibers_run.Read();
}
std::uint64_t SchedulingGroup::steals_in_same_node() const {
  return steals_in_same_node_.Read();
}
std::uint64_t SchedulingGroup::steals_in_cross_node() const {
  return steals_in_cross_node_.Read();
}
std::uint64_t SchedulingGroup::steals_out() const { return steals_out_.Read(); }

HistogramSnapshot SchedulingGroup::ready_latency() const {
  HistogramSnapshot all;
  for (std::size_t w = 0; w < options_.workers; ++w) {
    worker_counters_[w].ready_latency.AddTo(all);
  }
  return all;
}

HistogramSnapshot SchedulingGroup::ready_latency(std::size_t worker) const {
  HistogramSnapshot one;
  worker_counters_[worker].ready_latency.AddTo(one);
  return one;
}

}  // namespace spindle::internal
