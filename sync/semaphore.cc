// Copyright 2026 The Spindle Authors.

#include "sync/semaphore.h"

#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle::internal {

SemaphoreCore::SemaphoreCore(std::ptrdiff_t desired, std::ptrdiff_t max) : count_(desired) {
  CHECK(desired >= 0 && desired <= max) << "spindle::CountingSemaphore: initial count "
                                        << desired << " is outside [0, " << max << "]";
}

void SemaphoreCore::Release(std::ptrdiff_t n, std::ptrdiff_t max) {
  ReadyBatch batch;  // the woken waiters are queued after the lock is released
  SpinlockGuard guard(lock_);
  CHECK(n >= 0 && n <= max - count_)
      << "spindle::CountingSemaphore::release(" << n << ") with count " << count_
      << " exceeds max() = " << max;
  for (; n > 0 && waiters_.WakeOne(); --n) {
  }
  count_ += n;
}

bool SemaphoreCore::TryAcquire() {
  SpinlockGuard guard(lock_);
  if (count_ == 0) return false;
  --count_;
  return true;
}

bool SemaphoreCore::Acquire(std::chrono::steady_clock::time_point deadline,
                            const WaitLimits* limits) {
  UniqueSpinlockGuard guard(lock_);
  if (count_ > 0 && waiters_.empty()) {
    --count_;
    return true;
  }
  return waiters_.Wait(guard.unique(), MonotonicDeadline::At(deadline), WaitKind::kSemaphore,
                       limits, this) ==
         WaitResult::kNotified;
}

}  // namespace spindle::internal
