// Copyright 2026 The Spindle Authors.
//
// count_ changes and waiters link under lock_, so the count_down() that reaches zero
// finds every waiter that saw a non-zero count.

#include "sync/latch.h"

#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle {

Latch::Latch(std::ptrdiff_t count) : count_(count) {
  CHECK_GE(count, 0) << "spindle::Latch: a negative count (" << count << ") is invalid";
}

void Latch::count_down(std::ptrdiff_t n) {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  CHECK(n >= 0 && n <= count_) << "spindle::Latch::count_down(" << n
                               << ") with count " << count_ << ": would go below zero";
  count_ -= n;
  if (count_ == 0) waiters_.WakeAll();
}

bool Latch::try_wait() const {
  internal::SpinlockGuard guard(lock_);
  return count_ == 0;
}

bool Latch::Await(std::chrono::steady_clock::time_point deadline,
                  const internal::WaitLimits* limits) const {
  const auto until = internal::MonotonicDeadline::At(deadline);  // the API's edge
  internal::UniqueSpinlockGuard guard(lock_);
  while (count_ != 0) {
    if (waiters_.Wait(guard.unique(), until, internal::WaitKind::kLatch, limits, this) !=
        internal::WaitResult::kNotified) {
      return count_ == 0;
    }
  }
  return true;
}

}  // namespace spindle
