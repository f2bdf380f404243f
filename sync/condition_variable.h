// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_CONDITION_VARIABLE_H_
#define SPINDLE_SYNC_CONDITION_VARIABLE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"
#include "sync/mutex.h"

namespace spindle {

// A condition variable over spindle::Mutex, for fibers and plain threads alike (a
// waiting fiber parks, a waiting thread blocks; either side may notify). Like
// std::condition_variable, waits may wake spuriously only in the sense of the
// predicate overloads' loop; a notify reaches a waiter that was waiting when it was
// issued. Thread-safe. Destroying it with waiters stops the process with a message.
class ConditionVariable {
 public:
  ConditionVariable() = default;
  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  // Not interruptible (see wait_until()).
  void wait(std::unique_lock<Mutex>& lock) {
    WaitUntil(lock, std::chrono::steady_clock::time_point::max(), nullptr);
  }

  template <class Predicate>
  void wait(std::unique_lock<Mutex>& lock, Predicate predicate) {
    while (!predicate()) wait(lock);
  }

  // Interruptible: returns (with `lock` held again) at `deadline` or when the caller's
  // execution context is cancelled (ExecutionContext::Cancel(); its deadline applies
  // too), both reported as timeout (the predicate overloads: the predicate's value); a
  // caller tells a cancellation by ExecutionContext::CurrentStopToken().
  std::cv_status wait_until(std::unique_lock<Mutex>& lock,
                            std::chrono::steady_clock::time_point deadline) {
    return WaitUntil(lock, deadline, internal::CurrentWaitLimits()) ? std::cv_status::no_timeout
                                                                    : std::cv_status::timeout;
  }

  template <class Predicate>
  bool wait_until(std::unique_lock<Mutex>& lock, std::chrono::steady_clock::time_point deadline,
                  Predicate predicate) {
    const internal::WaitLimits* limits = internal::CurrentWaitLimits();
    while (!predicate()) {
      if (!WaitUntil(lock, deadline, limits)) return predicate();
    }
    return true;
  }

  template <class Rep, class Period>
  std::cv_status wait_for(std::unique_lock<Mutex>& lock,
                          std::chrono::duration<Rep, Period> timeout) {
    return wait_until(lock, Deadline(timeout));
  }

  template <class Rep, class Period, class Predicate>
  bool wait_for(std::unique_lock<Mutex>& lock, std::chrono::duration<Rep, Period> timeout,
                Predicate predicate) {
    return wait_until(lock, Deadline(timeout), std::move(predicate));
  }

  void notify_one();
  void notify_all();

 private:
  template <class Rep, class Period>
  static std::chrono::steady_clock::time_point Deadline(std::chrono::duration<Rep, Period> d) {
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }
  // Returns false on timeout or cancellation (`limits`: an interruptible wait's). `lock`
  // is held again on return either way.
  bool WaitUntil(std::unique_lock<Mutex>& lock, std::chrono::steady_clock::time_point deadline,
                 const internal::WaitLimits* limits);

  internal::Spinlock lock_;
  internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_CONDITION_VARIABLE_H_
