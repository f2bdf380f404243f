// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_
#define SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "runtime/internal/fiber_worker.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/fiber_pool.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/hog_monitor.h"
#include "runtime/internal/observability/deadlock_report.h"
#include "runtime/internal/observability/trace_export.h"
#include "runtime/internal/runtime_options.h"

namespace spindle::internal {

// The running scheduler: its scheduling groups and their workers. One at a time per
// process, between StartRuntime() and TerminateRuntime(). The composition root
// (runtime/runtime.cc) builds it and then the layers above it (timer threads), and
// takes them down in the reverse order. Get() is thread-safe while a runtime runs;
// Start() and Terminate() must not race with each other.
class Runtime {
 public:
  // Starts groups and workers as `options` say (already validated).
  static void Start(const RuntimeOptions& options);
  // Waits until every started fiber has finished, then stops and joins the workers.
  // Called from outside the runtime, after the timer threads stopped.
  static void Terminate();
  // The running runtime; CHECK-fails with a clear message if there is none.
  static Runtime& Get();
  static bool IsRunning();

  std::size_t group_count() const { return groups_.size(); }
  SchedulingGroup* group(std::size_t i) const { return groups_[i].get(); }
  std::size_t group_size() const { return group_size_; }

  // The group a new fiber started on this thread should go to: the current worker's
  // group, or (from other threads) the default pool's groups of the calling CPU's NUMA
  // node in turn (FiberPoolState::GroupForOutsideStart()).
  SchedulingGroup* NearestGroup();
  // The same within `pool`: the current worker's group if it is one of the pool's, else
  // the pool's groups in turn.
  SchedulingGroup* NearestGroupIn(FiberPoolState* pool);

  // The pools (--fiber_pools), the default pool first; at least one.
  std::size_t pool_count() const { return pools_.size(); }
  FiberPoolState* pool(std::size_t i) const { return pools_[i].get(); }
  FiberPoolState* pool_of(const SchedulingGroup* group) const {
    return pools_[group->pool()].get();
  }
  // The pool named `name`; null if there is none.
  FiberPoolState* FindPool(std::string_view name) const;
  // The declared pools' names, for messages: "default, admin, batch".
  std::string PoolNames() const;

  // What a start names of its place: Fiber::Attributes' pool (an index, or
  // kCallersPool), pool_name (null: none) and scheduling_group (or kAnyGroup).
  static constexpr std::size_t kCallersPool = static_cast<std::size_t>(-1);
  static constexpr std::size_t kAnyGroup = static_cast<std::size_t>(-1);
  struct StartPlace {
    std::size_t pool = kCallersPool;
    const char* pool_name = nullptr;
    std::size_t scheduling_group = kAnyGroup;
  };
  // The group a start named so goes to, or the error naming the attribute at fault
  // (NotFound for a pool name no pool has, InvalidArgument for the others). Thread-safe.
  absl::Status PlaceStart(const StartPlace& place, SchedulingGroup** group);

  // The layout the runtime was built from.
  const RuntimeLayout& layout() const { return layout_; }

 private:
  explicit Runtime(const RuntimeOptions& options);
  ~Runtime();
  void BuildGroups(const RuntimeOptions& options);
  void BuildWorkers(const RuntimeOptions& options);

  std::vector<std::unique_ptr<SchedulingGroup>> groups_;
  std::vector<std::unique_ptr<FiberWorker>> workers_;
  // Watches the workers while they run (hog_monitor.h): built after they start,
  // destroyed before they stop.
  std::unique_ptr<HogMonitor> hog_monitor_;
  HogMonitorOptions hog_options_;
  // --fiber_deadlock_report_s (deadlock_report.h): the same lifetime; null when off.
  std::unique_ptr<DeadlockMonitor> deadlock_monitor_;
  std::chrono::seconds deadlock_report_{0};
  // --fiber_trace_file (trace_export.h): the same lifetime; null when off.
  std::unique_ptr<TraceWindowThread> trace_window_;
  RuntimeOptions trace_options_;
  std::size_t group_size_ = 0;
  RuntimeLayout layout_;
  std::vector<std::unique_ptr<FiberPoolState>> pools_;
};

// Tests only: forgets which layout lines --fiber_log_layout has printed in this
// process, so that the next start prints its line again (gtest_repeat).
void ForgetPrintedLayoutLinesForTesting();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_
