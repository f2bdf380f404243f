// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_SEMAPHORE_H_
#define SPINDLE_SYNC_SEMAPHORE_H_

#include <chrono>
#include <cstddef>
#include <limits>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "glog/logging.h"
#include "runtime/internal/group/ready_batch.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A counting semaphore, shaped like std::counting_semaphore, for fibers and plain
// threads. release() hands a permit straight to the oldest waiter (FIFO), so waiters
// are never overtaken by later try_acquire() calls. Thread-safe. Releasing past
// `kLeastMaxValue` stops the process with a message.
template <std::ptrdiff_t kLeastMaxValue = std::numeric_limits<std::ptrdiff_t>::max()>
class CountingSemaphore {
 public:
  static constexpr std::ptrdiff_t max() { return kLeastMaxValue; }

  explicit CountingSemaphore(std::ptrdiff_t desired) : count_(desired) {
    CHECK(desired >= 0 && desired <= kLeastMaxValue)
        << "spindle::CountingSemaphore: initial count " << desired
        << " is outside [0, " << kLeastMaxValue << "]";
  }
  CountingSemaphore(const CountingSemaphore&) = delete;
  CountingSemaphore& operator=(const CountingSemaphore&) = delete;

  void release(std::ptrdiff_t n = 1) {
    internal::ReadyBatch batch;
    internal::SpinlockGuard guard(lock_);
    CHECK(n >= 0 && n <= kLeastMaxValue - count_)
        << "spindle::CountingSemaphore::release(" << n << ") with count " << count_
        << " exceeds max() = " << kLeastMaxValue;
    // Each permit goes to a waiter if one can take it, else to the count.
    for (; n > 0 && waiters_.WakeOne(); --n) {
    }
    count_ += n;
  }

  // Not interruptible (see try_acquire_until()).
  void acquire() { Acquire(std::chrono::steady_clock::time_point::max(), nullptr); }

  bool try_acquire() {
    internal::SpinlockGuard guard(lock_);
    if (count_ == 0) return false;
    --count_;
    return true;
  }

  template <class Rep, class Period>
  bool try_acquire_for(std::chrono::duration<Rep, Period> timeout) {
    return try_acquire_until(
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }

  // True with a permit; false if `deadline` came first or the caller's execution
  // context was cancelled (interruptible, as Event::WaitUntil()).
  bool try_acquire_until(std::chrono::steady_clock::time_point deadline) {
    return Acquire(deadline, internal::CurrentWaitLimits());
  }

 private:
  bool Acquire(std::chrono::steady_clock::time_point deadline,
               const internal::WaitLimits* limits) {
    internal::UniqueSpinlockGuard guard(lock_);
    if (count_ > 0 && waiters_.empty()) {
      --count_;
      return true;
    }
    // Woken means a release() handed us its permit.
    return waiters_.Wait(guard.unique(), deadline, internal::WaitKind::kSemaphore, limits) ==
           internal::TimedWaiter::Result::kNotified;
  }

  internal::Spinlock lock_;
  std::ptrdiff_t count_ ABSL_GUARDED_BY(lock_);
  internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

using BinarySemaphore = CountingSemaphore<1>;

}  // namespace spindle

#endif  // SPINDLE_SYNC_SEMAPHORE_H_
