// Copyright 2026 The Spindle Authors.

#include "runtime/runtime.h"

#include <condition_variable>
#include <mutex>

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
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

}  // namespace spindle
