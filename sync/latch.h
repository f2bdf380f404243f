// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_LATCH_H_
#define SPINDLE_SYNC_LATCH_H_

#include <chrono>
#include <cstddef>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A single-use countdown, shaped like std::latch, for fibers and plain threads: wait()
// returns once count_down() has been called `count` times in all. Thread-safe.
// Counting below zero stops the process with a message.
class Latch {
 public:
  // Starts at `count`; 0 starts released. A negative `count` stops the process with a
  // message.
  explicit Latch(std::ptrdiff_t count);
  Latch(const Latch&) = delete;
  Latch& operator=(const Latch&) = delete;

  // Subtracts `n`; reaching zero wakes every waiter. Never parks. An `n` below zero or
  // above the count left stops the process with a message.
  void count_down(std::ptrdiff_t n = 1);
  // Whether the count is zero now; never waits.
  bool try_wait() const;
  // Not interruptible (see WaitUntil()).
  void wait() const { Await(std::chrono::steady_clock::time_point::max(), nullptr); }
  // count_down(n), then wait(): not interruptible either. An `n` count_down() refuses
  // stops the process with a message, as there.
  void arrive_and_wait(std::ptrdiff_t n = 1) {
    count_down(n);
    wait();
  }
  // True if the count reached zero, false if `timeout` passed first or the caller's
  // execution context was cancelled (interruptible, as Event::WaitUntil()).
  template <class Rep, class Period>
  bool wait_for(std::chrono::duration<Rep, Period> timeout) const {
    return WaitUntil(std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }
  // wait_for() with an absolute deadline: true if the count reached zero, false if
  // `deadline` came first or the caller's execution context was cancelled or reached
  // its own deadline (interruptible, as Event::WaitUntil()).
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) const {
    return Await(deadline, internal::CurrentWaitLimits());
  }

 private:
  bool Await(std::chrono::steady_clock::time_point deadline,
             const internal::WaitLimits* limits) const;

  mutable internal::Spinlock lock_;
  std::ptrdiff_t count_ ABSL_GUARDED_BY(lock_);
  mutable internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_LATCH_H_
