// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_FIBER_DUMP_H_
#define SPINDLE_RUNTIME_INTERNAL_FIBER_DUMP_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <ostream>
#include <vector>

#include "fiber/internal/fiber_entity.h"

namespace spindle::internal {

// One live fiber as the dump saw it. A plain value.
struct FiberSnapshot {
  std::uint64_t id = 0;
  FiberState state = FiberState::kReady;
  WaitKind wait_kind = WaitKind::kNone;  // meaningful when Waiting
  std::uint64_t joined_fiber = 0;        // waiting on WaitKind::kJoin: whom it joins
  int group = -1;                        // -1: not known (a Ready fiber may be stolen)
  std::uint32_t worker = 0;              // meaningful when Running
  double seconds_in_state = -1;  // how long it has been Waiting; -1: not timed
  bool is_caller = false;    // the fiber that took the dump
  bool not_started = false;  // Ready, never ran
  std::vector<void*> pcs;    // innermost first; empty when not captured
};

// Every fiber that has a stack right now (that is, all but those still queued as
// descriptors), ordered by id. Thread-safe; callable from a fiber or a plain thread. It
// holds the stack registry's lock throughout and each fiber's scheduler lock for a few
// loads and a bounded frame-pointer walk: no fiber is resumed, destroyed or unmapped
// while it is read. At most `max_fibers` are captured (the first the registry holds, then
// ordered by id), so the time under the lock is bounded; `*total` (if not null) gets
// how many fibers have a stack, captured or not.
std::vector<FiberSnapshot> SnapshotFibers(
    std::size_t max_fibers = std::numeric_limits<std::size_t>::max(),
    std::size_t* total = nullptr);

// Writes SnapshotFibers() as text (format in runtime/runtime.h, DumpFibers()),
// symbolized. `live_fibers`: the runtime's count of live fibers, for the "not started"
// figure; `total`: SnapshotFibers()'s (0: as many as `fibers`), for the "not shown"
// line. `between` (if set) runs after each fiber's block, outside every lock: a fiber
// taking the dump yields there, so symbolizing many fibers does not hold its worker.
void WriteFiberDump(std::ostream& out, const std::vector<FiberSnapshot>& fibers,
                    std::size_t live_fibers, std::size_t total = 0,
                    const std::function<void()>& between = nullptr);

// One fiber's block of WriteFiberDump(): its line (id, group, state, time in it) and
// its symbolized stack, or "(stack not captured)".
void WriteFiberBlock(std::ostream& out, const FiberSnapshot& fiber);

// The frame-pointer walk of the dump, for a stack whose frames lie in [sp, high): from
// frame pointer `fp`, writes each frame's return address to `out` (at most `max`),
// innermost first, while the chain stays inside the range and grows strictly; returns
// how many. Reads nothing outside [sp, high) and allocates nothing: callable from a
// signal handler on the stack's own thread (the hog monitor's capture) or on a stack
// nobody runs (the dump, under the fiber's lock).
std::size_t WalkFramePointers(std::uintptr_t sp, std::uintptr_t high, std::uintptr_t fp,
                              void** out, std::size_t max);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FIBER_DUMP_H_
