// Copyright 2026 The Spindle Authors.

#include "timer/timer.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

TEST(TimerTest, EveryTimerFiresOnceAndNeverEarly) {
  ScopedRuntime runtime(2);
  constexpr int kTimers = 200;
  std::mt19937 random(7);
  const auto base = TimerClock::now() + 20ms;
  std::vector<TimerClock::time_point> due(kTimers), fired(kTimers), armed(kTimers);
  std::vector<std::uint64_t> ids(kTimers);
  std::atomic<int> count{0};
  std::mutex order_lock;
  std::vector<int> order;
  for (int i = 0; i < kTimers; ++i) {
    due[i] = base + std::chrono::microseconds(random() % 40000);
    auto arm = [&, i] {
      ids[i] = SetTimer(due[i], [&, i] {
        fired[i] = TimerClock::now();
        {
          std::lock_guard<std::mutex> guard(order_lock);
          order.push_back(i);
        }
        ++count;
      });
      armed[i] = TimerClock::now();
    };
    if (i % 2 == 0) {
      arm();  // from a plain thread
    } else {
      RunAsFiber(arm);  // from a fiber
    }
  }
  ASSERT_TRUE(WaitFor([&] { return count.load() == kTimers; }));
  for (int i = 0; i < kTimers; ++i) {
    EXPECT_GE(fired[i], due[i]) << "timer " << i << " fired early";
    EXPECT_FALSE(KillTimer(ids[i]));  // already fired
  }
  // The order in which callbacks *start* is checked in timer_worker_test: here they
  // run in fibers, whose start can reorder near-simultaneous expiries.
  EXPECT_EQ(order.size(), static_cast<std::size_t>(kTimers));
}

TEST(TimerTest, PeriodicCallsNeverOverlapAndAreNeverEarly) {
  ScopedRuntime runtime(2);
  const auto start = TimerClock::now() + 2ms;
  static constexpr auto kInterval = 3ms;
  std::atomic<int> in_callback{0}, overlaps{0}, calls{0}, early{0};
  const std::uint64_t id = SetTimer(start, kInterval, [&] {
    const int k = calls.load();
    if (TimerClock::now() < start + k * kInterval) ++early;
    if (++in_callback > 1) ++overlaps;
    // Every third call overruns two periods: the next ones must come back to back
    // (not lost, not overlapping).
    if (k % 3 == 0) this_fiber::SleepFor(2 * kInterval);
    --in_callback;
    ++calls;
  });
  ASSERT_TRUE(WaitFor([&] { return calls.load() >= 30; }));
  EXPECT_TRUE(KillTimer(id));
  const int after_kill = calls.load();
  RunAsFiber([] { this_fiber::SleepFor(10 * kInterval); });
  EXPECT_LE(calls.load(), after_kill + 1);  // at most the call already running
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(early.load(), 0);
}

// KillTimer racing the expiry, 1e4 times: the callback runs at most once, and exactly
// when KillTimer says it did not prevent it.
TEST(TimerTest, KillRacingExpiryReportsWhatHappened) {
  const int rounds = static_cast<int>(Scaled(10000));
  std::vector<std::atomic<int>> ran(rounds);
  std::vector<char> prevented(rounds);
  {
    ScopedRuntime runtime(2);
    std::mt19937 random(3);
    for (int i = 0; i < rounds; ++i) {
      const std::uint64_t id =
          SetTimer(TimerClock::now() + std::chrono::microseconds(random() % 50),
                   [&ran, i] { ++ran[i]; });
      const auto spin_until = TimerClock::now() + std::chrono::microseconds(random() % 60);
      while (TimerClock::now() < spin_until) {
      }
      prevented[i] = KillTimer(id);
    }
  }  // TerminateRuntime: every callback that started has finished
  int killed = 0, fired = 0;
  for (int i = 0; i < rounds; ++i) {
    EXPECT_EQ(ran[i].load(), prevented[i] ? 0 : 1) << "round " << i;
    (prevented[i] ? killed : fired)++;
  }
  // Both outcomes should occur, or the race was not exercised.
  EXPECT_GT(killed, 0);
  EXPECT_GT(fired, 0);
}

