// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_OS_MUTEX_H_
#define SPINDLE_FIBER_INTERNAL_OS_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/atomic.h"

namespace spindle::internal {

#ifdef SPINDLE_MODEL_CHECK
// The model build (atomic.h): a Relacy mutex of the same interface (model_atomic.h).
using OsMutex = ModelMutex;
#else
// A std::mutex that clang's thread-safety analysis (-Wthread-safety) knows as a
// capability, so fields it protects can be declared ABSL_GUARDED_BY(it): libstdc++'s
// std::mutex carries no annotations. Same code and same rules as std::mutex (an OS
// lock: never held across a park, yield or dispatch of a fiber, which
// runtime/internal/base/os_lock_check reports). Thread-safe; not recursive. Lock it
// with OsMutexGuard, or UniqueOsMutexGuard where a std::condition_variable waits on it.
class ABSL_LOCKABLE OsMutex {
 public:
  OsMutex() = default;
  OsMutex(const OsMutex&) = delete;
  OsMutex& operator=(const OsMutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mutex_.lock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) { return mutex_.try_lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mutex_.unlock(); }

 private:
  friend class UniqueOsMutexGuard;

  std::mutex mutex_;
};
#endif  // SPINDLE_MODEL_CHECK

// std::lock_guard<std::mutex> for an OsMutex, visible to the analysis: the mutex is
// held from construction to the end of the scope. Owned by one scope of one thread.
class ABSL_SCOPED_LOCKABLE OsMutexGuard {
 public:
  explicit OsMutexGuard(OsMutex& mutex) ABSL_EXCLUSIVE_LOCK_FUNCTION(mutex) : mutex_(mutex) {
    mutex_.lock();
  }
  // Takes over a mutex the caller already holds (after a successful try_lock()).
  OsMutexGuard(OsMutex& mutex, std::adopt_lock_t) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex)
      : mutex_(mutex) {}
  ~OsMutexGuard() ABSL_UNLOCK_FUNCTION() { mutex_.unlock(); }
  OsMutexGuard(const OsMutexGuard&) = delete;
  OsMutexGuard& operator=(const OsMutexGuard&) = delete;

 private:
  OsMutex& mutex_;
};

#ifndef SPINDLE_MODEL_CHECK  // no std::condition_variable in a model
// A std::unique_lock<std::mutex> on an OsMutex, visible to the analysis, for critical
// sections that wait on a std::condition_variable: the wait takes unique() and releases
// the mutex while it blocks, holding it again on return, so to the analysis the mutex
// is held throughout. unlock() and lock() in between are tracked. Owned by one scope of
// one thread; the mutex must be held (again) whenever unique() is handed out.
class ABSL_SCOPED_LOCKABLE UniqueOsMutexGuard {
 public:
  explicit UniqueOsMutexGuard(OsMutex& mutex) ABSL_EXCLUSIVE_LOCK_FUNCTION(mutex)
      : lock_(mutex.mutex_) {}
  ~UniqueOsMutexGuard() ABSL_UNLOCK_FUNCTION() {}
  UniqueOsMutexGuard(const UniqueOsMutexGuard&) = delete;
  UniqueOsMutexGuard& operator=(const UniqueOsMutexGuard&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }

  std::unique_lock<std::mutex>& unique() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};
#endif  // SPINDLE_MODEL_CHECK

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_OS_MUTEX_H_
