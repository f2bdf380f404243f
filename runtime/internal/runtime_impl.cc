// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_impl.h"

#include <sstream>

#include "glog/logging.h"

namespace spindle::internal {
namespace {

// acquire/release: Start() publishes the fully built runtime (release store); Get()
// acquires it, so groups and workers are visible to any thread that sees the pointer.
std::atomic<Runtime*> g_runtime{nullptr};

}  // namespace

void Runtime::Start(const RuntimeOptions& options) {
  CHECK(g_runtime.load(std::memory_order_acquire) == nullptr)
      << "StartRuntime() called while the runtime is already running";
  auto* runtime = new Runtime(options);
  g_runtime.store(runtime, std::memory_order_release);
  for (auto& worker : runtime->workers_) worker->Start();
  for (auto& timer_worker : runtime->timer_workers_) timer_worker->Start();
}

void Runtime::Terminate() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  CHECK(runtime != nullptr) << "TerminateRuntime() called without a running runtime";
  CHECK(CurrentFiberWorker() == nullptr)
      << "TerminateRuntime() must be called from outside the runtime (not from a fiber)";
  // Drain while timers still fire (sleeping fibers need them), then stop the timer
  // workers (pending timers are cancelled; no callback starts after this), then drain
  // the fibers their last firings started, then stop the groups.
  WaitUntilNoLiveFibers();
  for (auto& timer_worker : runtime->timer_workers_) timer_worker->Stop();
  WaitUntilNoLiveFibers();
  for (auto& group : runtime->groups_) group->Stop();
  for (auto& worker : runtime->workers_) worker->Join();
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
  const std::size_t concurrency =
      options.concurrency != 0 ? options.concurrency : DefaultConcurrency();
  const std::vector<std::size_t> sizes =
      ComputeGroupSizes(concurrency, options.scheduling_group_size);
  group_size_ = sizes.front();
  std::ostringstream layout;
  for (std::size_t g = 0; g < sizes.size(); ++g) {
    SchedulingGroupOptions group_options;
    group_options.index = g;
    group_options.workers = sizes[g];
    group_options.run_queue_capacity = options.run_queue_size;
    group_options.spin_time = options.spin_time;
    groups_.push_back(std::make_unique<SchedulingGroup>(group_options));
    timer_workers_.push_back(std::make_unique<TimerWorker>(groups_.back().get()));
    for (std::size_t w = 0; w < sizes[g]; ++w) {
      workers_.push_back(std::make_unique<FiberWorker>(groups_.back().get(), w));
    }
    layout << (g == 0 ? "" : ",") << sizes[g];
  }
  LOG(INFO) << "Spindle runtime: " << concurrency << " workers in " << sizes.size()
            << " scheduling group(s) of [" << layout.str()
            << "], strategy " << options.scheduling_strategy << ", run queue "
            << options.run_queue_size << ", stack " << options.stacks.stack_size
            << " bytes" << (options.stacks.guard_page ? " + guard page" : "");
}

Runtime::~Runtime() = default;

SchedulingGroup* Runtime::NearestGroup() {
  if (FiberWorker* worker = CurrentFiberWorker()) return worker->group();
  // relaxed: only spreads starts over groups; any interleaving is fine.
  const std::size_t turn = next_group_.fetch_add(1, std::memory_order_relaxed);
  return groups_[turn % groups_.size()].get();
}

}  // namespace spindle::internal
