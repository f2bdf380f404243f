// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
#define SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

#include "runtime/internal/futex.h"

namespace spindle::internal {

// Where one FiberWorker sleeps. Wake-ups are counted, like a semaphore: a Wake() that
// arrives before the Wait() it is meant for is not lost, the Wait() returns at once.
// Extra wake-ups only make later Wait()s return early, which the worker tolerates (it
// re-checks its queue after every wait). Wait() from the owning worker only; Wake()
// and WakeForever() from any thread.
class WaitSlot {
 public:
  // Blocks until a wake-up is available and consumes it.
  void Wait() {
    // acquire: pairs with the release in Wake(), so what the waker published before
    // waking (the fiber it pushed) is visible once we return.
    int value = count_.fetch_sub(1, std::memory_order_acquire) - 1;
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
    // acquire: as in Wait().
    int value = count_.fetch_sub(1, std::memory_order_acquire) - 1;
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

  // Makes one wake-up available, waking the owner if it sleeps.
  void Wake() {
    // release: pairs with the acquire in Wait().
    if (count_.fetch_add(1, std::memory_order_release) < 0) FutexWake(&count_);
  }

  // Makes every current and future Wait() return at once (shutdown).
  void WakeForever() {
    // release: as in Wake().
    count_.store(INT_MAX / 2, std::memory_order_release);
    FutexWake(&count_, INT_MAX);
  }

 private:
  // > 0: wake-ups banked; 0: none; -1: the owner sleeps (or is about to).
  alignas(64) std::atomic<int> count_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_WAIT_SLOT_H_
