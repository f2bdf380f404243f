// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_FIBER_INTERNAL_CYCLE_CLOCK_H_
#define SPINDLE_FIBER_INTERNAL_CYCLE_CLOCK_H_

#include <cstdint>

namespace spindle::internal {

// A monotonic tick count that is cheap to read: the TSC on x86-64 (constant and
// non-stop on every CPU we target; not serializing, and need not be), the virtual
// counter on AArch64, else the steady clock's nanoseconds. For timestamps that people
// and histograms read (the ready-to-run latency, how long a fiber has been parked),
// never for deadlines. Ticks are only compared with ticks of the same machine.
std::uint64_t CycleClockFallbackNow();
inline std::uint64_t CycleClockNow() {
#if defined(__x86_64__)
  std::uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
#elif defined(__aarch64__)
  std::uint64_t ticks;
  __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(ticks));
  return ticks;
#else
  return CycleClockFallbackNow();
#endif
}

// Nanoseconds per tick: on x86-64 measured once per process, the first call spinning
// 2 ms against the steady clock (call it where 2 ms do not matter, e.g. at start-up;
// two clock reads of error in 2 ms is 0.002%); the counter's frequency register on
// AArch64. Thread-safe.
double CycleClockNanosPerTick();

}  // namespace spindle::internal

#endif  // SPINDLE_FIBER_INTERNAL_CYCLE_CLOCK_H_
