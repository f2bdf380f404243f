// Copyright 2026 The Spindle Authors.
//
// The waiting form's wait for room (AdmitBefore), and why it cannot miss a Release():
// a waiter takes lock_, registers (PoolAdmission::AddWaiter, seq_cst), then retries
// TryAdmit(); if that fails it links itself in waiters_ and releases lock_ only inside
// WaitQueue::Wait(). A Release() drops the count and then reads the waiter count, both
// seq_cst: if it reads 0, the waiter's retry saw its room; else it calls OnRoom(),
// which takes lock_ (so after the waiter linked itself) and wakes the oldest waiter
// that can still be woken. A woken waiter retries; one that loses the place to another
// start waits again at the front. A waiter that times out or is cancelled after a
// wake-up chose it leaves the place to the next Release() or TryAdmit(): the place was
// never taken, so the count still shows it free.

#include "runtime/internal/fiber_pool.h"

#include <sched.h>

#include <mutex>
#include <string>
#include <utility>

#include "fiber/internal/stack_allocator.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle::internal {

FiberPoolState::FiberPoolState(std::size_t index, const PoolPlan& plan)
    : index_(index), plan_(plan) {
  if (plan_.max_fibers != 0) {
    admission_ = std::make_unique<PoolAdmission>(plan_.max_fibers, &FiberPoolState::OnRoom, this);
  }
}

void FiberPoolState::AddGroup(SchedulingGroup* group, int node, const std::vector<int>& cpus) {
  group->SetAdmission(admission_.get());
  groups_.push_back(group);
  if (node_groups_.empty() || node_groups_.back()->node != node) {
    node_groups_.push_back(std::make_unique<NodeGroups>());
    node_groups_.back()->node = node;
    for (int cpu : cpus) {
      if (cpu >= static_cast<int>(node_of_cpu_.size())) node_of_cpu_.resize(cpu + 1, -1);
      node_of_cpu_[cpu] = static_cast<int>(node_groups_.size() - 1);
    }
  }
  node_groups_.back()->groups.push_back(group);
}

SchedulingGroup* FiberPoolState::GroupForOutsideStart() {
  const int cpu = sched_getcpu();
  if (cpu >= 0 && cpu < static_cast<int>(node_of_cpu_.size()) && node_of_cpu_[cpu] >= 0) {
    NodeGroups& node = *node_groups_[node_of_cpu_[cpu]];
    // relaxed: only spreads starts over the node's groups; any interleaving is fine.
    const std::size_t turn = node.next.fetch_add(1, std::memory_order_relaxed);
    return node.groups[turn % node.groups.size()];
  }
  // relaxed: as above, over all the pool's groups.
  const std::size_t turn = next_group_.fetch_add(1, std::memory_order_relaxed);
  return groups_[turn % groups_.size()];
}

WaitResult FiberPoolState::AdmitBefore(MonotonicDeadline deadline, const WaitLimits* limits) {
  if (TryAdmit()) return WaitResult::kNotified;
  // (The first TryAdmit() spares an uncontended start the lock.) Registered before the
  // retry, under lock_: see the top of this file.
  UniqueSpinlockGuard guard(lock_);
  admission_->AddWaiter();
  WaitResult result = WaitResult::kNotified;
  WaitQueue::WaitDetail detail;
  while (!admission_->TryAdmit()) {
    result = waiters_.Wait(guard.unique(), deadline, detail, WaitKind::kOther, limits);
    if (result != WaitResult::kNotified) {
      // One last look: room may have come with the deadline.
      if (admission_->TryAdmit()) result = WaitResult::kNotified;
      break;
    }
    detail.front = true;  // woken but beaten to the place: first in line again
  }
  admission_->RemoveWaiter();
  return result;
}

absl::Status FiberPoolState::AdmitStart(MonotonicDeadline deadline, bool wait,
                                        const WaitLimits* limits, std::uint8_t stack_class,
                                        std::uintptr_t* stack) {
  if (wait) {
    const WaitResult result = AdmitBefore(deadline, limits);
    if (result != WaitResult::kNotified) {
      CountRefused(RefusalCause::kCap);
      const std::string where = "fiber pool \"" + name() + "\" stayed at its cap (" +
                                std::to_string(admission_->cap()) + " live fibers)";
      return result == WaitResult::kCancelled
                 ? absl::CancelledError(where +
                                        " until the caller's execution context was cancelled")
                 : absl::DeadlineExceededError(where + " until the deadline");
    }
  } else if (!TryAdmit()) {
    CountRefused(RefusalCause::kCap);
    return absl::ResourceExhaustedError("fiber pool \"" + name() + "\" is at its cap: " +
                                        std::to_string(admission_->live()) +
                                        " live fibers, max_fibers=" +
                                        std::to_string(admission_->cap()));
  }
  std::string why;
  const Stack taken = StackCache::ForThisThread(stack_class).TryGet(&why);
  if (!taken) {
    if (admission_ != nullptr) admission_->Release();
    CountRefused(RefusalCause::kStack);
    return absl::ResourceExhaustedError("fiber pool \"" + name() +
                                        "\": no stack for a new fiber: " + why);
  }
  *stack = PackStack(taken);
  return absl::OkStatus();
}

void FiberPoolState::OnRoom(void* pool) {
  auto* self = static_cast<FiberPoolState*>(pool);
  // The woken fiber is queued once lock_ is released (the batch ends after the guard).
  ReadyBatch batch;
  SpinlockGuard guard(self->lock_);
  self->waiters_.WakeOne();
}

}  // namespace spindle::internal
