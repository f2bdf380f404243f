// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_BARRIER_H_
#define SPINDLE_SYNC_BARRIER_H_

#include <cstddef>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A reusable barrier, shaped like std::barrier without a completion function, for
// fibers and plain threads: each phase ends when `expected` participants have arrived.
// Thread-safe.
class Barrier {
 public:
  // Starts the first phase, expecting `expected` participants in each phase. `expected`
  // below 1 stops the process with a message.
  explicit Barrier(std::ptrdiff_t expected);
  Barrier(const Barrier&) = delete;
  Barrier& operator=(const Barrier&) = delete;

  // Arrives and waits for the current phase to end.
  void arrive_and_wait();
  // Arrives and leaves: later phases expect one participant fewer.
  void arrive_and_drop();

 private:
  // Counts one arrival; true if it ended the phase (waiters woken).
  bool ArriveLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);

  internal::Spinlock lock_;
  std::ptrdiff_t expected_ ABSL_GUARDED_BY(lock_);
  std::ptrdiff_t arrived_ ABSL_GUARDED_BY(lock_) = 0;
  std::size_t phase_ ABSL_GUARDED_BY(lock_) = 0;
  internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_BARRIER_H_
