// Copyright 2026 The Spindle Authors.
//
// The few futex operations the runtime uses, and the StoreLoad fence of its
// wake-up protocols. Process-private futexes on 32-bit atomics.

#ifndef SPINDLE_RUNTIME_INTERNAL_FUTEX_H_
#define SPINDLE_RUNTIME_INTERNAL_FUTEX_H_

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <ctime>

#include "fiber/internal/atomic.h"
#include "fiber/internal/sanitizers.h"

namespace spindle::internal {

#ifdef SPINDLE_MODEL_CHECK
// The model build (atomic.h): Relacy's futex over the word's model atomic. A wait
// compares and queues atomically, as the kernel does; it may also return spuriously,
// and a timed one may time out, which moves the model clock to its deadline.
inline void FutexWait(Atomic<int>* word, int expected, ModelWhere where = {}) {
  rl::rl_futex(&word->model(), rl::RL_FUTEX_WAIT, expected, nullptr, nullptr, 0,
               where.info);
}

inline void FutexWaitUntil(Atomic<int>* word, int expected, std::int64_t deadline_ns,
                           ModelWhere where = {}) {
  const timespec any{};  // only whether there is a timeout matters to the model
  if (rl::rl_futex(&word->model(), rl::RL_FUTEX_WAIT, expected, &any, nullptr, 0,
                   where.info) == rl::RL_ETIMEDOUT &&
      ModelClockNs() < deadline_ns) {
    ModelClockNs() = deadline_ns;
  }
}

inline void FutexWake(Atomic<int>* word, int count = 1, ModelWhere where = {}) {
  rl::rl_futex(&word->model(), rl::RL_FUTEX_WAKE, count, nullptr, nullptr, 0, where.info);
}

inline void StoreLoadFence(ModelWhere where = {}) {
  AtomicFence(std::memory_order_seq_cst, where);
}
#else

// Sleeps while *word == expected (returns at once otherwise), until woken or spuriously.
inline void FutexWait(Atomic<int>* word, int expected) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

// Like FutexWait, but also returns at the absolute CLOCK_MONOTONIC time `deadline_ns`
// (std::chrono::steady_clock's epoch), so repeated waits do not drift.
inline void FutexWaitUntil(Atomic<int>* word, int expected, std::int64_t deadline_ns) {
  timespec deadline;
  deadline.tv_sec = deadline_ns / 1000000000;
  deadline.tv_nsec = deadline_ns % 1000000000;
  syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, &deadline, nullptr,
          FUTEX_BITSET_MATCH_ANY);
}

// Wakes up to `count` threads sleeping on `word`. Harmless if `word` is gone: a stale
// address at worst wakes some other futex user spuriously, which they all tolerate.
inline void FutexWake(Atomic<int>* word, int count = 1) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, count, nullptr, nullptr, 0);
}

// The StoreLoad fence of the wake-up protocols (a store, then a load of another
// location, that must not be reordered). ThreadSanitizer does not model standalone
// fences (GCC refuses them under -fsanitize=thread), so there both sides do a seq_cst
// read-modify-write on one shared word instead: whichever RMW comes second in that
// word's order synchronizes with the first, so the first side's earlier store is
// visible to the second side's later load, which is the same guarantee.
#ifdef SPINDLE_TSAN
inline std::atomic<int> store_load_fence_word{0};
inline void StoreLoadFence() { store_load_fence_word.fetch_add(0, std::memory_order_seq_cst); }
#elif defined(__x86_64__)
// A locked read-modify-write that changes nothing, on the caller's own stack: on x86 a
// locked instruction orders every earlier load and store before every later one (Intel
// SDM vol. 3, 8.2.2), the guarantee of a seq_cst fence for ordinary (write-back)
// memory, at about half an MFENCE's cost (MFENCE also waits for non-temporal stores and
// is what compilers emit for std::atomic_thread_fence). Linux's smp_mb() is the same
// instruction. The "memory" clobber keeps the compiler from moving accesses across it.
inline void StoreLoadFence() { asm volatile("lock orl $0, -4(%%rsp)" ::: "memory", "cc"); }
#else
inline void StoreLoadFence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif
#endif  // SPINDLE_MODEL_CHECK

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FUTEX_H_
