// Copyright 2026 The Spindle Authors.
//
// No lost wake-up: the waiter takes lock_ before it releases the user's mutex and keeps
// it until it is linked in waiters_ (WaitQueue::Wait links, then releases lock_). A
// notifier changes the predicate under the user's mutex and then takes lock_, so it
// either finds the waiter linked or ran before the waiter checked the predicate.
// Lock order: lock_ before the user mutex's own internal lock (taken by its unlock());
// nothing takes them the other way round.

#include "sync/condition_variable.h"

#include "runtime/internal/base/ready_batch.h"

namespace spindle {

bool ConditionVariable::WaitUntil(std::unique_lock<Mutex>& lock,
                                  std::chrono::steady_clock::time_point deadline,
                                  const internal::WaitLimits* limits) {
  internal::UniqueSpinlockGuard guard(lock_);
  lock.unlock();
  const bool notified = waiters_.Wait(guard.unique(), internal::MonotonicDeadline::At(deadline),
                                      internal::WaitKind::kConditionVariable, limits, this) ==
                        internal::WaitResult::kNotified;
  guard.unlock();
  lock.lock();
  return notified;
}

void ConditionVariable::notify_one() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  waiters_.WakeOne();
}

void ConditionVariable::notify_all() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  waiters_.WakeAll();
}

}  // namespace spindle
