// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
#define SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

#include "runtime/internal/chaos.h"
#include "runtime/internal/futex.h"
#include "runtime/internal/group_poller.h"

namespace spindle::internal {

// Where one FiberWorker sleeps: on a futex, or (WaitPolling) in its group's poller. Wake-ups are counted, like a semaphore: a Wake() that
// arrives before the Wait() it is meant for is not lost, the Wait() returns at once.
// Extra wake-ups only make later Wait()s return early, which the worker tolerates (it
// re-checks its queue after every wait). Wait() from the owning worker only; Wake()
// and WakeForever() from any thread.
class WaitSlot {
 public:
  // Blocks until a wake-up is available and consumes it.
  void Wait() {
    // acquire: pairs with the release in Wake(), so what the waker published before
    // waking (the fiber it pushed) is visible once we return. release: publishes our
    // earlier clearing of polling_ to a Wake() that finds us waiting (WaitPolling()).
    int value = count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    ChaosPause();  // between announcing the sleep and sleeping (chaos.h)
    while (value < 0) {
      // Sleeps only while the count is still the value we left; a Wake() in between
      // changes it and the futex returns at once (no lost wake-up).
      FutexWait(&count_, value);
      // acquire: as above.
      value = count_.load(std::memory_order_acquire);
    }
  }

  // Like Wait(), but gives up at `deadline_ns` (CLOCK_MONOTONIC, the steady_clock epoch).
  // Returns true if a wake-up was consumed, false on time-out (nothing consumed).
  bool WaitUntil(std::int64_t deadline_ns) {
    // acq_rel: as in Wait().
    int value = count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    ChaosPause();  // as in Wait()
    while (value < 0) {
      timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      if (now.tv_sec * std::int64_t{1000000000} + now.tv_nsec >= deadline_ns) {
        // Take back our -1, unless a Wake() got there first (then it is ours). acquire:
        // as in Wait(), for the failure case that consumes the wake-up.
        if (count_.compare_exchange_strong(value, value + 1, std::memory_order_acquire)) {
          return false;
        }
        continue;  // `value` now holds the count a Wake() left
      }
      FutexWaitUntil(&count_, value, deadline_ns);
      value = count_.load(std::memory_order_acquire);  // acquire: as in Wait()
    }
    return true;
  }

  // Like WaitUntil() (`deadline_ns` -1: none), but sleeps in `poller` (whose token the
  // caller holds) instead of the futex, and dispatches the events it brings. Returns
  // whether descriptor events arrived (not only a wake-up or the deadline).
  //
  // Why a Wake() is not lost: `polling_` is written before our fetch_sub, which is a
  // release; a Wake() that finds the count negative read it from that fetch_sub (or a
  // later RMW of its release sequence) with acquire, so it sees `poller` and interrupts
  // it rather than waking the futex; the interruption persists (an eventfd count) if
  // it lands before we block. We clear `polling_` only after taking our -1 back, and
  // the next Wait()'s fetch_sub orders that clearing before any Wake() that sees it.
  bool WaitPolling(GroupPoller* poller, std::int64_t deadline_ns) {
    polling_.store(poller, std::memory_order_relaxed);  // relaxed: see above
    // acq_rel: release publishes polling_; acquire as in Wait().
    int value = count_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    bool events = false;
    ChaosPause();  // as in Wait()
    if (value < 0) {
      poller->NotePoll(MonotonicNowNs());
      events = poller->Wait(deadline_ns);
      // Take back our -1 unless a Wake() consumed it (then that wake-up is ours).
      // acquire: as in Wait(), when a Wake() got there first.
      value = count_.load(std::memory_order_acquire);
      while (value < 0 &&
             !count_.compare_exchange_weak(value, value + 1, std::memory_order_acquire)) {
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
    if (count_.fetch_add(1, std::memory_order_acq_rel) < 0) WakeOwner();
  }

  // Makes every current and future Wait() return at once (shutdown).
  void WakeForever() {
    // acq_rel: as in Wake().
    count_.exchange(INT_MAX / 2, std::memory_order_acq_rel);
    FutexWake(&count_, INT_MAX);
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
      FutexWake(&count_);
    }
  }

  // > 0: wake-ups banked; 0: none; -1: the owner sleeps (or is about to).
  alignas(64) std::atomic<int> count_{0};
  // The poller the owner sleeps in (WaitPolling), or null (the futex).
  std::atomic<GroupPoller*> polling_{nullptr};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
