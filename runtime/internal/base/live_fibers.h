// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_LIVE_FIBERS_H_
#define SPINDLE_RUNTIME_INTERNAL_LIVE_FIBERS_H_

#include <chrono>
#include <cstddef>

namespace spindle::internal {

// Fibers started and not yet finished, over all groups: started minus finished, each
// counted per thread (live_fibers.cc). Thread-safe.
std::size_t GetLiveFiberCount();
// Blocks the calling pthread until GetLiveFiberCount() is 0.
void WaitUntilNoLiveFibers();
// Like WaitUntilNoLiveFibers(), giving up after `timeout`; true if the count reached 0.
bool WaitUntilNoLiveFibersFor(std::chrono::milliseconds timeout);
// For a fiber being started: counts it as live. Every started fiber is counted once and
// uncounted when it has died and its stack is recycled.
void CountFiberStarted(std::size_t n);
// Counts one fiber as finished on this thread (the runtime's exit path, and a fiber run
// inline by its joiner, which never reaches that path).
void CountFiberFinished();
// Registers the calling thread's counters now, so that its first start or finish of a
// fiber allocates nothing: for a runtime thread as it starts (a worker).
void PrepareThisThreadFiberCounters();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_LIVE_FIBERS_H_
