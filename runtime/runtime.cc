// Copyright 2026 The Spindle Authors.

#include "runtime/runtime.h"

#include <condition_variable>
#include <mutex>

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
#include "runtime/internal/live_fibers.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_options.h"

namespace spindle {

std::string TryStartRuntime() {
  const internal::RuntimeOptions options = internal::RuntimeOptionsFromFlags();
  std::string error = internal::ValidateRuntimeOptions(options);
  if (!error.empty()) return error;
  internal::Runtime::Start(options);
  return "";
}

void StartRuntime() {
  const std::string error = TryStartRuntime();
  if (!error.empty()) LOG(FATAL) << "StartRuntime: " << error;
}

void TerminateRuntime() { internal::Runtime::Terminate(); }

void RunAsFiber(absl::AnyInvocable<void()> f) {
  internal::FiberEntity* current = internal::GetCurrentFiberEntity();
  if (current != nullptr && !current->is_master()) {
    f();
    return;
  }
  std::mutex lock;
  std::condition_variable cv;
  bool done = false;
  internal::FiberDesc* desc = internal::NewFiberDesc([&] {
    f();
    // The lock is held for a few instructions only; no fiber switch happens under it.
    std::lock_guard<std::mutex> guard(lock);
    done = true;
    cv.notify_one();
  });
  internal::Runtime::Get().NearestGroup()->StartFiber(desc);
  std::unique_lock<std::mutex> guard(lock);
  cv.wait(guard, [&] { return done; });
}

std::size_t GetSchedulingGroupCount() { return internal::Runtime::Get().group_count(); }

std::size_t GetSchedulingGroupSize() { return internal::Runtime::Get().group_size(); }

std::size_t GetFiberCount() { return internal::GetLiveFiberCount(); }

std::vector<SchedulingGroupStats> GetSchedulingGroupStats() {
  internal::Runtime& runtime = internal::Runtime::Get();
  std::vector<SchedulingGroupStats> all;
  for (std::size_t g = 0; g < runtime.group_count(); ++g) {
    const internal::SchedulingGroup& group = *runtime.group(g);
    SchedulingGroupStats stats;
    stats.index = g;
    stats.numa_node = group.numa_node();
    stats.workers = group.size();
    stats.cpus = internal::FormatCpuList(runtime.layout().groups[g].cpus);
    stats.fibers_run = group.fibers_run();
    stats.steals_in_same_node = group.steals_in_same_node();
    stats.steals_in_cross_node = group.steals_in_cross_node();
    stats.steals_out = group.steals_out();
    const internal::StrategyStats strategy = group.strategy_stats();
    stats.wakeups = strategy.wakeups;
    stats.steals_in_group = strategy.steals_in_group;
    stats.run_queue_depth = strategy.global_queue_size + strategy.local_queue_size;
    all.push_back(std::move(stats));
  }
  return all;
}

}  // namespace spindle
