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

void BusyWaitMicros(int micros) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
  while (std::chrono::steady_clock::now() < until) {
  }
}

// The lost-wake-up hammer (brpc PR #2916's scenario): a plain thread starts one fiber at
// a time, each after a random pause, so the start lands while workers spin, while they
// are between spinning and sleeping, and while they sleep. Every fiber must run before
// a deadline; a lost wake-up leaves it queued with every worker asleep. The dangerous
// window (after a worker's last poll, before its sleeping bit is visible) is a few
// instructions wide and comes `spin_us` after the previous fiber ran, so the pauses
// are drawn around that moment; with spin_us = 0 it comes right away. The window is
// still only nanoseconds wide, so a test hook stretches it: every worker pauses 0-3 us
// right before it marks itself sleeping. (Checked: with the re-check W3 removed from
// WaitForFiber(), this test failed at round 6295 of the first 10,000.)
void PauseBeforeSleep() {
  thread_local std::minstd_rand random(std::random_device{}());
  BusyWaitMicros(static_cast<int>(random() % 4));
}

void Hammer(std::size_t workers, int spin_us, int rounds) {
  gflags::FlagSaver saver;
  FLAGS_fiber_worker_spin_time_us = static_cast<std::uint64_t>(spin_us);
  ScopedRuntime runtime(workers);
  SetBeforeSleepHookForTesting(&PauseBeforeSleep);
  std::mt19937 random(12345);
  std::atomic<int> ran{0};
  for (int round = 1; round <= rounds; ++round) {
    BusyWaitMicros(static_cast<int>(random() % static_cast<unsigned>(2 * spin_us + 4)));
    StartFiberDetached([&ran, round] { ran.store(round, std::memory_order_release); });
    ASSERT_TRUE(spindle::testing::WaitFor(
        [&] { return ran.load(std::memory_order_acquire) == round; },
        std::chrono::seconds(10)))
        << "fiber of round " << round << " did not run: lost wake-up";
  }
  SetBeforeSleepHookForTesting(nullptr);
}

TEST_P(SchedulingGroupTest, NoLostWakeUpWhenStartingAsWorkersFallAsleep) {
  Hammer(GetParam(), /*spin_us=*/0, 10000);
  Hammer(GetParam(), /*spin_us=*/20, 10000);
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
