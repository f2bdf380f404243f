// Copyright 2026 The Spindle Authors.
//
// Where continuations run. A continuation runs on the stack of whoever completes its
// future, and completing a promise inside a continuation runs the next one deeper on
// the same stack: a chain of N Then()s attached before the first value arrives
// recurses N deep. A fiber's stack is small (128 KiB by default), so a continuation
// that finds less than 32 KiB left starts over at the bottom of a new fiber instead.
// A plain thread (8 MiB stacks; its stack bounds are not known cheaply) counts its
// continuation depth and hops at 256. Hopping costs one fiber start, and only deep
// chains pay it.

#include "sync/future.h"

#include "fiber/internal/fiber_entity.h"
#include "glog/logging.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/runtime_impl.h"

namespace spindle::internal {

void FutureMisuse(const char* message) { LOG(FATAL) << message; }
namespace {

constexpr std::ptrdiff_t kFiberStackReserve = 32 * 1024;
constexpr int kThreadDepthLimit = 256;

// A plain thread's continuation depth. Fibers never count here: they may migrate
// between threads while a continuation is on their stack.
thread_local int tls_thread_depth = 0;

// Whether the caller runs on a fiber (not a plain thread's master context).
bool InFiber() {
  const FiberEntity* self = GetCurrentFiberEntity();
  return self != nullptr && !self->is_master();
}

}  // namespace

bool ContinuationMustHop() {
  if (!Runtime::IsRunning()) return false;  // nowhere to hop to
  if (InFiber()) {
    const char* here = static_cast<const char*>(__builtin_frame_address(0));
    return here - GetCurrentFiberEntity()->stack().base < kFiberStackReserve;
  }
  return tls_thread_depth >= kThreadDepthLimit;
}

void HopToNewFiber(absl::AnyInvocable<void()> f) {
  if (!Runtime::IsRunning()) {
    f();
    return;
  }
  // A plain start into the nearest group (what StartFiberDetached does, from below the
  // fiber layer: futures include nothing above //sync).
  Runtime::Get().NearestGroup()->StartFiber(NewFiberDesc(std::move(f)));
}

ContinuationDepth::ContinuationDepth() : counted_(!InFiber()) {
  if (counted_) ++tls_thread_depth;
}

ContinuationDepth::~ContinuationDepth() {
  if (counted_) --tls_thread_depth;
}

void WaitForFuture(Event& ready) {
  const ScopedWaitKind kind(WaitKind::kFuture);
  ready.Wait();
}

bool WaitForFutureUntil(Event& ready, std::chrono::steady_clock::time_point deadline) {
  const ScopedWaitKind kind(WaitKind::kFuture);
  return ready.WaitUntil(deadline);
}

}  // namespace spindle::internal
