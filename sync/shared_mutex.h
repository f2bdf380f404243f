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

  // Exclusive (writer) ownership. lock() waits until nobody holds the lock (a fiber
  // parks, a thread blocks; not interruptible, and there are no timed variants); after
  // 1 ms of waiting it keeps new readers out until it has had its turn. try_lock() takes
  // it only if nobody holds it now, never waiting. unlock() wakes every waiting reader,
  // unless a writer has waited over 1 ms or no reader waits: then one waiting writer.
  // unlock() without an exclusive hold stops the process with a message.
  void lock();
  bool try_lock();
  void unlock();
  // Shared (reader) ownership. lock_shared() waits while a writer holds the lock or a
  // writer has waited over 1 ms (not interruptible); try_lock_shared() is false then
  // instead. unlock_shared() gives back one shared hold; the last wakes one waiting
  // writer. unlock_shared() with no shared hold out stops the process with a message;
  // holders are not recorded, so a release by a non-holder while others hold it is not
  // detected. Not recursive: a second lock_shared() by a holder deadlocks if a writer
  // has meanwhile waited over 1 ms.
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
