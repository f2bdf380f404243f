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

  // Releases `lock`'s mutex, waits for a notify (a fiber parks, a thread blocks), and
  // returns with it locked again. `lock` must own its mutex: otherwise
  // std::unique_lock::unlock() throws std::system_error and nothing waits. Not
  // interruptible (see wait_until()).
  void wait(std::unique_lock<Mutex>& lock) {
    WaitUntil(lock, std::chrono::steady_clock::time_point::max(), nullptr);
  }

  // Waits as wait() until `predicate()` (called with the mutex held) is true; returns at
  // once if it is already. Not interruptible.
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

  // Waits as the overload above until `predicate()` (called with the mutex held) is
  // true: true once it is; at the deadline or a cancellation, the predicate's value.
  template <class Predicate>
  bool wait_until(std::unique_lock<Mutex>& lock, std::chrono::steady_clock::time_point deadline,
                  Predicate predicate) {
    const internal::WaitLimits* limits = internal::CurrentWaitLimits();
    while (!predicate()) {
      if (!WaitUntil(lock, deadline, limits)) return predicate();
    }
    return true;
  }

  // wait_until() with a deadline `timeout` from now (steady clock), with or without a
  // predicate; interruptible as it is.
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

  // Wakes the oldest waiter that is waiting now; nothing if none is (a later wait is not
  // woken by it). Callable from any fiber or thread, with or without the mutex held;
  // never parks.
  void notify_one();
  // Wakes every waiter that is waiting now, as notify_one() wakes one: nothing if none
  // is, from any fiber or thread, with or without the mutex held; never parks.
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
