// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_DEADLINE_H_
#define SPINDLE_IO_DEADLINE_H_

#include <chrono>

namespace spindle::io {

// Deadlines are points on the steady clock (the timer clock); kNoDeadline waits forever.
using Clock = std::chrono::steady_clock;
// A deadline, as the I/O calls take it: a point on Clock.
using Deadline = Clock::time_point;
// The deadline that never comes: a call given it has no time limit of its own.
inline constexpr Deadline kNoDeadline = Deadline::max();

}  // namespace spindle::io

#endif  // SPINDLE_IO_DEADLINE_H_
