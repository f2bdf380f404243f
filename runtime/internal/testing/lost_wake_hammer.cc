// Copyright 2026 The Spindle Authors.

#include "runtime/internal/testing/lost_wake_hammer.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <thread>

#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {
namespace {

using spindle::testing::ScopedRuntime;

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
// the idle path, this test fails; the negative control below does that on purpose.)
// The pause is drawn below g_pause_below_us: 4 for the hammer; the negative control
// widens it when its rounds do not find the window (see there).
std::atomic<int> g_pause_below_us{4};

void PauseBeforeSleep(SchedulerTestPoint point, std::size_t) {
  if (point != SchedulerTestPoint::kBeforeSleep) return;
  thread_local std::minstd_rand random(std::random_device{}());
  // relaxed: a tuning knob; no other memory is read through it.
  const int below = g_pause_below_us.load(std::memory_order_relaxed);
  BusyWaitMicros(static_cast<int>(random() % static_cast<unsigned>(below)));
}

}  // namespace

void LostWakeUpHammer(std::size_t workers, int spin_us, int rounds,
                      std::size_t group_size) {
  gflags::FlagSaver saver;
  FLAGS_fiber_worker_spin_time_us = static_cast<std::uint64_t>(spin_us);
  ScopedRuntime runtime(workers, group_size);
  // The pauses are a test seam (test_seams.h): without them the hammer still runs every
  // round, over the narrower window the hardware gives. Whether it catches a missing
  // re-check before sleeping is shown by LostWakeUpHammerNegativeControl (below).
  if constexpr (kTestSeams) SetSchedulerTestHook(&PauseBeforeSleep);
  std::mt19937 random(12345);
  std::atomic<int> ran{0};
  for (int round = 1; round <= rounds; ++round) {
    BusyWaitMicros(static_cast<int>(random() % static_cast<unsigned>(2 * spin_us + 4)));
    StartFiberDetached([&ran, round] { ran.store(round, std::memory_order_release); });
    if (!spindle::testing::WaitFor(
            [&] { return ran.load(std::memory_order_acquire) == round; },
            std::chrono::seconds(10))) {
      // Nudge the stranded fiber out (a new start wakes a worker that runs both), so
      // the runtime tears down and the test reports.
      StartFiberDetached([] {});
      FAIL() << "fiber of round " << round << " did not run: lost wake-up";
    }
  }
  if constexpr (kTestSeams) SetSchedulerTestHook(nullptr);
}

int LostWakeUpHammerNegativeControl(std::size_t workers, int spin_us, int max_rounds) {
  if constexpr (!kTestSeams) {
    ADD_FAILURE() << "the negative control needs a build with the test seams";
    return 0;
  }
  gflags::FlagSaver saver;
  FLAGS_fiber_worker_spin_time_us = static_cast<std::uint64_t>(spin_us);
  ScopedRuntime runtime(workers, /*group_size=*/workers);
  SchedulingStrategy& strategy = *Runtime::Get().group(0)->strategy();
  const std::uint64_t everyone =
      workers >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << workers) - 1;
  auto stranded = [&] {
    return !strategy.UnsafeEmpty() && strategy.notifier().SleepingMask() == everyone;
  };
  SetSchedulerTestHook(&PauseBeforeSleep);
  DisableSleepRecheckForTesting(true);
  std::mt19937 random(12345);
  std::atomic<int> ran{0};
  int found = 0;
  // Whether a start lands in the window depends on how the threads are scheduled, which
  // a loaded or instrumented machine changes: every kWidenEvery rounds that found
  // nothing, the pause before sleeping doubles (up to 1 ms), so the control still finds
  // the window there instead of failing on the machine. Without the re-check the
  // window is still only as wide as the pause; with it, no pause strands a fiber (the
  // hammer above).
  constexpr int kWidenEvery = 200000;
  constexpr int kWidestPauseUs = 1024;
  g_pause_below_us.store(4, std::memory_order_relaxed);
  for (int round = 1; round <= max_rounds && found == 0; ++round) {
    if (round % kWidenEvery == 0 &&
        g_pause_below_us.load(std::memory_order_relaxed) < kWidestPauseUs) {
      g_pause_below_us.store(2 * g_pause_below_us.load(std::memory_order_relaxed),
                             std::memory_order_relaxed);
    }
    BusyWaitMicros(static_cast<int>(random() % static_cast<unsigned>(2 * spin_us + 4)));
    StartFiberDetached([&ran, round] { ran.store(round, std::memory_order_release); });
    int stranded_looks = 0;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (ran.load(std::memory_order_acquire) != round) {
      stranded_looks = stranded() ? stranded_looks + 1 : 0;
      if (stranded_looks == 100) {
        found = round;
        break;
      }
      if (std::chrono::steady_clock::now() > give_up) {
        ADD_FAILURE() << "round " << round << ": its fiber neither ran nor was stranded";
        found = -1;
        break;
      }
      std::this_thread::yield();
    }
  }
  DisableSleepRecheckForTesting(false);
  SetSchedulerTestHook(nullptr);
  std::printf("negative control: %s at round %d, pausing below %d us before sleeping\n",
              found > 0 ? "stranded a fiber" : "found nothing", found,
              g_pause_below_us.load(std::memory_order_relaxed));
  g_pause_below_us.store(4, std::memory_order_relaxed);
  if (found > 0) {
    StartFiberDetached([] {});  // wakes a worker, which runs it and the stranded one
    EXPECT_TRUE(spindle::testing::WaitFor(
        [&] { return ran.load(std::memory_order_acquire) == found; }))
        << "the stranded fiber of round " << found << " never ran after the nudge";
  }
  return found > 0 ? found : 0;
}

}  // namespace spindle::internal
