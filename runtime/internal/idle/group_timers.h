// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_

#include <cstdint>

namespace spindle::internal {

// The scheduler's view of a scheduling group's timers (timer/internal/timer_worker.h):
// the seam through which busy workers fire timers that are due, without the scheduler
// knowing what a timer is.
//
// Why workers fire timers at all: the group's TimerWorker is one more thread. When the
// workers keep every CPU busy, it waits for a CPU like any thread, up to a scheduler
// slice (0.75-3 ms) at a time, and every timer of its next round is that late (spindle_
// bench's sleep workload on 2 CPUs: 0.67 ms late on average at the moment of firing). A
// busy worker looks at the next expiry every 64th switch (SchedulingGroup::
// BusyPollDue, with the busy poll of the reactor) and, when a timer is due, fires the
// due ones itself, on its own stack, holding no fiber's lock; the TimerWorker thread
// still fires them when the workers are idle or stuck in long fibers.
//
// Thread-safety: Due() from any thread (a relaxed load); FireDue() from a worker thread
// holding no fiber's lock. Set on a group by the composition root
// (BusyPoll::SetTimers) and cleared before the timers stop; FireDue() after
// the stop does nothing.
class GroupTimers {
 public:
  virtual ~GroupTimers() = default;
  // Whether a timer may be due at `now_ns` (CLOCK_MONOTONIC). A hint: FireDue() decides.
  virtual bool Due(std::int64_t now_ns) const = 0;
  // Fires the timers due at `now_ns`, unless another thread is firing them right now.
  virtual void FireDue(std::int64_t now_ns) = 0;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_
