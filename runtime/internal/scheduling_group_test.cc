// Copyright 2026 The Spindle Authors.

#include "runtime/internal/scheduling_group.h"

#include <atomic>
#include <chrono>
#include <random>
#include <thread>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/lost_wake_hammer.h"
#include "runtime/internal/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle::internal {
namespace {

using spindle::testing::ScopedRuntime;

TEST(LowestSetBitsTest, SixtyFourBitArithmetic) {
  EXPECT_EQ(LowestSetBits(0, 3), 0u);
  EXPECT_EQ(LowestSetBits(0b1011, 0), 0u);
  EXPECT_EQ(LowestSetBits(0b1011, 1), 0b1u);
  EXPECT_EQ(LowestSetBits(0b1011, 2), 0b11u);
  EXPECT_EQ(LowestSetBits(0b1011, 3), 0b1011u);
  EXPECT_EQ(LowestSetBits(0b1011, 64), 0b1011u);
  // Bits above 31 (the anchors' `1 << i` overflowed there).
  const std::uint64_t high = (std::uint64_t{1} << 63) | (std::uint64_t{1} << 40) |
                             (std::uint64_t{1} << 32);
  EXPECT_EQ(LowestSetBits(high, 1), std::uint64_t{1} << 32);
  EXPECT_EQ(LowestSetBits(high, 2), (std::uint64_t{1} << 32) | (std::uint64_t{1} << 40));
  EXPECT_EQ(LowestSetBits(high, 3), high);
  EXPECT_EQ(LowestSetBits(~std::uint64_t{0}, 64), ~std::uint64_t{0});
}

class SchedulingGroupTest : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(Workers, SchedulingGroupTest, ::testing::Values(1, 2, 4),
                         [](const auto& info) {
                           return std::to_string(info.param) + "Workers";
                         });


TEST_P(SchedulingGroupTest, NoLostWakeUpWhenStartingAsWorkersFallAsleep) {
  LostWakeUpHammer(GetParam(), /*spin_us=*/0, 10000);
  LostWakeUpHammer(GetParam(), /*spin_us=*/20, 10000);
}

// Batch starts wake several workers at once: fibers that wait for each other only
// finish if enough workers were woken (with more than one worker).
TEST_P(SchedulingGroupTest, BatchStartWakesEnoughWorkers) {
  ScopedRuntime runtime(GetParam());
  const int n = static_cast<int>(GetParam());
  for (int round = 0; round < 200; ++round) {
    std::atomic<int> arrived{0};
    std::atomic<int> done{0};
    std::vector<absl::AnyInvocable<void()>> procs;
    for (int i = 0; i < n; ++i) {
      procs.emplace_back([&] {
        ++arrived;
        // Each fiber yields until all have started: with one worker, Yield lets the
        // others run; with several, they run in parallel.
        while (arrived.load() < n) this_fiber::Yield();
        ++done;
      });
    }
    BatchStartFiberDetached(std::move(procs));
    ASSERT_TRUE(spindle::testing::WaitFor([&] { return done.load() == n; },
                                          std::chrono::seconds(10)))
        << "round " << round;
  }
}

}  // namespace
}  // namespace spindle::internal
