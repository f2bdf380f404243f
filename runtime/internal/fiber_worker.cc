// Copyright 2026 The Spindle Authors.

#include "runtime/internal/fiber_worker.h"

#include <string>

#include <pthread.h>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/switch_safe_tls.h"
#include "glog/logging.h"

namespace spindle::internal {
namespace {

thread_local FiberWorker* tls_current_worker = nullptr;

SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(FiberWorker*, tls_current_worker, CurrentWorkerSlot)

}  // namespace

FiberWorker::FiberWorker(SchedulingGroup* group, std::size_t index)
    : group_(group), index_(index) {}

FiberWorker::~FiberWorker() {
  CHECK(!thread_.joinable()) << "FiberWorker destroyed while its thread runs";
}

void FiberWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void FiberWorker::Join() { thread_.join(); }

void FiberWorker::Run() {
  const std::string name = "spindle-g" + std::to_string(group_->index()) + "w" +
                           std::to_string(index_);
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
  *CurrentWorkerSlot() = this;
  MarkThisThreadAsRuntimeThread(true);
  FiberEntity* master = GetMasterFiberEntity();
  for (;;) {
    FiberEntity* fiber = group_->AcquireFiber();
    if (fiber == nullptr) fiber = group_->SpinningAcquireFiber(index_);
    if (fiber == nullptr) fiber = group_->WaitForFiber(index_);
    if (fiber == nullptr) {
      if (group_->stopping()) break;
      continue;
    }
    master->SwitchTo(fiber);
  }
  MarkThisThreadAsRuntimeThread(false);
  *CurrentWorkerSlot() = nullptr;
}

FiberWorker* CurrentFiberWorker() { return *CurrentWorkerSlot(); }

}  // namespace spindle::internal
