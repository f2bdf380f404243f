// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_

#include <cstddef>
#include <cstdint>

namespace spindle::internal {

// The scheduler's view of a scheduling group's timers (timer/internal/timer_worker.h):
// the seam through which busy workers fire timers that are due, without the scheduler
// knowing what a timer is.
//
// Why workers fire timers at all: the group's TimerWorker is one more thread. When the
// workers keep every CPU busy, it waits for a CPU like any thread, up to a scheduler
// slice at a time, and every timer of its next round is that late. A busy worker looks
// at the next expiry every BusyPoll::kPollEvery-th switch (BusyPoll::Due, with the busy
// poll of the reactor) and, when a timer is due, fires the due ones itself, on its own
// stack, holding no fiber's lock; the TimerWorker thread
// still fires them when the workers are idle or stuck in long fibers.
//
// Each worker also has timers of its own (the ones it armed: a sleeping fiber's, a
// deadline wait's), which it fires first when they are due: the fibers they wake stay
// on the worker that ran them.
//
// Thread-safety: Due() from any thread (relaxed loads); FireDue() from a worker thread
// holding no fiber's lock. Set on a group by the composition root
// (BusyPoll::SetTimers) and cleared before the timers stop; FireDue() after
// the stop does nothing.
class GroupTimers {
 public:
  virtual ~GroupTimers() = default;
  // Whether a timer of worker `worker` (its number in the group) or of the group may be
  // due at `now_ns` (CLOCK_MONOTONIC). A hint: FireDue() decides.
  virtual bool Due(std::size_t worker, std::int64_t now_ns) const = 0;
  // Fires the timers due at `now_ns`, unless another thread is firing them right now.
  virtual void FireDue(std::size_t worker, std::int64_t now_ns) = 0;
  // Whether worker `worker` or the group has any timer pending (relaxed loads, no
  // clock): when not, a busy worker skips its look at the clock.
  virtual bool AnyPending(std::size_t worker) const = 0;
  // The earliest expiry among worker `worker`'s own timers (a lower bound; INT64_MAX:
  // none). Only that worker arms them, so while it sleeps nothing earlier arrives: an
  // idle worker sleeps until then at the latest, and fires them itself.
  virtual std::int64_t OwnFrontNs(std::size_t worker) const = 0;
  // Worker `worker` sleeps until `ns` at the latest to fire its own timers (INT64_MAX:
  // it no longer does): the timer thread then leaves that queue's front to it, as the
  // fallback only (timer_worker.cc).
  virtual void NoteSleepingUntil(std::size_t worker, std::int64_t ns) = 0;
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_TIMERS_H_
