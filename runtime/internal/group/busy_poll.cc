// Copyright 2026 The Spindle Authors.

#include "runtime/internal/group/busy_poll.h"

#include "runtime/internal/base/parker.h"

namespace spindle::internal {

bool BusyPoll::DueSlow(std::size_t worker) {
  PerWorker& self = per_worker_[worker];
  GroupPoller* poller = strategy_.poller();
  // acquire: pairs with SetTimers().
  GroupTimers* timers = timers_.load(std::memory_order_acquire);
  if (poller == nullptr && (timers == nullptr || !timers->AnyPending(worker))) return false;
  const std::int64_t now = MonotonicNowNs();
  self.poll_due = (poller != nullptr && poller->PollDue(now)) ||
                  (timers != nullptr && timers->Due(worker, now));
  return self.poll_due;
}

void BusyPoll::PollAndFireIfDue(std::size_t worker) {
  GroupPoller* poller = strategy_.poller();
  // acquire: pairs with SetTimers().
  GroupTimers* timers = timers_.load(std::memory_order_acquire);
  if (poller == nullptr && timers == nullptr) return;
  const std::int64_t now = MonotonicNowNs();
  if (poller != nullptr && poller->PollDue(now)) {
    // A worker whose own queue is full leaves the events in the kernel (its next pass,
    // or an idle sibling's poll, takes them): see PollBudget(). Never for long: past
    // kStarvedPollNs without a poll it takes one event anyway.
    std::size_t budget = strategy_.PollBudget(worker);
    if (budget == 0 && poller->PollStarved(now)) budget = 1;
    if (budget != 0 && poller->PollNow(now, budget)) strategy_.WakeOneSleeper();
  }
  // The fibers it wakes are queued as a timer round (ReadyBatch), like the TimerWorker's.
  if (timers != nullptr && timers->Due(worker, now)) timers->FireDue(worker, now);
}

void BusyPoll::FromIdle(std::size_t worker) {
  // With a poller, every pass looks at the clock, as a reactor's latency wants; for the
  // timers alone, only when ParkFiber() found them due or every kPollEvery-th pass (a
  // clock read on every fiber's exit weighs on spawn-heavy work).
  PerWorker& self = per_worker_[worker];
  if (self.poll_due || (++self.switches & (kPollEvery - 1)) == 0 ||
      strategy_.poller() != nullptr) {
    self.poll_due = false;
    PollAndFireIfDue(worker);
  }
}

void BusyPoll::EnsurePollerAwake() {
  GroupPoller* poller = strategy_.poller();
  // The token is free (nobody blocks in epoll_wait) although something is registered:
  // a sleeping worker, if any, becomes the poller; busy ones poll as they switch.
  if (poller != nullptr && poller->vacant() && poller->HasInterest()) {
    strategy_.WakeOneSleeper();
  }
}

}  // namespace spindle::internal
