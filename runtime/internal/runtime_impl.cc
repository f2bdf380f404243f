// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_impl.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "fiber/internal/debug_info.h"
#include "glog/logging.h"
#include "runtime/internal/base/foreign_producers.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/group/group_chaos.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {
namespace {

// acquire/release: Start() publishes the fully built runtime (release store); Get()
// acquires it, so groups and workers are visible to any thread that sees the pointer.
std::atomic<Runtime*> g_runtime{nullptr};

// The start-up lines. A library does not log on its host's behalf: nothing reaches
// stderr unless --fiber_log_layout asks for it, and then written directly (glog, when
// its host never initialized it, would first print a warning about that), each distinct
// line once per process (a program that restarts the runtime, such as spindle_bench,
// prints its layout once). VLOG(1) gets every line, for hosts that use glog.
std::mutex g_printed_lock;
std::vector<std::string>* g_printed = new std::vector<std::string>;  // by g_printed_lock

void ReportLayout(const std::string& line, bool to_stderr) {
  VLOG(1) << line;
  if (!to_stderr) return;
  std::lock_guard<std::mutex> guard(g_printed_lock);
  if (std::find(g_printed->begin(), g_printed->end(), line) != g_printed->end()) return;
  g_printed->push_back(line);
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

void Runtime::Start(const RuntimeOptions& options) {
  CHECK(g_runtime.load(std::memory_order_acquire) == nullptr)
      << "StartRuntime() called while the runtime is already running";
  auto* runtime = new Runtime(options);
  if constexpr (kTestSeams) {  // chaos mode (a test seam; other builds refuse a seed)
    if (options.chaos_seed != 0) {
      std::vector<ChaosGroup> groups;
      for (auto& group : runtime->groups_) {
        groups.push_back({group.get(), ChaosNodeKey(group->pool(), group->numa_node())});
      }
      // Before any worker runs.
      const bool decisions = StartChaos(options.chaos_seed, std::move(groups));
      ReportLayout("Spindle: chaos scheduling, seed " + std::to_string(options.chaos_seed) +
                       ": " + (decisions ? "pauses and decisions" : "pauses only") +
                       " in this run",
                   options.log_layout);
    }
  }
  PublishRuntimeDebugInfo(SchedulingGroup::IndexOffsetForDebuggers());
  g_runtime.store(runtime, std::memory_order_release);
  for (auto& worker : runtime->workers_) worker->Start();
  for (auto& worker : runtime->workers_) worker->WaitUntilSetUp();
  std::vector<MonitoredWorker> watched;
  for (auto& worker : runtime->workers_) {
    watched.push_back({worker->group(), worker->index(), worker->thread_handle(),
                       &worker->kernel_thread_id()});
  }
  runtime->hog_monitor_ = std::make_unique<HogMonitor>(runtime->hog_options_, std::move(watched));
  if (runtime->deadlock_report_.count() > 0) {
    runtime->deadlock_monitor_ = std::make_unique<DeadlockMonitor>(runtime->deadlock_report_);
  }
  const RuntimeOptions& trace = runtime->trace_options_;
  if (!trace.trace_file.empty()) {
    runtime->trace_window_ = std::make_unique<TraceWindowThread>(
        trace.trace_file, trace.trace_after, trace.trace_for,
        trace.trace_records_per_thread);
  }
}

void Runtime::Terminate() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  CHECK(runtime != nullptr) << "TerminateRuntime() called without a running runtime";
  CHECK(CurrentFiberWorker() == nullptr)
      << "TerminateRuntime() must be called from outside the runtime (not from a fiber)";
  // The timer threads are stopped (no firing starts a fiber any more): drain what is
  // left, then stop the groups.
  WaitUntilNoLiveFibers();
  // A plain thread may still be finishing the wake-up of a fiber that has since run to
  // its end: it must leave the strategy before we free it.
  WaitForForeignProducers();
  // No fiber is left to watch (it watched the drain: a hog may have held it up).
  runtime->hog_monitor_.reset();
  runtime->deadlock_monitor_.reset();
  runtime->trace_window_.reset();  // writes what it recorded if its window is open
  for (auto& group : runtime->groups_) group->strategy()->Stop();
  for (auto& worker : runtime->workers_) worker->Join();
  // No worker runs; the timer threads stopped before we were called.
  if constexpr (kTestSeams) StopChaos();
  g_runtime.store(nullptr, std::memory_order_release);
  delete runtime;
}

Runtime& Runtime::Get() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  CHECK(runtime != nullptr)
      << "the Spindle runtime is not running: call spindle::StartRuntime() first";
  return *runtime;
}

