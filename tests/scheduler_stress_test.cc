// Copyright 2026 The Spindle Authors.
//
// Cross-component stress for the scheduler, sized for a 2-core machine: a million fibers
// each run exactly once, and the lost-wake-up hammer at 100,000 rounds. Scaled down in
// the sanitizer lanes (SPINDLE_STRESS_SCALE_DEFAULT).

#include <atomic>
#include <vector>

#include "fiber/fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/lost_wake_hammer.h"
#include "runtime/internal/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

TEST(SchedulerStressTest, MillionFibersEachRunExactlyOnce) {
  ScopedRuntime runtime(2);
  const std::size_t n = Scaled(1000000);
  std::vector<std::atomic<std::uint8_t>> runs(n);
  std::atomic<std::size_t> done{0};
  // Half joinable, started and joined by a plain thread (the queued path, no inline
  // joins); half detached, started by fibers.
  {
    std::vector<Fiber> fibers;
    fibers.reserve(n / 2);
    for (std::size_t i = 0; i < n / 2; ++i) fibers.emplace_back([&runs, i] { ++runs[i]; });
    for (auto& f : fibers) f.join();
  }
  RunAsFiber([&] {
    for (std::size_t i = n / 2; i < n; ++i) {
      StartFiberDetached([&runs, &done, i] {
        ++runs[i];
        ++done;
      });
    }
  });
  ASSERT_TRUE(WaitFor([&] { return done.load() == n - n / 2; }, std::chrono::seconds(120)));
  std::size_t wrong = 0;
  for (const auto& r : runs) wrong += r.load() != 1;
  EXPECT_EQ(wrong, 0u);
}

TEST(SchedulerStressTest, LostWakeUpHammerHundredThousandRounds) {
  const int rounds = static_cast<int>(Scaled(100000));
  internal::LostWakeUpHammer(2, /*spin_us=*/0, rounds);
  internal::LostWakeUpHammer(2, /*spin_us=*/20, rounds / 4);
}

}  // namespace
}  // namespace spindle
