// Copyright 2026 The Spindle Authors.

#include "runtime/runtime.h"

#include <chrono>
#include <functional>
#include <iostream>
#include <sstream>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
#include "runtime/internal/fiber_worker.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/observability/dump_signal.h"
#include "runtime/internal/observability/fiber_dump.h"
#include "runtime/internal/observability/terminate_reports.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_options.h"
#include "sync/internal/timed_waiter.h"
#include "timer/internal/timer_worker.h"

namespace spindle {
namespace {

// From the options of the running runtime (StartRuntime() and TerminateRuntime() do not
// race, so plain variables).
std::chrono::milliseconds g_terminate_grace{0};

// Waits for the live fibers to finish; after each grace period, logs how many are left
// and dumps them.
void WaitForFibersLoggingStragglers() {
  if (g_terminate_grace.count() == 0) {
    internal::WaitUntilNoLiveFibers();
    return;
  }
  std::chrono::milliseconds waited{0};
  while (!internal::WaitUntilNoLiveFibersFor(g_terminate_grace)) {
    waited += g_terminate_grace;
    std::ostringstream dump;
    DumpFibers(dump);
    LOG(WARNING) << "TerminateRuntime: still waiting for " << internal::GetLiveFiberCount()
                 << " fibers after " << waited.count()
                 << " ms (--fiber_terminate_grace_ms):\n"
                 << internal::CollectTerminateReports() << dump.str();
  }
}

}  // namespace

std::string TryStartRuntime() {
  const internal::RuntimeOptions options = internal::RuntimeOptionsFromFlags();
  std::string error = internal::ValidateRuntimeOptions(options);
  if (!error.empty()) return error;
  // The composition root: the scheduler (groups and workers), then the timer thread of
  // each group. No fiber can start before we return, so nothing needs a timer earlier.
  internal::Runtime::Start(options);
  internal::Runtime& runtime = internal::Runtime::Get();
  std::vector<internal::SchedulingGroup*> groups;
  for (std::size_t g = 0; g < runtime.group_count(); ++g) groups.push_back(runtime.group(g));
  internal::StartTimerWorkers(groups);
  // Busy workers fire due timers too (group_timers.h).
  for (internal::SchedulingGroup* group : groups) {
    group->busy_poll().SetTimers(internal::TimerWorkerFor(group));
  }
  g_terminate_grace = options.terminate_grace;
  internal::StartDumpSignalListener(options.dump_signal, [] { DumpFibers(std::cerr); });
  return "";
}

void StartRuntime() {
  const std::string error = TryStartRuntime();
  if (!error.empty()) LOG(FATAL) << "StartRuntime: " << error;
}

void TerminateRuntime() {
  CHECK(internal::Runtime::IsRunning())
      << "TerminateRuntime() called without a running runtime";
  CHECK(internal::CurrentFiberWorker() == nullptr)
      << "TerminateRuntime() must be called from outside the runtime (not from a fiber)";
  // Drain while timers still fire (sleeping fibers need them); stop the timer threads
  // (pending timers are cancelled; no callback starts after this); the scheduler then
  // drains the fibers their last firings started and stops. The timer objects outlive
  // the groups' last fibers, so a late look-up still finds one.
  WaitForFibersLoggingStragglers();
  internal::StopDumpSignalListener();
  // An assist already under way when the timers are removed: Stop() waits for it.
  internal::Runtime& runtime = internal::Runtime::Get();
  for (std::size_t g = 0; g < runtime.group_count(); ++g) {
    runtime.group(g)->busy_poll().SetTimers(nullptr);
  }
  internal::StopTimerWorkers();
  internal::Runtime::Terminate();
  internal::DestroyTimerWorkers();
}

void RunAsFiber(absl::AnyInvocable<void()> f) {
  internal::FiberEntity* current = internal::GetCurrentFiberEntity();
  if (current != nullptr && !current->is_master()) {
    f();
    return;
  }
  // One wait for one wake-up (the runtime's one waiter primitive): the fiber notifies
  // this thread's waiter after `f` returns. A Notify() that beats WaitUntil() is kept in
  // the waiter's state, so it cannot be lost.
  internal::TimedWaiter done;
  internal::FiberDesc* desc = internal::NewFiberDesc([&] {
    f();
    done.Notify();  // our last access to this frame
  });
  internal::Runtime::Get().NearestGroup()->StartFiber(desc);
  done.WaitUntil(internal::MonotonicDeadline::None());
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
    stats.fibers_run = group.stats().fibers_run();
    stats.steals_in_same_node = group.stats().steals_in_same_node();
    stats.steals_in_cross_node = group.stats().steals_in_cross_node();
    stats.steals_out = group.stats().steals_out();
    const internal::StrategyStats strategy = group.strategy()->stats();
    stats.wakeups = strategy.wakeups;
    stats.steals_in_group = strategy.steals_in_group;
    stats.run_queue_depth = strategy.global_queue_size + strategy.local_queue_size;
    all.push_back(std::move(stats));
  }
  return all;
}

void DumpFibers(std::ostream& out) { DumpFibers(out, DumpFibersOptions{}); }

void DumpFibers(std::ostream& out, const DumpFibersOptions& options) {
  std::size_t total = 0;
  const std::vector<internal::FiberSnapshot> fibers =
      internal::SnapshotFibers(options.max_fibers, &total);
  std::function<void()> between;
  internal::FiberEntity* self = internal::GetCurrentFiberEntity();
  if (options.yield_between_fibers && self != nullptr && !self->is_master() &&
      self->scheduling_group != nullptr) {
    between = [self] { internal::YieldFiber(self); };
  }
  internal::WriteFiberDump(out, fibers, internal::GetLiveFiberCount(), total, between);
  out.flush();
}

}  // namespace spindle
