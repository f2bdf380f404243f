// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_BARRIER_H_
#define SPINDLE_SYNC_BARRIER_H_

#include <cstddef>

#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A reusable barrier, shaped like std::barrier without a completion function, for
// fibers and plain threads: each phase ends when `expected` participants have arrived.
// Thread-safe.
class Barrier {
 public:
  explicit Barrier(std::ptrdiff_t expected);
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  // Arrives and waits for the current phase to end.
  void arrive_and_wait();
  // Arrives and leaves: later phases expect one participant fewer.
  void arrive_and_drop();

 private:
  // lock_ held. Counts one arrival; true if it ended the phase (waiters woken).
  bool ArriveLocked();

  internal::Spinlock lock_;
  std::ptrdiff_t expected_;         // guarded by lock_
  std::ptrdiff_t arrived_ = 0;      // guarded by lock_
  std::size_t phase_ = 0;           // guarded by lock_
  internal::WaitQueue waiters_;     // guarded by lock_
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_BARRIER_H_
