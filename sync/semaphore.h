// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_SEMAPHORE_H_
#define SPINDLE_SYNC_SEMAPHORE_H_

#include <chrono>
#include <cstddef>
#include <limits>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/wait_types.h"
#include "sync/internal/wait_queue.h"

namespace spindle {
namespace internal {

// What every CountingSemaphore<N> shares, out of line (semaphore.cc): the count, its
// waiters, and the checks of the permits against the semaphore's max(). Thread-safe.
class SemaphoreCore {
 public:
  // Stops the process with a message if `desired` is outside [0, max].
  SemaphoreCore(std::ptrdiff_t desired, std::ptrdiff_t max);
  SemaphoreCore(const SemaphoreCore&) = delete;
  SemaphoreCore& operator=(const SemaphoreCore&) = delete;

  // Each permit goes to a waiter if one can take it, else to the count. Stops the
  // process with a message if the count would pass `max`.
  void Release(std::ptrdiff_t n, std::ptrdiff_t max);
  bool TryAcquire();
  // Woken means a Release() handed the caller its permit.
  bool Acquire(std::chrono::steady_clock::time_point deadline, const WaitLimits* limits);

 private:
  Spinlock lock_;
  std::ptrdiff_t count_ ABSL_GUARDED_BY(lock_);
  WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

}  // namespace internal

// A counting semaphore, shaped like std::counting_semaphore, for fibers and plain
// threads. release() hands a permit straight to the oldest waiter (FIFO), so waiters
// are never overtaken by later try_acquire() calls. Thread-safe. Releasing past
// `kLeastMaxValue` stops the process with a message.
template <std::ptrdiff_t kLeastMaxValue = std::numeric_limits<std::ptrdiff_t>::max()>
class CountingSemaphore {
 public:
  // The most permits the semaphore may hold: exactly kLeastMaxValue.
  static constexpr std::ptrdiff_t max() { return kLeastMaxValue; }

  // Starts with `desired` permits. A `desired` outside [0, max()] stops the process
  // with a message.
  explicit CountingSemaphore(std::ptrdiff_t desired) : core_(desired, kLeastMaxValue) {}
  CountingSemaphore(const CountingSemaphore&) = delete;
  CountingSemaphore& operator=(const CountingSemaphore&) = delete;

  // Adds `n` permits: each goes to the oldest waiter while any waits, the rest to the
  // count. Never parks. A negative `n`, or a count that would pass max(), stops the
  // process with a message.
  void release(std::ptrdiff_t n = 1) { core_.Release(n, kLeastMaxValue); }

  // Not interruptible (see try_acquire_until()).
  void acquire() { core_.Acquire(std::chrono::steady_clock::time_point::max(), nullptr); }

  // Takes a permit if one is free now; never waits.
  bool try_acquire() { return core_.TryAcquire(); }

  // try_acquire_until() with a deadline `timeout` from now (steady clock).
  template <class Rep, class Period>
  bool try_acquire_for(std::chrono::duration<Rep, Period> timeout) {
    return try_acquire_until(
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }

  // True with a permit; false if `deadline` came first or the caller's execution
  // context was cancelled (interruptible, as Event::WaitUntil()).
  bool try_acquire_until(std::chrono::steady_clock::time_point deadline) {
    return core_.Acquire(deadline, internal::CurrentWaitLimits());
  }

 private:
  internal::SemaphoreCore core_;
};

// A semaphore of at most one permit: releasing a second one stops the process.
using BinarySemaphore = CountingSemaphore<1>;

}  // namespace spindle

#endif  // SPINDLE_SYNC_SEMAPHORE_H_
