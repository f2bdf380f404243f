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

#include "fiber/internal/sanitizers.h"

namespace spindle::internal {

// Sleeps while *word == expected (returns at once otherwise), until woken or spuriously.
inline void FutexWait(std::atomic<int>* word, int expected) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

// Like FutexWait, but also returns at the absolute CLOCK_MONOTONIC time `deadline_ns`
// (std::chrono::steady_clock's epoch), so repeated waits do not drift.
inline void FutexWaitUntil(std::atomic<int>* word, int expected, std::int64_t deadline_ns) {
  timespec deadline;
  deadline.tv_sec = deadline_ns / 1000000000;
  deadline.tv_nsec = deadline_ns % 1000000000;
  syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, expected, &deadline, nullptr,
          FUTEX_BITSET_MATCH_ANY);
}

// Wakes up to `count` threads sleeping on `word`. Harmless if `word` is gone: a stale
// address at worst wakes some other futex user spuriously, which they all tolerate.
inline void FutexWake(std::atomic<int>* word, int count = 1) {
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
#else
inline void StoreLoadFence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_FUTEX_H_
