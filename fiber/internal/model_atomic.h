// Copyright 2026 The Spindle Authors.
//
// Atomic<T> for model builds only (SPINDLE_MODEL_CHECK; atomic.h includes it): the
// std::atomic interface the protocol code uses, over Relacy's rl::atomic<T>. Each
// operation passes Relacy its caller's function, file and line, so a failing model's
// trace names the protocol's own lines. Relacy runs each thread of a model as its own
// fiber, one at a time; these objects exist only inside a model's run.
//
// Relacy's header defines macros for names of the C and C++ libraries (new, delete,
// malloc, memory_order_relaxed, pthread_mutex_lock, EINVAL, ...) so that unchanged
// code runs under it. Spindle's code is changed instead (Atomic<T>, the model futex of
// futex.h), so those macros are removed again right after the include, and the system
// ones it replaced are restored.

#ifndef SPINDLE_FIBER_INTERNAL_MODEL_ATOMIC_H_
#define SPINDLE_FIBER_INTERNAL_MODEL_ATOMIC_H_

#ifndef SPINDLE_MODEL_CHECK
#error "model_atomic.h is for model builds only (SPINDLE_MODEL_CHECK): include atomic.h"
#endif

#include <linux/futex.h>

#include <atomic>
#include <cassert>
#include <cerrno>
#include <cstdint>

#include "absl/base/thread_annotations.h"

#pragma push_macro("EAGAIN")
#pragma push_macro("EBUSY")
#pragma push_macro("EINTR")
#pragma push_macro("EINVAL")
#pragma push_macro("ETIMEDOUT")
#pragma push_macro("EWOULDBLOCK")
#pragma push_macro("FUTEX_WAIT")
#pragma push_macro("FUTEX_WAKE")
#pragma push_macro("assert")
#pragma push_macro("errno")
#include <relacy/relacy.hpp>
#undef $
#undef VAR
#undef VAR_T
#undef TLS_T
#undef new
#undef delete
#undef malloc
#undef calloc
#undef realloc
#undef free
#undef memory_order_relaxed
#undef memory_order_consume
#undef memory_order_acquire
#undef memory_order_release
#undef memory_order_acq_rel
#undef memory_order_seq_cst
#undef futex
#undef sched_yield
#undef pthread_yield
#undef pthread_t
#undef pthread_attr_t
#undef pthread_create
#undef pthread_join
#undef pthread_mutex_t
#undef pthread_mutexattr_t
#undef pthread_mutexattr_init
#undef pthread_mutexattr_destroy
#undef pthread_mutexattr_settype
#undef pthread_mutex_init
#undef pthread_mutex_destroy
#undef pthread_mutex_lock
#undef pthread_mutex_timedlock
#undef pthread_mutex_try_lock
#undef pthread_mutex_unlock
#undef pthread_rwlock_t
#undef pthread_rwlock_init
#undef pthread_rwlock_destroy
#undef pthread_rwlock_rdlock
#undef pthread_rwlock_tryrdlock
#undef pthread_rwlock_wrlock
#undef pthread_rwlock_trywrlock
#undef pthread_rwlock_unlock
#undef pthread_cond_t
#undef pthread_condattr_t
#undef pthread_cond_init
#undef pthread_cond_destroy
#undef pthread_cond_signal
#undef pthread_cond_broadcast
#undef pthread_cond_wait
#undef pthread_cond_timedwait
#undef sem_t
#undef sem_init
#undef sem_destroy
#undef sem_wait
#undef sem_trywait
#undef sem_post
#undef sem_getvalue
#undef PTHREAD_MUTEX_NORMAL
#undef PTHREAD_MUTEX_ERRORCHECK
#undef PTHREAD_MUTEX_RECURSIVE
#undef PTHREAD_MUTEX_DEFAULT
#undef EAGAIN
#undef EBUSY
#undef EINTR
#undef EINVAL
#undef ETIMEDOUT
#undef EWOULDBLOCK
#undef FUTEX_WAIT
#undef FUTEX_WAKE
#undef assert
#undef errno
#pragma pop_macro("EAGAIN")
#pragma pop_macro("EBUSY")
#pragma pop_macro("EINTR")
#pragma pop_macro("EINVAL")
#pragma pop_macro("ETIMEDOUT")
#pragma pop_macro("EWOULDBLOCK")
#pragma pop_macro("FUTEX_WAIT")
#pragma pop_macro("FUTEX_WAKE")
#pragma pop_macro("assert")
#pragma pop_macro("errno")

// Relacy serves the allocations made inside a model's run from its own heap (its
// header's operator new and delete); these send C++14's sized deletes, which
// std::allocator uses, there as well. (Without them a vector freed inside a run went
// to glibc's free().)
inline void operator delete(void* p, std::size_t) noexcept { operator delete(p); }
inline void operator delete[](void* p, std::size_t) noexcept { operator delete[](p); }

namespace spindle::internal {

// Where a model operation was called from, for Relacy's trace: the defaults are
// evaluated at the caller's call site.
struct ModelWhere {
  ModelWhere(const char* function = __builtin_FUNCTION(), const char* file = __builtin_FILE(),
             unsigned line = __builtin_LINE())
      : info(function, file, line) {}
  rl::debug_info info;
};

inline rl::memory_order ToModelOrder(std::memory_order order) {
  switch (order) {
    case std::memory_order_relaxed:
      return rl::mo_relaxed;
    case std::memory_order_consume:
      return rl::mo_consume;
    case std::memory_order_acquire:
      return rl::mo_acquire;
    case std::memory_order_release:
      return rl::mo_release;
    case std::memory_order_acq_rel:
      return rl::mo_acq_rel;
    case std::memory_order_seq_cst:
      break;
  }
  return rl::mo_seq_cst;
}

// std::atomic<T>'s interface (the part Spindle uses) over rl::atomic<T>. Not
// thread-safe in the usual sense: it exists only inside a Relacy run, whose threads
// take turns.
template <class T>
class Atomic {
 public:
  Atomic() : Atomic(T{}) {}
  // constexpr so that constexpr constructors of the protocol's classes compile; a model
  // object is never built at compile time.
  constexpr Atomic(T value) : impl_(value) {}  // NOLINT: like std::atomic
  Atomic(const Atomic&) = delete;
  Atomic& operator=(const Atomic&) = delete;