TEST(TimerTest, HundredThousandSleepingFibersWakeOnceAndNeverEarly) {
  ScopedRuntime runtime(2);
  const int n = static_cast<int>(testing::ScaledLiveFibers(100000));
  std::atomic<int> woke{0}, early{0};
  for (int i = 0; i < n; ++i) {
    StartFiberDetached([&] {
      const auto start = TimerClock::now();
      this_fiber::SleepFor(1ms);
      if (TimerClock::now() - start < 1ms) ++early;
      ++woke;
    });
  }
  ASSERT_TRUE(WaitFor([&] { return woke.load() == n; }, 60s));
  EXPECT_EQ(early.load(), 0);
  EXPECT_TRUE(WaitFor([] { return GetFiberCount() == 0; }));
  EXPECT_EQ(woke.load(), n);
}

TEST(TimerTest, TimersFireWhileEveryWorkerIsBusyYielding) {
  ScopedRuntime runtime(2);
  std::atomic<bool> stop{false};
  std::vector<Fiber> stormers;
  for (int i = 0; i < 8; ++i) {
    stormers.emplace_back([&] {
      while (!stop.load()) this_fiber::Yield();
    });
  }
  std::atomic<int> fired{0};
  for (int i = 0; i < 20; ++i) {
    SetDetachedTimer(TimerClock::now() + std::chrono::milliseconds(i), [&] { ++fired; });
  }
  // Generous bound: the storm must not starve the timer thread or its callbacks.
  EXPECT_TRUE(WaitFor([&] { return fired.load() == 20; }, 10s));
  stop = true;
  for (auto& f : stormers) f.join();
}

TEST(TimerTest, SleepOnAPlainThreadSleepsTheThread) {
  const auto start = TimerClock::now();
  this_fiber::SleepFor(2ms);
  EXPECT_GE(TimerClock::now() - start, 2ms);
}

TEST(TimerTest, TimerKillerKillsOnDestruction) {
  ScopedRuntime runtime(1);
  std::atomic<int> ran{0};
  {
    TimerKiller killer(SetTimer(TimerClock::now() + 1h, [&] { ++ran; }));
  }
  TimerKiller moved;
  moved = TimerKiller(SetTimer(TimerClock::now() + 1h, [&] { ++ran; }));
  moved.Reset();
  EXPECT_EQ(ran.load(), 0);
}

// Shutdown with pending one-shot and periodic timers and sleeping fibers: sleeping
// fibers finish (TerminateRuntime drains), pending timers are cancelled and freed
// (ASan checks the leak), and nothing runs once TerminateRuntime has returned (every
// runtime thread is joined by then).
TEST(TimerTest, ShutdownCancelsPendingTimers) {
  std::atomic<int> periodic_calls{0}, far_calls{0}, slept{0};
  {
    ScopedRuntime runtime(2);
    SetDetachedTimer(TimerClock::now(), 1ms, [&] { ++periodic_calls; });
    SetDetachedTimer(TimerClock::now() + 1h, [&] { ++far_calls; });
    const std::uint64_t kept = SetTimer(TimerClock::now() + 1h, [&] { ++far_calls; });
    for (int i = 0; i < 100; ++i) {
      StartFiberDetached([&] {
        this_fiber::SleepFor(2ms);
        ++slept;
      });
    }
    ASSERT_TRUE(WaitFor([&] { return periodic_calls.load() >= 3; }));
    KillTimer(kept);
  }
  const int periodic_at_return = periodic_calls.load();
  EXPECT_EQ(slept.load(), 100);
  EXPECT_EQ(far_calls.load(), 0);
  EXPECT_EQ(periodic_calls.load(), periodic_at_return);
}

TEST(TimerDeathTest, PeriodicTimerNeedsAPositiveInterval) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        SetTimer(TimerClock::now(), 0ms, [] {});
      },
      "needs interval > 0");
}

}  // namespace
}  // namespace spindle
