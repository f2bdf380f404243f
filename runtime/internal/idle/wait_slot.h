// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
#define SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

#include "fiber/internal/atomic.h"
#include "runtime/internal/idle/group_poller.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/seams/chaos.h"

namespace spindle::internal {

// Where one FiberWorker sleeps: on its parker's futex word, or (WaitPolling) in its
// group's poller. Wake-ups are counted, like a semaphore: a Wake() that
// arrives before the Wait() it is meant for is not lost, the Wait() returns at once.
// Extra wake-ups only make later Wait()s return early, which the worker tolerates (it
// re-checks its queue after every wait). Wait() from the owning worker only; Wake()
// and WakeForever() from any thread.
class WaitSlot {
 public:
  // Blocks until a wake-up is available and consumes it (true), or until `deadline`
  // (false: nothing consumed).
  bool Wait(MonotonicDeadline deadline = MonotonicDeadline::None()) {
    // acquire: pairs with the release in Wake(), so what the waker published before
    // waking (the fiber it pushed) is visible once we return. release: publishes our
    // earlier clearing of polling_ to a Wake() that finds us waiting (WaitPolling()).
    int value = count().fetch_sub(1, std::memory_order_acq_rel) - 1;
    ChaosPause();  // between announcing the sleep and sleeping (chaos.h)
    while (value < 0) {
      // Parks only while the count is still the value we left; a Wake() in between
      // changes it and the park returns at once (no lost wake-up).
      if (!count_.ParkWhile(value, deadline)) {
        // Past the deadline: take back our -1, unless a Wake() got there first (then
        // it is ours). acquire: as above, for the failure case that consumes it.
        if (count().compare_exchange_strong(value, value + 1, std::memory_order_acquire)) {
          return false;
        }
        continue;  // `value` now holds the count a Wake() left
      }
      value = count().load(std::memory_order_acquire);  // acquire: as above
    }
    return true;
  }

  // Like Wait(), but sleeps in `poller` (whose token the
  // caller holds) instead of the futex, and dispatches the events it brings. Returns
  // whether descriptor events arrived (not only a wake-up or the deadline).
  //
  // Why a Wake() is not lost: `polling_` is written before our fetch_sub, which is a
  // release; a Wake() that finds the count negative read it from that fetch_sub (or a
  // later RMW of its release sequence) with acquire, so it sees `poller` and interrupts
  // it rather than waking the futex; the interruption persists (an eventfd count) if
  // it lands before we block. We clear `polling_` only after taking our -1 back, and
  // the next Wait()'s fetch_sub orders that clearing before any Wake() that sees it.
  bool WaitPolling(GroupPoller* poller, MonotonicDeadline deadline) {
    polling_.store(poller, std::memory_order_relaxed);  // relaxed: see above
    // acq_rel: release publishes polling_; acquire as in Wait().
    int value = count().fetch_sub(1, std::memory_order_acq_rel) - 1;
    bool events = false;
    ChaosPause();  // as in Wait()
    if (value < 0) {
      poller->NotePoll(MonotonicNowNs());
      events = poller->Wait(deadline);
      // Take back our -1 unless a Wake() consumed it (then that wake-up is ours).
      // acquire: as in Wait(), when a Wake() got there first.
      value = count().load(std::memory_order_acquire);
      while (value < 0 &&
             !count().compare_exchange_weak(value, value + 1, std::memory_order_acquire)) {
      }
    }
    polling_.store(nullptr, std::memory_order_relaxed);  // relaxed: see above
    // Dispatch after our count is settled: the fibers we make ready may be queued to
    // us, and a producer's Wake() for them is then only banked (no eventfd write).
    if (events) poller->Dispatch();
    return events;
  }

  // Makes one wake-up available, waking the owner if it sleeps.
  void Wake() {
    ChaosPause();  // a waker delayed before its wake-up lands (chaos.h)
    // acq_rel: release pairs with the acquire in Wait(); acquire makes the owner's
    // polling_ store visible when we find it waiting (WaitPolling).
    if (count().fetch_add(1, std::memory_order_acq_rel) < 0) WakeOwner();
  }

  // Makes every current and future Wait() return at once (shutdown).
  void WakeForever() {
    // acq_rel: as in Wake().
    count().exchange(INT_MAX / 2, std::memory_order_acq_rel);
    count_.UnparkAll();
    // relaxed: ordered by the exchange, as in Wake().
    if (GroupPoller* poller = polling_.load(std::memory_order_relaxed)) {
      poller->Interrupt();
    }
  }

 private:
  void WakeOwner() {
    // relaxed: ordered by the caller's acq_rel RMW (see WaitPolling()).
    if (GroupPoller* poller = polling_.load(std::memory_order_relaxed)) {
      poller->Interrupt();
    } else {
      count_.Unpark();
    }
  }

  Atomic<int>& count() { return count_.word(); }

  // The wake-up count: > 0: wake-ups banked; 0: none; -1: the owner sleeps (or is about
  // to).
  alignas(64) Parker count_;
  // The poller the owner sleeps in (WaitPolling), or null (the futex).
  Atomic<GroupPoller*> polling_{nullptr};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
