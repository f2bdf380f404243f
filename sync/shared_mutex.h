// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_SHARED_MUTEX_H_
#define SPINDLE_SYNC_SHARED_MUTEX_H_

#include <chrono>
#include <cstddef>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A reader-writer lock for fibers and plain threads, read-priority as in the seed
// design: readers are admitted while writers wait, so read-mostly data stays
// available. To keep writers from starving under a flood of readers, a writer that has
// waited more than 1 ms closes the door to new readers until it has had its turn.
// Satisfies SharedLockable (std::shared_lock) and Lockable. Thread-safe. Unlocking what
// is not held stops the process with a message.
class SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void lock();
  bool try_lock();
  void unlock();
  void lock_shared();
  bool try_lock_shared();
  void unlock_shared();

 private:
  bool ReadersMayEnter() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);

  internal::Spinlock lock_;
  std::size_t readers_ ABSL_GUARDED_BY(lock_) = 0;
  bool writer_ ABSL_GUARDED_BY(lock_) = false;
  std::size_t starving_writers_ ABSL_GUARDED_BY(lock_) = 0;
  internal::WaitQueue reader_queue_ ABSL_GUARDED_BY(lock_);
  internal::WaitQueue writer_queue_ ABSL_GUARDED_BY(lock_);
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_SHARED_MUTEX_H_