bool Runtime::IsRunning() {
  return g_runtime.load(std::memory_order_acquire) != nullptr;
}

Runtime::Runtime(const RuntimeOptions& options) {
  const std::string error = ComputeRuntimeLayout(options, &layout_);
  CHECK(error.empty()) << error;  // validated by the caller
  group_size_ = layout_.groups.front().workers;
  hog_options_.report = options.hog_report;
  hog_options_.rescue = options.hog_rescue;
  deadlock_report_ = options.deadlock_report;
  trace_options_ = options;
  BuildGroups(options);
  BuildWorkers(options);
  std::ostringstream line;
  line << "Spindle runtime: " << DescribeLayout(layout_.groups) << "; strategy "
       << options.scheduling_strategy;
  if (layout_.pools.size() > 1 || layout_.pools.front().max_fibers != 0) {
    line << "; pools";
    for (const PoolPlan& pool : layout_.pools) {
      line << " " << pool.name << "=g" << pool.first_group;
      if (pool.group_count > 1) line << "-g" << pool.first_group + pool.group_count - 1;
      line << ":" << pool.workers << "w";
      if (!pool.cpus.empty()) line << "@" << pool.cpus;
      if (pool.strategy != options.scheduling_strategy) line << "/" << pool.strategy;
      if (pool.max_fibers != 0) line << ",max_fibers=" << pool.max_fibers;
    }
  }
  line << ", stealing "
       << (options.work_stealing_ratio == 0
               ? std::string("never")
               : "every " + std::to_string(options.work_stealing_ratio) + " idle rounds")
       << " in a node, "
       << (options.cross_numa_work_stealing_ratio == 0
               ? std::string("never")
               : "every " + std::to_string(options.cross_numa_work_stealing_ratio) +
                     " idle rounds")
       << " across nodes, run queue " << options.run_queue_size << ", stack "
       << options.stacks.stack_size << " bytes"
       << (options.stacks.guard_page ? " + guard page" : "")
       << (layout_.topology.numa_available && layout_.numa_aware
               ? ", memory on each group's node"
               : "")
       << (options.chaos_seed != 0 ? "; CHAOS MODE, seed " + std::to_string(options.chaos_seed)
                                   : std::string());
  ReportLayout(line.str(), options.log_layout);
}

void Runtime::BuildGroups(const RuntimeOptions& options) {
  GroupStats::SetReadySamplePeriod(
      static_cast<std::uint32_t>(options.ready_latency_sample_period));  // validated
  for (std::size_t p = 0; p < layout_.pools.size(); ++p) {
    pools_.push_back(std::make_unique<FiberPoolState>(p, layout_.pools[p]));
  }
  for (std::size_t g = 0; g < layout_.groups.size(); ++g) {
    const GroupPlan& plan = layout_.groups[g];
    SchedulingGroupOptions group_options;
    group_options.index = g;
    group_options.pool = plan.pool;
    group_options.numa_node = plan.node;
    group_options.memory_node = layout_.topology.numa_available ? plan.node : kNoNumaNode;
    group_options.workers = plan.workers;
    group_options.run_queue_capacity = options.run_queue_size;
    group_options.spin_time = options.spin_time;
    group_options.strategy = layout_.pools[plan.pool].strategy;
    groups_.emplace_back(new (group_options.memory_node) SchedulingGroup(group_options));
    pools_[plan.pool]->AddGroup(groups_.back().get(), plan.node, plan.cpus);
  }
}

