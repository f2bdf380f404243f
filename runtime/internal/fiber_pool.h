// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_POOL_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "fiber/internal/deadline.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/wait_types.h"
#include "runtime/internal/base/pool_admission.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/runtime_options.h"
#include "sync/internal/wait_queue.h"

namespace spindle::internal {

// Why a start into a pool was refused (FiberPoolState::CountRefused).
enum class RefusalCause : std::uint8_t {
  kCap,    // the pool's live fibers were at its cap
  kStack,  // no stack could be had (address space, vm.max_map_count, memory cgroup)
};

// One pool of the running runtime (--fiber_pools): its groups, where a start from
// outside the pool goes among them, and its admission (a cap on live fibers, with the
// waiters of the waiting form). Built by the Runtime before any worker starts; the
// groups and the plan are read-only afterwards.
//
// Thread-safety: thread-safe. Owned by the Runtime; outlives its groups' fibers.
class FiberPoolState {
 public:
  FiberPoolState(std::size_t index, const PoolPlan& plan);
  FiberPoolState(const FiberPoolState&) = delete;
  FiberPoolState& operator=(const FiberPoolState&) = delete;

  // Adds the pool's next group (plan order), placed on `node` with CPUs `cpus`, and gives
  // it the pool's admission. Before any worker starts.
  void AddGroup(SchedulingGroup* group, int node, const std::vector<int>& cpus);

  std::size_t index() const { return index_; }
  const std::string& name() const { return plan_.name; }
  const PoolPlan& plan() const { return plan_; }
  const std::vector<SchedulingGroup*>& groups() const { return groups_; }
  bool Contains(const SchedulingGroup* group) const { return group->pool() == index_; }

  // The group a start from outside the pool goes to: the groups of the calling CPU's
  // NUMA node in turn (all the pool's groups in turn when that CPU is on none of them).
  SchedulingGroup* GroupForOutsideStart();

  // Null when the pool has no cap.
  PoolAdmission* admission() const { return admission_.get(); }

  // What a start that may be refused does before its fiber exists: admits it (waiting
  // for room until `deadline`, or the cancellation of `limits`, if `wait`), then takes
  // a stack of class `stack_class` (stack_allocator.h) into `*stack` (PackStack()). On
  // failure nothing is counted or held, and the error names the pool and the cause:
  // ResourceExhausted (at the cap, or no stack), DeadlineExceeded or Cancelled.
  absl::Status AdmitStart(MonotonicDeadline deadline, bool wait, const WaitLimits* limits,
                          std::uint8_t stack_class, std::uintptr_t* stack);

  void CountRefused(RefusalCause cause) {
    // relaxed: counters, read as snapshots.
    (cause == RefusalCause::kCap ? refused_at_cap_ : refused_no_stack_)
        .fetch_add(1, std::memory_order_relaxed);
  }
  std::uint64_t refused_at_cap() const { return refused_at_cap_.load(std::memory_order_relaxed); }
  std::uint64_t refused_no_stack() const {
    return refused_no_stack_.load(std::memory_order_relaxed);
  }

 private:
  // The groups of one NUMA node, for GroupForOutsideStart().
  struct NodeGroups {
    int node = 0;
    std::vector<SchedulingGroup*> groups;
    std::atomic<std::size_t> next{0};  // relaxed: only spreads starts over the groups
  };

  // Counts one fiber as admitted if the pool has room (always, without a cap).
  bool TryAdmit() { return admission_ == nullptr || admission_->TryAdmit(); }
  // Waits until a fiber is admitted (kNotified), `deadline` passes (kTimedOut) or
  // `limits` are cancelled (kCancelled); `limits` may be null. Fibers and plain threads.
  WaitResult AdmitBefore(MonotonicDeadline deadline, const WaitLimits* limits);
  // PoolAdmission's room callback: wakes one waiter of the waiting form.
  static void OnRoom(void* pool);

  const std::size_t index_;
  const PoolPlan plan_;
  std::vector<SchedulingGroup*> groups_;
  std::vector<std::unique_ptr<NodeGroups>> node_groups_;
  std::vector<int> node_of_cpu_;  // CPU -> index into node_groups_, or -1
  std::atomic<std::size_t> next_group_{0};  // relaxed: as NodeGroups::next
  std::unique_ptr<PoolAdmission> admission_;

  Spinlock lock_;
  WaitQueue waiters_ ABSL_GUARDED_BY(lock_);

  std::atomic<std::uint64_t> refused_at_cap_{0};
  std::atomic<std::uint64_t> refused_no_stack_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_POOL_H_
