// Copyright 2026 The Spindle Authors.
//
// The strategy-neutral face of a scheduling group. The strategies' protocols are at the
// top of spinner_notifier.cc, strategy_v2.cc and notifier.cc; entries and parking (how a
// fiber leaves its worker) at the top of parking.cc; the idle path in idle_path.cc.

#include "runtime/internal/group/scheduling_group.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <utility>

#include "fiber/internal/switch_safe_tls.h"
#include "fiber/internal/trace.h"
#include "glog/logging.h"
#include "runtime/internal/base/foreign_producers.h"
#include "runtime/internal/group/group_chaos.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/internal/strategies/strategy_registry.h"
#include "runtime/internal/strategies/strategy_v2.h"

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

std::unique_ptr<SchedulingStrategy> MakeStrategy(const SchedulingGroupOptions& options) {
  const StrategyEntry* entry = FindStrategy(options.strategy);
  CHECK(entry != nullptr) << ValidateSchedulingStrategy(options.strategy);
  return entry->create(options);
}

// Where a fiber of `group` that the thread bound as `bound` makes Ready is queued:
// `group`, or the waker's group where that one adopts it (SchedulingGroup::AdoptsOnWake).
// `fiber` null: where such a fiber goes unless it is scheduling_group_local.
SchedulingGroup* WakeTarget(SchedulingGroup* group, const BoundWorker& bound,
                            const FiberEntity* fiber) {
  if (bound.group == group || bound.group == nullptr ||
      (fiber != nullptr && fiber->scheduling_group_local) ||
      !group->AdoptsOnWake(bound.group)) {
    return group;
  }
  // The binding names its group const (the group only compares it); queueing into it
  // is what its own workers do.
  return const_cast<SchedulingGroup*>(bound.group);
}

}  // namespace

SchedulingGroup::SchedulingGroup(const SchedulingGroupOptions& options)
    : options_(options),
      strategy_(MakeStrategy(options)),  // checks the worker count (IdleNotifier)
      strategy_v2_(dynamic_cast<StrategyV2*>(strategy_.get())),
      busy_poll_(*strategy_, options.workers),
      stats_(options.workers) {}

SchedulingGroup::~SchedulingGroup() {
  CHECK(strategy_->UnsafeEmpty())
      << "scheduling group " << index() << " destroyed with fibers still queued";
}

void* SchedulingGroup::operator new(std::size_t size, int numa_node) {
  return AllocateNodeMemory(size, numa_node);  // 64-byte aligned: alignas(64) holds
}

void SchedulingGroup::operator delete(void* pointer, std::size_t size) {
  FreeNodeMemory(pointer, size);
}

void SchedulingGroup::operator delete(void* pointer, int) {
  FreeNodeMemory(pointer, sizeof(SchedulingGroup));
}

void SchedulingGroup::BindWorkerThread(std::size_t worker) {
  CHECK(worker == kNoWorker || worker < options_.workers) << "no worker " << worker;
  *BoundWorkerSlot() = worker == kNoWorker ? BoundWorker{} : BoundWorker{this, worker};
}