void Runtime::BuildWorkers(const RuntimeOptions& options) {
  std::vector<std::vector<SchedulingGroup*>> thieves(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const GroupPlan& plan = layout_.groups[g];
    std::vector<StealVictim> victims;
    // Every other group of the pool is considered; meeting our own group skips it and
    // goes on (continue, not return: see §3.4 of the anchors' design notes). Groups of
    // other pools never: a pool's fibers stay in it.
    for (std::size_t v = 0; v < groups_.size(); ++v) {
      if (v == g || layout_.groups[v].pool != plan.pool) continue;
      const std::size_t ratio = layout_.groups[v].node == plan.node
                                    ? options.work_stealing_ratio
                                    : options.cross_numa_work_stealing_ratio;
      if (ratio == 0) continue;
      victims.push_back(StealVictim{groups_[v].get(), ratio});
      thieves[v].push_back(groups_[g].get());
    }
    for (std::size_t w = 0; w < plan.workers; ++w) {
      FiberWorkerOptions worker_options;
      worker_options.cpus = plan.worker_cpus.empty() ? plan.cpus
                                                     : std::vector<int>{plan.worker_cpus[w]};
      worker_options.affinity_cpus = layout_.affinity_cpus;
      worker_options.victims = victims;
      workers_.push_back(
          std::make_unique<FiberWorker>(groups_[g].get(), w, std::move(worker_options)));
    }
  }
  for (std::size_t g = 0; g < groups_.size(); ++g) groups_[g]->SetThieves(thieves[g]);
}

Runtime::~Runtime() = default;

SchedulingGroup* Runtime::NearestGroup() {
  if (FiberWorker* worker = CurrentFiberWorker()) return worker->group();
  return pools_.front()->GroupForOutsideStart();
}

SchedulingGroup* Runtime::NearestGroupIn(FiberPoolState* pool) {
  if (FiberWorker* worker = CurrentFiberWorker()) {
    if (pool->Contains(worker->group())) return worker->group();
  }
  return pool->GroupForOutsideStart();
}

FiberPoolState* Runtime::FindPool(std::string_view name) const {
  for (const auto& pool : pools_) {
    if (pool->name() == name) return pool.get();
  }
  return nullptr;
}

std::string Runtime::PoolNames() const {
  std::string names;
  for (const auto& pool : pools_) names += (names.empty() ? "" : ", ") + pool->name();
  return names;
}

absl::Status Runtime::PlaceStart(const StartPlace& place, SchedulingGroup** group) {
  FiberPoolState* pool = nullptr;
  if (place.pool_name != nullptr) {
    pool = FindPool(place.pool_name);
    if (pool == nullptr) {
      return absl::NotFoundError(std::string("Fiber::Attributes::pool_name=\"") +
                                 place.pool_name + "\" names no pool: declared are " +
                                 PoolNames() + " (--fiber_pools)");
    }
    if (place.pool != kCallersPool && place.pool != pool->index()) {
      return absl::InvalidArgumentError(
          "Fiber::Attributes::pool (pool " + std::to_string(place.pool) +
          ") and pool_name (" + place.pool_name + ") name different pools");
    }
  } else if (place.pool != kCallersPool) {
    if (place.pool >= pools_.size()) {
      return absl::InvalidArgumentError(
          "Fiber::Attributes::pool has index " + std::to_string(place.pool) +
          ", out of range: expected [0, " + std::to_string(pools_.size()) +
          ") (a handle from another runtime?)");
    }
    pool = pools_[place.pool].get();
  }
  if (place.scheduling_group != kAnyGroup) {
    if (place.scheduling_group >= groups_.size()) {
      return absl::InvalidArgumentError(
          "Fiber::Attributes::scheduling_group=" + std::to_string(place.scheduling_group) +
          " is out of range: expected [0, " + std::to_string(groups_.size()) + ")");
    }
    SchedulingGroup* chosen = groups_[place.scheduling_group].get();
    if (pool != nullptr && chosen->pool() != pool->index()) {
      return absl::InvalidArgumentError(
          "Fiber::Attributes::scheduling_group=" + std::to_string(place.scheduling_group) +
          " is not in pool " + pool->name() + " (its groups are [" +
          std::to_string(pool->plan().first_group) + ", " +
          std::to_string(pool->plan().first_group + pool->plan().group_count) + "))");
    }
    *group = chosen;
    return absl::OkStatus();
  }
  *group = pool != nullptr ? NearestGroupIn(pool) : NearestGroup();
  return absl::OkStatus();
}

void ForgetPrintedLayoutLinesForTesting() {
  std::lock_guard<std::mutex> guard(g_printed_lock);
  g_printed->clear();
}

}  // namespace spindle::internal
