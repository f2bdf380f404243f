// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_IDLE_RELEASE_H_
#define SPINDLE_FIBER_INTERNAL_IDLE_RELEASE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "gflags/gflags_declare.h"

DECLARE_uint64(fiber_release_delay_ms);

namespace spindle::internal {

// Giving idle memory back to the system, off the hot paths. The pools of fiber stacks
// and of small runtime objects keep what a burst of fibers left behind (so that a burst
// that comes back finds it ready) and register here once they hold more than they keep
// for good; one background thread ("spindle-release", started by the first
// registration) then calls each registered function every `period`. Each call releases
// what stayed idle in its pool since the previous call (the pool's low-water mark), so a
// stack or an object is given back only after it sat unused for a whole period.
//
// Thread-safe. `fn` runs on the release thread, never two at once, and must not call
// Register/UnregisterIdleRelease.
void RegisterIdleRelease(const void* owner, std::chrono::milliseconds period,
                         std::function<void()> fn);
// Removes `owner`'s function; when it returns, the function is not running and will not
// run again. A no-op for an owner that never registered.
void UnregisterIdleRelease(const void* owner);

// Reports what is wrong with a --fiber_release_delay_ms value; empty when valid.
std::string ValidateReleaseDelay(std::uint64_t delay_ms);

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_IDLE_RELEASE_H_
