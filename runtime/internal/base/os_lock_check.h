// Copyright 2026 The Spindle Authors.
//
// The suspend-under-an-OS-lock check: a fiber that parks, yields or dispatches while
// its thread holds a std::mutex / pthread_mutex_t stops the process with a message.
//
// Why it is a bug. An OS mutex belongs to the thread, not to the fiber. Once the fiber
// switches away, its worker runs other fibers, and the mutex stays held by a thread that
// is no longer in the critical section: a second fiber on the same worker that locks it
// deadlocks the worker on itself; one on another worker blocks that worker's thread
// until the first fiber happens to run again, maybe on a third worker that then unlocks
// a mutex it does not own (undefined behaviour). Use spindle::Mutex across a switch.
//
// Mechanism. This component defines pthread_mutex_lock, _trylock, _timedlock,
// _clocklock and _unlock. Linked into the executable (the library is alwayslink and
// static), its definitions come first in the dynamic symbol look-up, ahead of the C
// library and of a sanitizer runtime, so every call through the PLT (std::mutex,
// std::timed_mutex, std::recursive_mutex, plain pthread calls from any shared object)
// reaches them. Each forwards to the next definition, found once with
// dlsym(RTLD_NEXT, name): the sanitizer's interceptor under ASan/TSan (so they still
// see every mutex), the C library's otherwise. A successful acquisition adds one to a
// thread-local count and, when the count leaves 0, remembers the caller's return
// address as the lock site; a successful unlock subtracts one. SchedulingGroup's Yield,
// Halt (every park) and Dispatch call CheckNoOsMutexHeld() before they switch away from
// a user fiber; a non-zero count for the calling thread is the bug. The worker's own
// loop and plain threads are never checked: a plain thread that blocks on a Spindle
// primitive holding a std::mutex blocks only itself.
//
// Cost. Where the check exists: per lock and unlock, one indirect call and one
// thread-local increment or decrement (plus a store of the site for an outermost lock);
// per park or yield, one out-of-line thread-local read. In builds without it (NDEBUG
// and no sanitizer, i.e. `-c opt`) nothing is compiled: no symbol is interposed, the
// check is an empty inline function, and SPINDLE_OS_LOCK_CHECK is 0.
//
// Limits. Only pthread mutexes are counted (not rwlocks, spinlocks, C11 mtx_t or
// futexes). Calls the C library makes internally (stdio, pthread_cond_wait's re-lock)
// bypass the PLT and are not seen, which keeps the count balanced. A normal mutex
// locked on one thread and unlocked on another (legal for glibc, not for POSIX) leaves
// the locking thread's count high: a later switch there is reported although the mutex
// is free. The lock site is the wrapper's immediate caller: at -O0 that is the
// standard library's inline wrapper (std::mutex::lock), so the report also prints the
// switching fiber's stack, which holds the function that took the lock.

#ifndef SPINDLE_RUNTIME_INTERNAL_OS_LOCK_CHECK_H_
#define SPINDLE_RUNTIME_INTERNAL_OS_LOCK_CHECK_H_

#include <cstdint>

#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SPINDLE_OS_LOCK_CHECK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SPINDLE_OS_LOCK_CHECK 1
#endif
#endif
#ifndef SPINDLE_OS_LOCK_CHECK
#define SPINDLE_OS_LOCK_CHECK 0
#endif

namespace spindle::internal {

// Whether this build has the check (debug and sanitizer builds).
inline constexpr bool kOsLockCheckEnabled = SPINDLE_OS_LOCK_CHECK != 0;

#if SPINDLE_OS_LOCK_CHECK

// How many pthread mutexes the calling thread holds (a recursive mutex counts once per
// level). Out of line and switch-safe: it reads the slot of the thread it runs on now,
// even in a fiber that has migrated. Any thread.
int OsMutexesHeldByThisThread();

// Prints which fiber tried to `action` ("park", "yield", "dispatch") while holding
// `held` OS mutexes, the first one's lock site and the stack of the switch, then aborts.
[[noreturn]] void ReportSwitchUnderOsLock(std::uint64_t fiber_id, const char* action,
                                          int held);

// Called by the scheduler on the fiber `fiber_id` right before it switches away (the
// fiber's id is for the message only). Returns if the calling thread holds no OS mutex;
// otherwise reports and aborts. Never switches.
inline void CheckNoOsMutexHeld(std::uint64_t fiber_id, const char* action) {
  const int held = OsMutexesHeldByThisThread();
  if (__builtin_expect(held != 0, 0)) ReportSwitchUnderOsLock(fiber_id, action, held);
}

#else  // !SPINDLE_OS_LOCK_CHECK

inline int OsMutexesHeldByThisThread() { return 0; }
inline void CheckNoOsMutexHeld(std::uint64_t, const char*) {}

#endif  // SPINDLE_OS_LOCK_CHECK

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_OS_LOCK_CHECK_H_
