// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_THIS_FIBER_H_
#define SPINDLE_FIBER_THIS_FIBER_H_

#include <chrono>
#include <cstdint>

namespace spindle {

// True when the caller runs in a fiber (not on a plain thread or a worker's own loop).
bool IsFiberContextPresent();

namespace this_fiber {

// Lets other ready fibers of this scheduling group run first; returns at once if none
// is ready. On a plain thread it calls std::this_thread::yield().
void Yield();

// The calling fiber's id; 0 on a plain thread.
std::uint64_t GetId();

// Parks the calling fiber until `deadline`; its worker runs other fibers meanwhile. On
// a plain thread, sleeps the thread. Interruptible: in an execution context
// (fiber/execution_context.h) the sleep also ends when the context is cancelled or at
// its deadline, if that comes first. True if it slept until `deadline` (never earlier);
// false if it ended early that way.
bool SleepUntil(std::chrono::steady_clock::time_point deadline);

// SleepUntil(now + duration).
template <class Rep, class Period>
bool SleepFor(std::chrono::duration<Rep, Period> duration) {
  return SleepUntil(std::chrono::steady_clock::now() +
                    std::chrono::duration_cast<std::chrono::steady_clock::duration>(duration));
}

}  // namespace this_fiber
}  // namespace spindle

#endif  // SPINDLE_FIBER_THIS_FIBER_H_
