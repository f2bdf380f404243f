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
// idle still polls the reactor and fires due timers, every kPollEvery-th switch looking at the
// clock. Owned by its SchedulingGroup (one per group).
//
// Thread-safety: Due/FromIdle for worker w on w's thread only (its counters have one
// writer); SetTimers from the runtime; PollAndFireIfDue from a worker holding no fiber's
// lock; EnsurePollerAwake from any thread.
class BusyPoll {
 public:
  // How often (in switches) a busy worker looks at the clock for due timers and polls.
  // A sleeping fiber's timer fires on its own worker at the first look after its
  // expiry, so the interval bounds how late it fires (the rest is queueing); a look
  // costs a clock read, and none is made while the group has no timer and no poller.
  static constexpr std::uint64_t kPollEvery = 16;

  BusyPoll(SchedulingStrategy& strategy, std::size_t workers)
      : strategy_(strategy), workers_(workers) {}
  BusyPoll(const BusyPoll&) = delete;
  BusyPoll& operator=(const BusyPoll&) = delete;

  // The group's timers, fired by busy workers when due (group_timers.h); nullptr
  // removes them. release: pairs with the acquire loads below, which then see the
  // object built.
  void SetTimers(GroupTimers* timers) { timers_.store(timers, std::memory_order_release); }

  // Whether worker `worker` (switching fibers: Yield, Halt) should poll the group's
  // poller or fire its timers now. Every kPollEvery-th switch looks at the clock (when the
  // group has a poller or a timer pending). Inline: it is
  // on every switch.
  bool Due(std::size_t worker) {
    if (worker >= workers_) return false;  // not a worker
    return DueAtTick(worker, Tick(worker));
  }
  // Due() in two steps, for a caller that knows `worker` is one of ours and uses the
  // count for more (YieldFiber samples readiness with it): counts a switch of worker
  // `worker` and returns the count; then whether a switch that got `tick` should poll.
  // Every count must be asked about (a count never asked about could be every
  // kPollEvery-th one, all along).
  std::uint64_t Tick(std::size_t worker) { return ++per_worker_[worker].switches; }
  bool DueAtTick(std::size_t worker, std::uint64_t tick) {
    if ((tick & (kPollEvery - 1)) != 0) return false;
    return DueSlow(worker);
  }
  // From worker `worker` holding no fiber's lock (Yield, the idle path): the busy poll
  // and the timers (its own first), where due.
  void PollAndFireIfDue(std::size_t worker);
  // The idle path's view of worker `worker`'s own timers (GroupTimers::OwnFrontNs,
  // INT64_MAX without timers), and its note that it sleeps until `ns` for them.
  std::int64_t OwnTimerFrontNs(std::size_t worker) const {
    // acquire: pairs with SetTimers().
    GroupTimers* timers = timers_.load(std::memory_order_acquire);
    return timers == nullptr ? INT64_MAX : timers->OwnFrontNs(worker);
  }
  void NoteSleepingUntil(std::size_t worker, std::int64_t ns) {
    // acquire: pairs with SetTimers().
    if (GroupTimers* timers = timers_.load(std::memory_order_acquire)) {
      timers->NoteSleepingUntil(worker, ns);
    }
  }
  // ---- For the hog monitor (hog_monitor.h): whether worker `worker` is in its idle
  // path (between fibers, searching or asleep) rather than running a fiber. (Its count
  // of fibers made Running is GroupStats::RunProgress; the switch count above stays a
  // plain word: an atomic there makes the yield path reload two fields.)
  bool InIdlePath(std::size_t worker) const {
    return per_worker_[worker].idle.load(std::memory_order_relaxed);  // a snapshot
  }
  // By worker `worker`'s thread, on entering and leaving its idle path (fiber_worker.cc):
  // once per idle episode, not per switch. relaxed: the monitor reads a hint, which it
  // confirms over a whole stall threshold.
  void NoteIdle(std::size_t worker, bool idle) {
    per_worker_[worker].idle.store(idle, std::memory_order_relaxed);
  }

  // Makes worker `worker`'s next idle pass poll and fire (FromIdle), e.g. after it woke
  // for its own timer. From that worker's thread.
  void RequestPoll(std::size_t worker) { per_worker_[worker].poll_due = true; }
  // Step 1 of the idle path (idle_path.cc), on worker `worker`'s own stack: poll and
  // fire when ParkFiber() found them due, every kPollEvery-th pass, or on every pass
  // while the group has a poller.
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
    // Switches and idle passes on this worker: every kPollEvery-th looks at the clock.
    std::uint64_t switches = 0;
    std::atomic<bool> idle{true};  // NoteIdle(): in the idle path (or not started)
    // Due() said yes, and ParkFiber() could not act on it: the idle path polls and fires.
    bool poll_due = false;
  };
  PerWorker per_worker_[kMaxWorkersPerGroup];
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_BUSY_POLL_H_
