// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_BUSY_POLL_H_
#define SPINDLE_RUNTIME_INTERNAL_BUSY_POLL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "runtime/internal/idle/group_poller.h"
#include "runtime/internal/idle/group_timers.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {

// The busy workers' share of a group's poller and timers (Go's checkTimers and
// netpoll on the scheduling path): a worker that keeps switching fibers and never goes
// idle still polls the reactor and fires due timers, every 64th switch looking at the
// clock. Owned by its SchedulingGroup (one per group).
//
// Thread-safety: Due/FromIdle for worker w on w's thread only (its counters have one
// writer); SetTimers from the runtime; PollAndFireIfDue from a worker holding no fiber's
// lock; EnsurePollerAwake from any thread.
class BusyPoll {
 public:
  BusyPoll(SchedulingStrategy& strategy, std::size_t workers)
      : strategy_(strategy), workers_(workers) {}
  BusyPoll(const BusyPoll&) = delete;
  BusyPoll& operator=(const BusyPoll&) = delete;

  // The group's timers, fired by busy workers when due (group_timers.h); nullptr
  // removes them. release: pairs with the acquire loads below, which then see the
  // object built.
  void SetTimers(GroupTimers* timers) { timers_.store(timers, std::memory_order_release); }

  // Whether worker `worker` (switching fibers: Yield, Halt) should poll the group's
  // poller or fire its timers now. Every 64th switch looks at the clock. Inline: it is
  // on every switch.
  bool Due(std::size_t worker) {
    if (worker >= workers_) return false;  // not a worker
    if ((++per_worker_[worker].switches & 63) != 0) return false;
    return DueSlow(worker);
  }
  // From a worker holding no fiber's lock (Yield, the idle path): the busy poll and the
  // timers, where due.
  void PollAndFireIfDue();
  // Step 1 of the idle path (idle_path.cc), on worker `worker`'s own stack: poll and
  // fire when ParkFiber() found them due, every 64th pass, or on every pass while the group
  // has a poller.
  void FromIdle(std::size_t worker);
  // Called by a fiber about to park on IO: if nobody holds the poller token while
  // descriptors are registered, wakes a sleeping worker to poll (one that slept on its
  // futex when nothing was registered, or lost the token race).
  void EnsurePollerAwake();

 private:
  __attribute__((noinline)) bool DueSlow(std::size_t worker);

  SchedulingStrategy& strategy_;  // its poller, and WakeOneSleeper
  const std::size_t workers_;
  std::atomic<GroupTimers*> timers_{nullptr};
  // Each written by its worker's thread only.
  struct alignas(64) PerWorker {
    // Switches and idle passes on this worker: every 64th looks at the clock.
    std::uint64_t switches = 0;
    // Due() said yes, and ParkFiber() could not act on it: the idle path polls and fires.
    bool poll_due = false;
  };
  PerWorker per_worker_[kMaxWorkersPerGroup];
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_BUSY_POLL_H_
