// Copyright 2026 The Spindle Authors.
//
// The interposed pthread mutex functions and the report; the contract, the cost and
// the limits are in the header.
//
// Finding the next definition. Each wrapper reads its own atomic function pointer and
// calls through it; the first call (on any thread) resolves it with
// dlsym(RTLD_NEXT, name), which from the executable is the first definition after ours:
// libasan's or libtsan's interceptor (the sanitizer runtime is the first library in
// the look-up order) or the C library's. Racing first calls resolve the same address
// and store it twice, which is harmless. dlsym could itself lock a pthread mutex
// through the PLT and so come back here before the pointer is known; a thread-local
// flag catches that and the nested call goes straight to the C library's own alias
// (__pthread_mutex_lock and friends, bound by symbol version), bypassing a sanitizer for
// that one call. glibc 2.36's dlsym takes only ld.so's internal locks, so this has not
// been seen to happen.
//
// The count lives in a thread_local with the initial-exec model (a fixed offset from the
// thread pointer: no __tls_get_addr, which could allocate inside a lock call). The
// wrappers read it directly, since they never switch fibers; the scheduler's check reads
// it through a switch-safe accessor, because it runs on a fiber that may have migrated.

#include "runtime/internal/base/os_lock_check.h"

#if SPINDLE_OS_LOCK_CHECK

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "absl/debugging/stacktrace.h"
#include "absl/debugging/symbolize.h"
#include "fiber/internal/switch_safe_tls.h"

// The C library's own names for its mutex functions, the fall-back while dlsym runs on
// this thread. glibc exports them as compatibility symbols only (its base version, not
// the default), so they are bound by version.
#if defined(__x86_64__)
#define SPINDLE_GLIBC_BASE_VERSION "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define SPINDLE_GLIBC_BASE_VERSION "GLIBC_2.17"
#else
#error "os_lock_check: name the C library's base symbol version for this architecture"
#endif
extern "C" {
int spindle_glibc_mutex_lock(pthread_mutex_t* mutex);
int spindle_glibc_mutex_trylock(pthread_mutex_t* mutex);
int spindle_glibc_mutex_unlock(pthread_mutex_t* mutex);
}
__asm__(
    ".symver spindle_glibc_mutex_lock, __pthread_mutex_lock@" SPINDLE_GLIBC_BASE_VERSION);
__asm__(
    ".symver spindle_glibc_mutex_trylock, "
    "__pthread_mutex_trylock@" SPINDLE_GLIBC_BASE_VERSION);
__asm__(
    ".symver spindle_glibc_mutex_unlock, "
    "__pthread_mutex_unlock@" SPINDLE_GLIBC_BASE_VERSION);

