// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_
#define SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/internal/fiber_desc.h"
#include "runtime/internal/fiber_worker.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/scheduling_group.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// The running runtime: its scheduling groups and their workers. One at a time per
// process, between StartRuntime() and TerminateRuntime(). Get() is thread-safe while a
// runtime runs; Start() and Terminate() must not race with each other.
class Runtime {
 public:
  // Starts groups and workers as `options` say (already validated).
  static void Start(const RuntimeOptions& options);
  // Waits until every started fiber has finished, then stops and joins the workers.
  static void Terminate();
  // The running runtime; CHECK-fails with a clear message if there is none.
  static Runtime& Get();
  static bool IsRunning();

  std::size_t group_count() const { return groups_.size(); }
  SchedulingGroup* group(std::size_t i) const { return groups_[i].get(); }
  std::size_t group_size() const { return group_size_; }
  TimerWorker* timer_worker(std::size_t i) const { return timer_workers_[i].get(); }

  // The group a new fiber started on this thread should go to: the current worker's
  // group, or (from other threads) the groups in turn.
  SchedulingGroup* NearestGroup();

 private:
  explicit Runtime(const RuntimeOptions& options);
  ~Runtime();

  std::vector<std::unique_ptr<SchedulingGroup>> groups_;
  std::vector<std::unique_ptr<FiberWorker>> workers_;
  std::vector<std::unique_ptr<TimerWorker>> timer_workers_;  // one per group
  std::size_t group_size_ = 0;
  std::atomic<std::size_t> next_group_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RUNTIME_IMPL_H_
