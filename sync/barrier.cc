// Copyright 2026 The Spindle Authors.
//
// arrived_, expected_ and phase_ change only under lock_, and a waiter checks phase_
// and links itself under lock_, so the arrival that ends a phase finds every waiter of
// that phase linked. A waiter leaves when phase_ has moved past the phase it arrived
// in, so a spurious wake-up (none are sent today) could not release it early.
//
// The ReadyBatch that defers the wake-ups until lock_ is released is scoped to the
// arrival alone: a batch is bound to its thread, and a fiber that parks below may
// resume on another worker.

#include "sync/barrier.h"

#include <mutex>

#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle {

Barrier::Barrier(std::ptrdiff_t expected) : expected_(expected) {
  CHECK_GT(expected, 0) << "spindle::Barrier: expected count " << expected
                        << " is invalid: it must be at least 1";
}

bool Barrier::ArriveLocked() {
  if (++arrived_ < expected_) return false;
  arrived_ = 0;
  ++phase_;
  waiters_.WakeAll();
  return true;
}

void Barrier::arrive_and_wait() {
  std::size_t phase;
  {
    internal::ReadyBatch batch;  // destroyed after `guard`: wakes queue unlocked
    internal::SpinlockGuard guard(lock_);
    phase = phase_;
    if (ArriveLocked()) return;  // this arrival ended the phase
  }
  internal::UniqueSpinlockGuard guard(lock_);
  while (phase_ == phase) {
    waiters_.Wait(guard.unique(), internal::MonotonicDeadline::None(),
                  internal::WaitKind::kBarrier, /*limits=*/nullptr, this);
  }
}

void Barrier::arrive_and_drop() {
  internal::ReadyBatch batch;
  internal::SpinlockGuard guard(lock_);
  CHECK_GT(expected_, 0) << "spindle::Barrier::arrive_and_drop() with no participants";
  --expected_;
  // The dropping participant counts as arrived in the current phase; if everyone
  // else already has, the phase ends now.
  if (expected_ > 0 && arrived_ >= expected_) {
    arrived_ = expected_ - 1;
    ArriveLocked();
  }
}

}  // namespace spindle
