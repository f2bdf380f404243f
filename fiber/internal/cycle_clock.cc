// Copyright 2026 The Spindle Authors.

#include "fiber/internal/cycle_clock.h"

#include <chrono>

namespace spindle::internal {

std::uint64_t CycleClockFallbackNow() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

double CycleClockNanosPerTick() {
#if defined(__x86_64__)
  static const double nanos_per_tick = [] {
    const auto w0 = std::chrono::steady_clock::now();
    const std::uint64_t t0 = CycleClockNow();
    std::chrono::steady_clock::time_point w1;
    do {
      w1 = std::chrono::steady_clock::now();
    } while (w1 - w0 < std::chrono::milliseconds(2));
    const std::uint64_t t1 = CycleClockNow();
    const double ns = static_cast<double>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(w1 - w0).count());
    return t1 > t0 ? ns / static_cast<double>(t1 - t0) : 1.0;
  }();
  return nanos_per_tick;
#elif defined(__aarch64__)
  std::uint64_t frequency;
  __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(frequency));
  return frequency != 0 ? 1e9 / static_cast<double>(frequency) : 1.0;
#else
  return 1.0;  // the fallback counts nanoseconds
#endif
}

}  // namespace spindle::internal
