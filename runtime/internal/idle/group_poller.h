// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GROUP_POLLER_H_
#define SPINDLE_RUNTIME_INTERNAL_GROUP_POLLER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <ctime>

#include "fiber/internal/atomic.h"
#include "runtime/internal/base/parker.h"

namespace spindle::internal {

// The scheduler's view of a scheduling group's event source (the io/ reactor): the
// seam through which a layer above plugs into the group's one idle path without the
// scheduler knowing what it polls. See io/internal/reactor.cc for the design.
//
// How the scheduler uses it (scheduling_strategy.cc, wait_slot.h, scheduling_group.cc):
// - A worker about to sleep (W4 of either strategy) that wins the poller token, while
//   the poller has interest, sleeps in Wait() instead of on its futex. Its WaitSlot
//   records that, so a producer's Wake() calls Interrupt() instead of a futex wake: a
//   fiber made ready by a timer, a mutex or another thread reaches it at once.
// - Busy workers poll without blocking every so often (BusyPoll::PollAndFireIfDue), so events are seen
//   when no worker goes idle.
//
// Thread-safety: TryAcquire/Release/HasInterest/Interrupt from any thread; Wait and
// Dispatch by the token holder only. Lives as long as the process (groups come and go
// with StartRuntime/TerminateRuntime; a group only points at it).
class GroupPoller {
 public:
  virtual ~GroupPoller() = default;

  // Whether anything is registered that events could arrive for (else polling is
  // pointless and an idle worker sleeps on its futex).
  virtual bool HasInterest() const = 0;
  // Holder only: waits until events arrive, Interrupt() is called, or `deadline`
  // (MonotonicDeadline::Expired(): do not block), and keeps at most `max_events` events
  // (>= 1; the rest stay in the kernel, in order, for the next Wait()) for Dispatch().
  // Returns whether any descriptor event (not an interruption) arrived.
  virtual bool Wait(MonotonicDeadline deadline, std::size_t max_events) = 0;
  bool Wait(MonotonicDeadline deadline) { return Wait(deadline, SIZE_MAX); }
  // Holder only: makes the fibers waiting for the events Wait() kept ready (through
  // their groups' usual "make ready" path).
  virtual void Dispatch() = 0;
  // Makes a current or the next Wait() return (an eventfd write; it persists, so one
  // that lands before the holder blocks is not lost).
  virtual void Interrupt() = 0;

  // Statistics for the runtime's metrics (relaxed snapshots): Wait() calls, and the
  // descriptor events they returned.
  struct Counters {
    std::uint64_t polls = 0;
    std::uint64_t events = 0;
  };
  virtual Counters counters() const = 0;

  // The poller token: at most one thread at a time waits or dispatches.
  bool TryAcquire() {
    // relaxed load first: a failed exchange would still write the line. acquire on
    // success: pairs with Release(), so the last holder's dispatch is visible.
    return !held_.load(std::memory_order_relaxed) &&
           !held_.exchange(true, std::memory_order_acquire);
  }
  // For a worker about to sleep: the token, or else a note that a sleeper wanted it,
  // so that the holder's Release() reports that someone should be woken to poll
  // (otherwise a holder that goes on to run a long fiber leaves nobody polling while
  // we sleep on our futex).
  bool TryAcquireOrMarkWanted() {
    if (TryAcquire()) return true;
    // seq_cst, with the exchange below and Release()'s store and load: store-buffering
    // pairs; either we get the token or the releaser sees our mark.
    wanted_.store(true, std::memory_order_seq_cst);
    return !held_.exchange(true, std::memory_order_seq_cst);
  }
  // Returns whether a sleeper wanted the token meanwhile: the caller then wakes one
  // sleeping worker of the group (after clearing its own sleeping bit, if it has one).
  [[nodiscard]] bool Release() {
    held_.store(false, std::memory_order_seq_cst);  // seq_cst: see TryAcquireOrMarkWanted()
    return wanted_.load(std::memory_order_seq_cst) &&
           wanted_.exchange(false, std::memory_order_acq_rel);
  }
  // Whether nobody holds the token (a snapshot).
  bool vacant() const { return !held_.load(std::memory_order_relaxed); }  // relaxed: hint

  // Whether a busy worker should poll now: something is registered, nobody holds the
  // token, and the last poll began at least kBusyPollIntervalNs before `now_ns`.
  bool PollDue(std::int64_t now_ns) const {
    // relaxed: hints; a late or early poll only moves the next one.
    return now_ns - last_poll_ns_.load(std::memory_order_relaxed) >= kBusyPollIntervalNs &&
           !held_.load(std::memory_order_relaxed) && HasInterest();
  }
  // A non-blocking poll (when the token is free): dispatches what it finds, at most
  // `max_events` (>= 1) events. Call it where the calling thread holds no fiber's
  // scheduler lock (Dispatch() takes them). Returns Release()'s answer: wake a sleeper
  // to poll.
  [[nodiscard]] bool PollNow(std::int64_t now_ns, std::size_t max_events = SIZE_MAX) {
    if (!TryAcquire()) return false;
    NotePoll(now_ns);
    if (Wait(MonotonicDeadline::Expired(), max_events)) Dispatch();
    return Release();
  }
  // Records a poll at `now_ns` (holders call it as they start waiting).
  void NotePoll(std::int64_t now_ns) {
    last_poll_ns_.store(now_ns, std::memory_order_relaxed);  // relaxed: a hint
  }

  // Whether no poll began in the kStarvedPollNs before `now_ns` (a hint).
  bool PollStarved(std::int64_t now_ns) const {
    // relaxed: a hint, as PollDue().
    return now_ns - last_poll_ns_.load(std::memory_order_relaxed) >= kStarvedPollNs;
  }

  // Busy workers look at least this often (while fibers keep switching on them).
  static constexpr std::int64_t kBusyPollIntervalNs = 100'000;
  // A busy worker whose queue has no room (SchedulingStrategy::PollBudget) polls
  // anyway, for one event, once nobody has polled for this long: workers that keep
  // their queues exactly full must not leave the network unpolled.
  static constexpr std::int64_t kStarvedPollNs = 1'000'000;

 private:
  alignas(64) Atomic<bool> held_{false};
  Atomic<bool> wanted_{false};
  Atomic<std::int64_t> last_poll_ns_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GROUP_POLLER_H_
