// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_THIS_FIBER_H_
#define SPINDLE_FIBER_THIS_FIBER_H_

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

}  // namespace this_fiber
}  // namespace spindle

#endif  // SPINDLE_FIBER_THIS_FIBER_H_
