// Copyright 2026 The Spindle Authors.
//
// Counting the allocations a piece of work makes (for the tests that show a hot path
// allocates nothing): allocation_counter.cc replaces malloc and its family for the
// whole process (every library, every thread: the workers and the timer threads) in a
// test binary that links it. A binary of its own, then: nothing else in it may rely on
// another malloc replacement. Not in sanitizer builds, whose allocator is the
// sanitizer's own (CountsAllocations() is false there).

#ifndef SPINDLE_RUNTIME_INTERNAL_TESTING_ALLOCATION_COUNTER_H_
#define SPINDLE_RUNTIME_INTERNAL_TESTING_ALLOCATION_COUNTER_H_

#include <cstdint>

namespace spindle::testing {

// Whether this build counts (false under a sanitizer).
bool CountsAllocations();
// Starts counting from zero: every malloc()-family call on any thread counts until
// StopCountingAllocations().
void StartCountingAllocations();
void StopCountingAllocations();
// The calls counted since the last StartCountingAllocations().
std::int64_t CountedAllocations();

}  // namespace spindle::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_TESTING_ALLOCATION_COUNTER_H_
