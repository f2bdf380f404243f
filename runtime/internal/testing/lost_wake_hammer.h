// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_LOST_WAKE_HAMMER_H_
#define SPINDLE_RUNTIME_INTERNAL_LOST_WAKE_HAMMER_H_

#include <cstddef>

namespace spindle::internal {

// Tests only. Starts a runtime of `workers` workers polling for `spin_us` before they
// sleep, then, `rounds` times, starts one fiber from this plain thread just as the
// workers are going to sleep and expects it to run within 10 s (a gtest failure names
// the round otherwise). `group_size` as --fiber_scheduling_group_size (0: automatic);
// with several groups, the other --fiber_* flags in force (stealing ratios, a fake
// topology) apply. See lost_wake_hammer.cc.
void LostWakeUpHammer(std::size_t workers, int spin_us, int rounds,
                      std::size_t group_size = 0);

// Tests only, in a build with the test seams: the hammer's negative control. With the
// re-check before sleeping (W3 of idle_path.cc) removed, runs the hammer's rounds (one
// group of `workers`) until a round's fiber is stranded: still queued while every worker
// is asleep, seen in 100 looks in a row, which without W3 nothing can end (no producer is
// left to wake anyone). Returns that round, after nudging the fiber out with W3 back on;
// 0 if `max_rounds` passed without one.
int LostWakeUpHammerNegativeControl(std::size_t workers, int spin_us, int max_rounds);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_LOST_WAKE_HAMMER_H_
