// Copyright 2026 The Spindle Authors.

#include "fiber/internal/deadline.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(MonotonicDeadlineTest, NoneExpiredAndPointsOnTheMonotonicClock) {
  EXPECT_TRUE(MonotonicDeadline::None().is_none());
  EXPECT_FALSE(MonotonicDeadline::None().Passed());
  EXPECT_EQ(MonotonicDeadline::At(Clock::time_point::max()), MonotonicDeadline::None());
  EXPECT_TRUE(MonotonicDeadline::Expired().Passed());
  EXPECT_EQ(MonotonicDeadline::In(0ns), MonotonicDeadline::Expired());
  EXPECT_EQ(MonotonicDeadline::In(-5ms), MonotonicDeadline::Expired());
  EXPECT_EQ(MonotonicDeadline::AtNs(-3), MonotonicDeadline::Expired());
  // One clock: steady_clock's now and MonotonicNowNs() agree to well within a second.
  const MonotonicDeadline now = MonotonicDeadline::At(Clock::now());
  EXPECT_LT(std::abs(now.ns() - MonotonicNowNs()), 1'000'000'000);
  const MonotonicDeadline later = MonotonicDeadline::In(1h);
  EXPECT_FALSE(later.Passed());
  EXPECT_GT(later.ns(), now.ns());
}

TEST(MonotonicDeadlineTest, ConvertsBackToTheTimePointItCameFrom) {
  const Clock::time_point t = Clock::now() + 3s;
  EXPECT_EQ(MonotonicDeadline::At(t).time_point(), t);
  EXPECT_EQ(MonotonicDeadline::None().time_point(), Clock::time_point::max());
  EXPECT_EQ(MonotonicDeadline::At(Clock::time_point::min()), MonotonicDeadline::Expired());
}

TEST(MonotonicDeadlineTest, OrdersWithNoneLatestAndNeverOverflows) {
  const MonotonicDeadline soon = MonotonicDeadline::In(1ms);
  const MonotonicDeadline late = MonotonicDeadline::In(1h);
  EXPECT_LT(soon, late);
  EXPECT_LT(late, MonotonicDeadline::None());
  EXPECT_EQ(std::min(late, soon), soon);
  EXPECT_EQ(std::min(MonotonicDeadline::None(), late), late);
  // A duration past the clock's range is no deadline, not a wrapped one in the past.
  EXPECT_EQ(MonotonicDeadline::In(std::chrono::nanoseconds::max()), MonotonicDeadline::None());
  EXPECT_EQ(late.Plus(std::chrono::nanoseconds::max()), MonotonicDeadline::None());
  EXPECT_EQ(MonotonicDeadline::None().Plus(1s), MonotonicDeadline::None());
  EXPECT_EQ(soon.Plus(2ms).ns(), soon.ns() + 2'000'000);
}

}  // namespace
}  // namespace spindle::internal
