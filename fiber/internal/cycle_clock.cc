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

#if defined(__x86_64__)
namespace {

// One reading of both clocks: the cycle counter between two steady-clock reads, taken
// again while those two are far apart (a preemption between them), so that the pair
// is good to within kMaxGap. Over the 2 ms between two such readings the ratio is then
// off by at most 2 * kMaxGap / 2 ms (2%), wherever the thread is preempted.
struct ClockPair {
  double steady_ns;
  std::uint64_t ticks;
};

ClockPair ReadClockPair() {
  constexpr auto kMaxGap = std::chrono::microseconds(20);
  ClockPair pair{};
  for (int attempt = 0; attempt < 100; ++attempt) {
    const auto before = std::chrono::steady_clock::now();
    const std::uint64_t ticks = CycleClockNow();
    const auto after = std::chrono::steady_clock::now();
    pair.steady_ns =
        std::chrono::duration<double, std::nano>((before + (after - before) / 2).time_since_epoch())
            .count();
    pair.ticks = ticks;
    if (after - before <= kMaxGap) break;
  }
  return pair;
}

}  // namespace
#endif

double CycleClockNanosPerTick() {
#if defined(__x86_64__)
  static const double nanos_per_tick = [] {
    const ClockPair start = ReadClockPair();
    ClockPair end = start;
    do {
      end = ReadClockPair();
    } while (end.steady_ns - start.steady_ns < 2e6);
    return end.ticks > start.ticks
               ? (end.steady_ns - start.steady_ns) / static_cast<double>(end.ticks - start.ticks)
               : 1.0;
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
