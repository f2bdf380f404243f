// Copyright 2026 The Spindle Authors.
//
// The worker loop. What a worker does between fibers (timers, queues, stealing between
// groups, sleeping) is its idle path, idle_path.cc.

#include "runtime/internal/fiber_worker.h"

#include <string>
#include <utility>

#include <pthread.h>
#include <unistd.h>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"
#include "runtime/internal/base/live_fibers.h"
#include "runtime/internal/base/metrics.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {
namespace {

thread_local FiberWorker* tls_current_worker = nullptr;

SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(FiberWorker*, tls_current_worker, CurrentWorkerSlot)

}  // namespace

FiberWorker::FiberWorker(SchedulingGroup* group, std::size_t index,
                         FiberWorkerOptions options)
    : group_(group),
      index_(index),
      cpus_(std::move(options.cpus)),
      affinity_cpus_(std::move(options.affinity_cpus)),
      idle_(group, index, std::move(options.victims)) {}

FiberWorker::~FiberWorker() {
  CHECK(!thread_.joinable()) << "FiberWorker destroyed while its thread runs";
}

void FiberWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void FiberWorker::WaitUntilSetUp() { set_up_.Wait(); }

void FiberWorker::Join() { thread_.join(); }

void FiberWorker::Run() {
  const std::string name = "spindle-g" + std::to_string(group_->index()) + "w" +
                           std::to_string(index_);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  kernel_thread_id_.store(static_cast<int>(gettid()), std::memory_order_relaxed);
  if (!cpus_.empty()) SetCurrentThreadAffinity(cpus_, affinity_cpus_);
  *CurrentWorkerSlot() = this;
  MarkThisThreadAsRuntimeThread(true);
  // Its first bump of a counter, its first batch of wake-ups, and the first fiber it
  // starts or ends (its live-fiber counters, its stack cache), on hot paths, allocate
  // nothing.
  PrepareThisThreadCounters();
  ReadyBatch::PrepareThisThread();
  PrepareThisThreadFiberCounters();
  StackCache::PrepareThisThread();
  group_->BindWorkerThread(index_);
  if constexpr (kTestSeams) {
    ChaosBindWorker(group_->index(), index_);  // chaos mode's decisions, reproducibly
  }
  FiberEntity* master = GetMasterFiberEntity();
  set_up_.Set();
  BusyPoll& progress = group_->busy_poll();  // what the hog monitor reads
  for (;;) {
    progress.NoteIdle(index_, true);
    FiberEntity* fiber = idle_.FindRunnable();
    if (fiber == nullptr) {
      if (group_->stopping()) break;
      continue;
    }
    progress.NoteIdle(index_, false);
    master->SwitchTo(fiber);
  }
  group_->BindWorkerThread(SchedulingGroup::kNoWorker);
  MarkThisThreadAsRuntimeThread(false);
  *CurrentWorkerSlot() = nullptr;
}

FiberWorker* CurrentFiberWorker() { return *CurrentWorkerSlot(); }

}  // namespace spindle::internal
