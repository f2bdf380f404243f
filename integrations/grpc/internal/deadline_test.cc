// Copyright 2026 The Spindle Authors.

#include "integrations/grpc/internal/deadline.h"

#include <chrono>

#include "gtest/gtest.h"

namespace spindle::grpc_fiber::internal {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::steady_clock;
using std::chrono::system_clock;

TEST(DeadlineTest, NoDeadlineStaysNone) {
  EXPECT_EQ(SteadyFromSystem(system_clock::time_point::max()), steady_clock::time_point::max());
  EXPECT_EQ(SystemFromSteady(steady_clock::time_point::max()), system_clock::time_point::max());
}

TEST(DeadlineTest, ANearDeadlineKeepsItsDistanceFromNow) {
  const auto before = steady_clock::now();
  const auto steady = SteadyFromSystem(system_clock::now() + milliseconds(50));
  const auto after = steady_clock::now();
  // 50 ms from a "now" read between `before` and `after`.
  EXPECT_GE(steady, before + milliseconds(50) - milliseconds(1));
  EXPECT_LE(steady, after + milliseconds(50) + milliseconds(1));

  const auto system_before = system_clock::now();
  const auto system = SystemFromSteady(steady_clock::now() + milliseconds(50));
  EXPECT_GE(system, system_before + milliseconds(49));
  EXPECT_LE(system, system_clock::now() + milliseconds(51));
}

TEST(DeadlineTest, FarDeadlinesSaturateInsteadOfOverflowing) {
  EXPECT_GT(SteadyFromSystem(system_clock::time_point::max() - hours(1)),
            steady_clock::now() + hours(24 * 365));
  EXPECT_GT(SystemFromSteady(steady_clock::time_point::max() - hours(1)),
            system_clock::now() + hours(24 * 365));
}

TEST(DeadlineTest, APassedDeadlineStaysPassedAndNeverBecomesNone) {
  EXPECT_LT(SteadyFromSystem(system_clock::now() - hours(1)), steady_clock::now());
  // However long ago (even before the epoch), a passed deadline becomes "now" on the
  // system clock: gRPC reads a point before the epoch as no deadline at all.
  for (auto deadline : {steady_clock::now() - milliseconds(1), steady_clock::now() - hours(1),
                        steady_clock::time_point::min()}) {
    const auto system = SystemFromSteady(deadline);
    EXPECT_LE(system, system_clock::now());
    EXPECT_GT(system.time_since_epoch().count(), 0);
  }
  EXPECT_LT(SteadyFromSystem(system_clock::time_point::min()), steady_clock::now());
}

}  // namespace
}  // namespace spindle::grpc_fiber::internal
