// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/internal/deadline.h"

namespace spindle::grpc_fiber::internal {
namespace {

// `from` moved by `distance`, saturating at the clock's ends instead of overflowing.
template <class TimePoint>
TimePoint Saturated(TimePoint from, std::chrono::nanoseconds distance) {
  using Duration = typename TimePoint::duration;
  const auto step = std::chrono::duration_cast<Duration>(distance);
  if (step.count() > 0 && from > TimePoint::max() - step) return TimePoint::max();
  if (step.count() < 0 && from < TimePoint::min() - step) return TimePoint::min();
  return from + step;
}

// `later - earlier` in nanoseconds, saturating (two far-apart points of one clock).
template <class TimePoint>
std::chrono::nanoseconds Distance(TimePoint later, TimePoint earlier) {
  using std::chrono::nanoseconds;
  const auto a = std::chrono::time_point_cast<nanoseconds>(later).time_since_epoch().count();
  const auto b = std::chrono::time_point_cast<nanoseconds>(earlier).time_since_epoch().count();
  long long out = 0;
  if (__builtin_sub_overflow(a, b, &out)) {
    return a > b ? nanoseconds::max() : nanoseconds::min();
  }
  return nanoseconds(out);
}

}  // namespace

std::chrono::steady_clock::time_point SteadyFromSystem(
    std::chrono::system_clock::time_point deadline) {
  using std::chrono::steady_clock;
  using std::chrono::system_clock;
  if (deadline == system_clock::time_point::max()) return steady_clock::time_point::max();
  const auto system_now = system_clock::now();
  return Saturated(steady_clock::now(), Distance(deadline, system_now));
}

std::chrono::system_clock::time_point SystemFromSteady(
    std::chrono::steady_clock::time_point deadline) {
  using std::chrono::steady_clock;
  using std::chrono::system_clock;
  if (deadline == steady_clock::time_point::max()) return system_clock::time_point::max();
  const auto steady_now = steady_clock::now();
  const auto system_now = system_clock::now();
  // Passed already: now (gRPC answers DEADLINE_EXCEEDED at once). Not the point as far
  // in the past, which may lie before the epoch, where gRPC reads "no deadline".
  if (deadline <= steady_now) return system_now;
  return Saturated(system_now, Distance(deadline, steady_now));
}

}  // namespace spindle::grpc_fiber::internal
