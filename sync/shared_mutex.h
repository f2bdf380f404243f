// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_SHARED_MUTEX_H_
#define SPINDLE_SYNC_SHARED_MUTEX_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

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

  // Takes exclusive (writer) ownership: waits until nobody holds the lock (a fiber
  // parks, a thread blocks; not interruptible, and there are no timed variants); after
  // 1 ms of waiting it keeps new readers out until it has had its turn.
  void lock();
  // Takes exclusive ownership only if nobody holds the lock now, never waiting; true if
  // it took it.
  bool try_lock();
  // Gives back exclusive ownership and wakes every waiting reader, unless a writer has
  // waited over 1 ms or no reader waits: then one waiting writer. Without an exclusive
  // hold it stops the process with a message (a release by another fiber than the
  // holder is not detected).
  void unlock();
  // Takes shared (reader) ownership: waits while a writer holds the lock or a writer has
  // waited over 1 ms (not interruptible). Not recursive: a second lock_shared() by a
  // holder deadlocks if a writer has meanwhile waited over 1 ms.
  void lock_shared();
  // Takes shared ownership only if lock_shared() would not wait now (no writer holds
  // the lock or has waited over 1 ms), never waiting; true if it took it.
  bool try_lock_shared();
  // Gives back one shared hold; the last one out wakes one waiting writer. With no
  // shared hold out it stops the process with a message; holders are not recorded, so a
  // release by a non-holder while others hold it is not detected.
  void unlock_shared();

 private:
  bool ReadersMayEnter() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);

  internal::Spinlock lock_;
  std::size_t readers_ ABSL_GUARDED_BY(lock_) = 0;
  bool writer_ ABSL_GUARDED_BY(lock_) = false;
  std::size_t starving_writers_ ABSL_GUARDED_BY(lock_) = 0;
  internal::WaitQueue reader_queue_ ABSL_GUARDED_BY(lock_);
  internal::WaitQueue writer_queue_ ABSL_GUARDED_BY(lock_);
  // The exclusive holder, for debugging only, as Mutex's owner_ (internal::
  // CurrentLockOwnerId(), 0 without a writer): written under lock_ with writer_, read
  // without it (relaxed) by the deadlock report and debuggers.
  std::atomic<std::uint64_t> writer_owner_{0};

  friend struct SharedMutexDebugLayout;  // shared_mutex.cc: for debuggers
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_SHARED_MUTEX_H_