namespace spindle::internal {
namespace {

using LockFn = int (*)(pthread_mutex_t*);
using TimedLockFn = int (*)(pthread_mutex_t*, const timespec*);
using ClockLockFn = int (*)(pthread_mutex_t*, clockid_t, const timespec*);

// What the calling thread holds. Zero-initialized, no constructor: usable from the
// first lock call of every thread, before any of this program's initializers ran.
struct HeldOsMutexes {
  int count;               // successful acquisitions minus successful unlocks
  const void* first_site;  // return address of the lock that made count leave 0
};
__attribute__((tls_model("initial-exec"))) thread_local HeldOsMutexes tls_held;
__attribute__((tls_model("initial-exec"))) thread_local bool tls_resolving;

SPINDLE_SWITCH_SAFE_TLS_ACCESSOR(HeldOsMutexes, tls_held, HeldOsMutexesSlot)

std::atomic<LockFn> next_lock{nullptr};
std::atomic<LockFn> next_trylock{nullptr};
std::atomic<LockFn> next_unlock{nullptr};
std::atomic<TimedLockFn> next_timedlock{nullptr};
std::atomic<ClockLockFn> next_clocklock{nullptr};

[[noreturn]] void DieUnresolved(const char* name) {
  std::fprintf(stderr, "spindle: os_lock_check: no definition of %s after ours (%s)\n",
               name, dlerror());
  std::abort();
}

template <class Fn>
__attribute__((noinline)) Fn ResolveNext(std::atomic<Fn>& slot, const char* name,
                                         Fn fallback) {
  if (tls_resolving) {  // dlsym called back into a wrapper on this thread
    if (fallback == nullptr) DieUnresolved(name);
    return fallback;
  }
  tls_resolving = true;
  Fn next = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
  tls_resolving = false;
  if (next == nullptr) next = fallback;
  if (next == nullptr) DieUnresolved(name);
  // relaxed: a code address, the same whichever thread resolves it; nothing else is
  // published with it.
  slot.store(next, std::memory_order_relaxed);
  return next;
}

template <class Fn>
inline Fn Next(std::atomic<Fn>& slot, const char* name, Fn fallback) {
  // relaxed: see ResolveNext(); a thread that still sees nullptr resolves it again.
  const Fn next = slot.load(std::memory_order_relaxed);
  return __builtin_expect(next != nullptr, 1) ? next : ResolveNext(slot, name, fallback);
}

// EOWNERDEAD: a robust mutex whose owner died is acquired all the same.
inline bool Acquired(int result) { return result == 0 || result == EOWNERDEAD; }

inline void NoteAcquired(const void* site) {
  HeldOsMutexes& held = tls_held;
  if (held.count++ == 0) held.first_site = site;
}

inline void NoteReleased() {
  HeldOsMutexes& held = tls_held;
  // Never below 0: a mutex locked on another thread and unlocked here (see the header)
  // must not hide a later lock of this thread's own.
  if (held.count > 0) --held.count;
}

// The call instruction before a return address, for the symbolizer.
const void* CallSite(const void* return_address) {
  return static_cast<const char*>(return_address) - 1;
}

const char* SymbolOrUnknown(const void* pc, char* buffer, int size) {
  return absl::Symbolize(pc, buffer, size) ? buffer : "(no symbol)";
}

}  // namespace

int OsMutexesHeldByThisThread() { return HeldOsMutexesSlot()->count; }

void ReportSwitchUnderOsLock(std::uint64_t fiber_id, const char* action, int held) {
  const void* site = CallSite(HeldOsMutexesSlot()->first_site);
  char symbol[1024];
  std::fprintf(stderr,
               "spindle: fiber %llu tried to %s while holding %d OS mutex%s "
               "(std::mutex or pthread_mutex_t); the first was locked at %p in %s. An OS "
               "mutex belongs to the thread, which would go on to run other fibers while "
               "holding it (a deadlock, or an unlock by the wrong thread). Unlock it "
               "before the fiber parks or yields, or use spindle::Mutex.\n"
               "The fiber's stack at the %s:\n",
               static_cast<unsigned long long>(fiber_id), action, held,
               held == 1 ? "" : "es", site, SymbolOrUnknown(site, symbol, sizeof symbol),
               action);
  void* frames[32];
  const int depth = absl::GetStackTrace(frames, 32, /*skip_count=*/0);
  for (int i = 0; i < depth; ++i) {
    const void* pc = CallSite(frames[i]);
    std::fprintf(stderr, "    #%d %p %s\n", i, pc,
                 SymbolOrUnknown(pc, symbol, sizeof symbol));
  }
  std::abort();
}

}  // namespace spindle::internal

// The interposed definitions. Uninstrumented: they may run before a sanitizer runtime
// has set up its shadow memory, and they touch only this thread's own slots.
#define SPINDLE_OS_LOCK_WRAPPER \
  extern "C" __attribute__((visibility("default"), no_sanitize("address", "thread")))

using spindle::internal::Acquired;
using spindle::internal::Next;
using spindle::internal::NoteAcquired;
using spindle::internal::NoteReleased;

SPINDLE_OS_LOCK_WRAPPER int pthread_mutex_lock(pthread_mutex_t* mutex) noexcept {
  const int result = Next(spindle::internal::next_lock, "pthread_mutex_lock",
                          &spindle_glibc_mutex_lock)(mutex);
  if (Acquired(result)) NoteAcquired(__builtin_return_address(0));
  return result;
}

SPINDLE_OS_LOCK_WRAPPER int pthread_mutex_trylock(pthread_mutex_t* mutex) noexcept {
  const int result = Next(spindle::internal::next_trylock, "pthread_mutex_trylock",
                          &spindle_glibc_mutex_trylock)(mutex);
  if (Acquired(result)) NoteAcquired(__builtin_return_address(0));
  return result;
}

SPINDLE_OS_LOCK_WRAPPER int pthread_mutex_timedlock(pthread_mutex_t* mutex,
                                                    const timespec* abstime) noexcept {
  const int result = Next<spindle::internal::TimedLockFn>(
      spindle::internal::next_timedlock, "pthread_mutex_timedlock", nullptr)(mutex,
                                                                             abstime);
  if (Acquired(result)) NoteAcquired(__builtin_return_address(0));
  return result;
}

SPINDLE_OS_LOCK_WRAPPER int pthread_mutex_clocklock(pthread_mutex_t* mutex,
                                                    clockid_t clock,
                                                    const timespec* abstime) noexcept {
  const int result = Next<spindle::internal::ClockLockFn>(
      spindle::internal::next_clocklock, "pthread_mutex_clocklock", nullptr)(mutex, clock,
                                                                             abstime);
  if (Acquired(result)) NoteAcquired(__builtin_return_address(0));
  return result;
}

SPINDLE_OS_LOCK_WRAPPER int pthread_mutex_unlock(pthread_mutex_t* mutex) noexcept {
  const int result = Next(spindle::internal::next_unlock, "pthread_mutex_unlock",
                          &spindle_glibc_mutex_unlock)(mutex);
  if (result == 0) NoteReleased();
  return result;
}

#endif  // SPINDLE_OS_LOCK_CHECK