void SchedulingGroup::SetThieves(const std::vector<SchedulingGroup*>& thieves) {
  std::vector<SchedulingStrategy*> strategies;
  adopters_.clear();
  for (SchedulingGroup* thief : thieves) {
    strategies.push_back(thief->strategy_.get());
    if (thief->numa_node() == numa_node()) adopters_.push_back(thief);
  }
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

namespace {

// The scheduling trace's spawn record (trace.h): the starter (a fiber's id, or
// kLockOwnerThread) and the new fiber's id, chosen at its start.
inline void TraceSpawn(const FiberDesc* desc) {
  if (TraceOn()) TraceRecordNow(TraceKind::kSpawn, CurrentLockOwnerId(), desc->id);
}

}  // namespace

void SchedulingGroup::StartFiber(FiberDesc* desc) {
  // One read of the binding for the count, the origin and the foreign-producer count
  // (a call each would be paid on every start).
  const BoundWorker bound = *BoundWorkerSlot();
  const std::size_t origin = bound.group == this ? bound.index : kNoWorker;
  stats_.CountStarted(origin, 1);
  TraceSpawn(desc);
  CountAdmission(desc);
  GroupStats::StampReady(desc);
  EnqueueFrom(origin, bound.group == nullptr, EncodeEntry(desc),
              !desc->scheduling_group_local,
              static_cast<ReadyReason>(desc->start_reason));
}

void SchedulingGroup::StartFiberOnWorker(FiberDesc* desc, std::size_t worker) {
  stats_.CountStarted(worker, 1);
  TraceSpawn(desc);
  CountAdmission(desc);
  GroupStats::StampReady(desc);
  strategy_->Enqueue(EncodeEntry(desc), !desc->scheduling_group_local,
                     static_cast<ReadyReason>(desc->start_reason), worker);
}

template <class T>
void SchedulingGroup::EnqueueMany(T* const* items, std::size_t n, bool timer_round,
                                  const SchedulingGroup* bound_group,
                                  std::size_t bound_index) {
  ForeignProducerScope scope(bound_group == nullptr);
  const std::size_t origin = bound_group == this ? bound_index : kNoWorker;
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
  for (std::size_t i = 0; i < n; ++i) {
    TraceSpawn(descs[i]);
    CountAdmission(descs[i]);
  }
  EnqueueMany(descs, n, /*timer_round=*/false, bound.group, bound.index);
}

void SchedulingGroup::CountCappedStart(FiberDesc* desc) const {
  if (desc->reserved_stack == 0) admission_->AddPastCap(1);
  ForbidInlineRun(desc);
}

void StartFiberIn(SchedulingGroup* group, FiberDesc* desc) { group->StartFiber(desc); }

std::size_t GroupIndex(const SchedulingGroup* group) { return group->index(); }

std::size_t GroupWorkerCount(const SchedulingGroup* group) { return group->options().workers; }

SchedulingGroup* ThisThreadWorkerGroup(std::size_t* worker) {
  const BoundWorker bound = *BoundWorkerSlot();
  *worker = bound.index;
  // The binding names its group const (the group only compares it); the caller arms
  // timers of that group, which it may change.
  return const_cast<SchedulingGroup*>(bound.group);
}

void QueueReadyFibers(SchedulingGroup* group, FiberEntity* const* fibers, std::size_t n,
                      bool timer_round) {
  const BoundWorker bound = *BoundWorkerSlot();
  // A timer round is its group's own (the TimerWorker thread is no worker; a busy
  // worker fires its own group's timers).
  if (!timer_round) {
    if (WakeTarget(group, bound, nullptr) != group) {
      // Woken by a worker of an adopting group: all but the scheduling_group_local ones
      // go there, in chunks, in their order.
      constexpr std::size_t kChunk = 64;
      FiberEntity* adopted[kChunk];
      FiberEntity* staying[kChunk];
      for (std::size_t done = 0; done < n; done += kChunk) {
        const std::size_t count = std::min(kChunk, n - done);
        std::size_t a = 0, s = 0;
        for (std::size_t i = 0; i < count; ++i) {
          FiberEntity* fiber = fibers[done + i];
          (fiber->scheduling_group_local ? staying[s++] : adopted[a++]) = fiber;
        }
        if (a != 0) {
          const_cast<SchedulingGroup*>(bound.group)
              ->EnqueueMany(adopted, a, false, bound.group, bound.index);
        }
        if (s != 0) group->EnqueueMany(staying, s, false, bound.group, bound.index);
      }
      return;
    }
  }
  group->EnqueueMany(fibers, n, timer_round, bound.group, bound.index);
}

void ResumeFiber(FiberEntity* fiber) {
  {
    std::lock_guard<Spinlock> lock(fiber->scheduler_lock);
    fiber->SetState(FiberState::kReady);
  }
  if (TraceOn()) TraceRecordNow(TraceKind::kWake, CurrentLockOwnerId(), fiber->id);
  fiber->scheduling_group->QueueReady(fiber);
}

void QueueReadyFiber(FiberEntity* fiber) { fiber->scheduling_group->QueueReady(fiber); }

void SchedulingGroup::QueueReady(FiberEntity* fiber) {
  if (std::vector<FiberEntity*>* batch = ThisThreadReadyBatch()) {
    batch->push_back(fiber);  // stamped when the batch is queued
    return;
  }
  GroupStats::StampReady(fiber);
  const BoundWorker bound = *BoundWorkerSlot();
  // Woken by a worker of an adopting group (AdoptsOnWake): queued there, as that
  // worker's wake-up (v2: its runnext, so it runs next).
  SchedulingGroup* target = WakeTarget(this, bound, fiber);
  const std::size_t origin = bound.group == target ? bound.index : kNoWorker;
  if constexpr (kTestSeams) {
    if (ChaosDecides()) {
      ChaosQueue(target, EncodeEntry(fiber), fiber->scheduling_group_local,
                 ReadyReason::kWoken, origin, bound.group == nullptr);
      return;
    }
  }
  target->EnqueueFrom(origin, bound.group == nullptr, EncodeEntry(fiber),
                      !fiber->scheduling_group_local, ReadyReason::kWoken);
}

std::uintptr_t SchedulingGroup::StealEntryFrom(SchedulingGroup* victim, std::size_t worker) {
  std::uintptr_t stolen[kMaxStealBatch];
  const std::size_t n = victim->strategy_->StealBatch(stolen, kMaxStealBatch);
  if (n == 0) return 0;
  // relaxed: statistics.
  victim->stats_.CountStealOut(n);
  stats_.CountStealIn(victim->numa_node() == numa_node(), n);
  Trace(TraceKind::kSteal, victim->index(), n, static_cast<std::uint32_t>(index()));
  if (n > 1) {
    // Stealable in the victim, so in our group too (a fiber stolen becomes ours when
    // it is made Running). A producer's push like any other: its wake-up tells our
    // idle siblings, so one steal feeds the whole group.
    bool stealable[kMaxStealBatch];
    std::fill(stealable, stealable + n - 1, true);
    strategy_->EnqueueBatch(stolen + 1, stealable, n - 1, worker);
  }
  return stolen[0];
}

std::size_t SchedulingGroup::IndexOffsetForDebuggers() {
  static_assert(sizeof(SchedulingGroupOptions::index) == 8, "a debugger reads 8 bytes");
  // Not standard-layout (private members): offsetof is conditionally supported, and
  // GCC and Clang give the layout they use, which is what a debugger reads.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
  return offsetof(SchedulingGroup, options_) + offsetof(SchedulingGroupOptions, index);
#pragma GCC diagnostic pop
}

}  // namespace spindle::internal