  T load(std::memory_order order = std::memory_order_seq_cst, ModelWhere where = {}) const {
    return impl_(where.info).load(ToModelOrder(order));
  }
  void store(T value, std::memory_order order = std::memory_order_seq_cst,
             ModelWhere where = {}) {
    impl_(where.info).store(value, ToModelOrder(order));
  }
  T exchange(T value, std::memory_order order = std::memory_order_seq_cst,
             ModelWhere where = {}) {
    return impl_(where.info).exchange(value, ToModelOrder(order));
  }
  bool compare_exchange_strong(T& expected, T desired,
                               std::memory_order order = std::memory_order_seq_cst,
                               ModelWhere where = {}) {
    return compare_exchange_strong(expected, desired, order, FailureOrder(order), where);
  }
  bool compare_exchange_strong(T& expected, T desired, std::memory_order success,
                               std::memory_order failure, ModelWhere where = {}) {
    return impl_(where.info).compare_exchange_strong(expected, desired, ToModelOrder(success),
                                                     ToModelOrder(failure));
  }
  bool compare_exchange_weak(T& expected, T desired,
                             std::memory_order order = std::memory_order_seq_cst,
                             ModelWhere where = {}) {
    return compare_exchange_weak(expected, desired, order, FailureOrder(order), where);
  }
  bool compare_exchange_weak(T& expected, T desired, std::memory_order success,
                             std::memory_order failure, ModelWhere where = {}) {
    return impl_(where.info).compare_exchange_weak(expected, desired, ToModelOrder(success),
                                                   ToModelOrder(failure));
  }
  T fetch_add(T value, std::memory_order order = std::memory_order_seq_cst,
              ModelWhere where = {}) {
    return impl_(where.info).fetch_add(value, ToModelOrder(order));
  }
  T fetch_sub(T value, std::memory_order order = std::memory_order_seq_cst,
              ModelWhere where = {}) {
    return impl_(where.info).fetch_sub(value, ToModelOrder(order));
  }
  T fetch_or(T value, std::memory_order order = std::memory_order_seq_cst,
             ModelWhere where = {}) {
    return impl_(where.info).fetch_or(value, ToModelOrder(order));
  }
  T fetch_and(T value, std::memory_order order = std::memory_order_seq_cst,
              ModelWhere where = {}) {
    return impl_(where.info).fetch_and(value, ToModelOrder(order));
  }

  // Relacy's object, for the model futex (futex.h).
  rl::atomic<T>& model() { return impl_; }

 private:
  // std::atomic's rule: the failure order of a one-order compare-exchange is the
  // success order without its release part.
  static std::memory_order FailureOrder(std::memory_order order) {
    if (order == std::memory_order_acq_rel) return std::memory_order_acquire;
    if (order == std::memory_order_release) return std::memory_order_relaxed;
    return order;
  }

  mutable rl::atomic<T> impl_;
};

inline void AtomicFence(std::memory_order order, ModelWhere where = {}) {
  rl::atomic_thread_fence(ToModelOrder(order), where.info);
}

// A Relacy mutex with the interface the protocol code's locks use: Spinlock and
// OsMutex are this class in a model build (spinlock.h, os_mutex.h), so the checker
// sees a thread that waits for a lock as blocked (a spin loop would be a livelock to
// it) and models the ordering a lock gives. A class of its own name: a model binary
// also links libraries built the normal way, and the two builds' inline members (the
// locks' constructors, the guards' members taking a Spinlock& or an OsMutex&) must not
// share symbol names, or the linker keeps one of each for both. try_lock() may fail
// spuriously, as the standard allows std::mutex's to. Exists only inside a model's
// run, whose threads take turns on one OS thread.
class ABSL_LOCKABLE ModelMutex {
 public:
  ModelMutex() = default;
  ModelMutex(const ModelMutex&) = delete;
  ModelMutex& operator=(const ModelMutex&) = delete;

  void lock(ModelWhere where = {}) ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mutex_.lock(where.info);
    locked_ = true;
  }
  bool try_lock(ModelWhere where = {}) ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    if (!mutex_.try_lock(where.info)) return false;
    locked_ = true;
    return true;
  }
  void unlock(ModelWhere where = {}) ABSL_UNLOCK_FUNCTION() {
    locked_ = false;
    mutex_.unlock(where.info);
  }
  // Spinlock's assertion helper.
  bool IsLocked() const { return locked_; }

 private:
  rl::mutex mutex_;
  bool locked_ = false;  // plain: the model's threads take turns
};

// The model's clock (MonotonicNowNs() in a model build: parker.h). Time passes only
// when a timed futex wait times out, which moves the clock to that wait's deadline, so
// a deadline has passed exactly when a wait for it timed out. Reset by each model run.
inline std::int64_t& ModelClockNs() {
  static std::int64_t now_ns = 1;
  return now_ns;
}

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_MODEL_ATOMIC_H_
