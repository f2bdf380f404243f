// Copyright 2026 The Spindle Authors.

#include "timer/timer.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

TEST(TimerTest, EveryTimerFiresOnceAndNeverEarly) {
  constexpr int kTimers = 200;
  std::vector<std::atomic<int>> calls(kTimers);  // per timer, read after the runtime ends
  {
    ScopedRuntime runtime(2);
    std::mt19937 random(7);
    const auto base = TimerClock::now() + 20ms;
    std::vector<TimerClock::time_point> due(kTimers), fired(kTimers);
    std::vector<std::uint64_t> ids(kTimers);
    std::atomic<int> count{0};
    for (int i = 0; i < kTimers; ++i) {
      due[i] = base + std::chrono::microseconds(random() % 40000);
      auto arm = [&, i] {
        ids[i] = SetTimer(due[i], [&, i] {
          if (calls[i].fetch_add(1) == 0) fired[i] = TimerClock::now();
          ++count;
        });
      };
      if (i % 2 == 0) {
        arm();  // from a plain thread
      } else {
        RunAsFiber(arm);  // from a fiber
      }
    }
    ASSERT_TRUE(WaitFor([&] { return count.load() >= kTimers; }));
    for (int i = 0; i < kTimers; ++i) {
      EXPECT_GE(fired[i], due[i]) << "timer " << i << " fired early";
      EXPECT_FALSE(KillTimer(ids[i]));  // already fired
    }
    // The order in which callbacks *start* is checked in timer_worker_test: here they
    // run in fibers, whose start can reorder near-simultaneous expiries.
  }
  // The runtime has ended (every timer released, every fiber run): a timer that fired
  // twice, however late the second time, shows here.
  for (int i = 0; i < kTimers; ++i) EXPECT_EQ(calls[i].load(), 1) << "timer " << i;
}

TEST(TimerTest, PeriodicCallsNeverOverlapAndAreNeverEarly) {
  ScopedRuntime runtime(2);
  const auto start = TimerClock::now() + 2ms;
  static constexpr auto kInterval = 3ms;
  std::atomic<int> in_callback{0}, overlaps{0}, calls{0}, early{0};
  auto token = std::make_shared<int>(0);  // held by the callback only
  const std::weak_ptr<int> callback_alive = token;
  const std::uint64_t id = SetTimer(start, kInterval, [&, token] {
    const int k = calls.load();
    if (TimerClock::now() < start + k * kInterval) ++early;
    if (++in_callback > 1) ++overlaps;
    // Every third call overruns two periods: the next ones must come back to back
    // (not lost, not overlapping).
    if (k % 3 == 0) this_fiber::SleepFor(2 * kInterval);
    --in_callback;
    ++calls;
  });
  token.reset();
  ASSERT_TRUE(WaitFor([&] { return calls.load() >= 30; }));
  EXPECT_TRUE(KillTimer(id));
  const int after_kill = calls.load();
  // Killed, the timer lets its callback go once no call runs: after that none can come.
  // (Not a window of a few intervals, which a slow machine passes whatever happens.)
  ASSERT_TRUE(WaitFor([&] { return callback_alive.expired(); }))
      << "a killed periodic timer kept its callback";
  EXPECT_LE(calls.load(), after_kill + 1);  // at most the call already running
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(early.load(), 0);
}

// timer.h: the next expiry of a periodic timer is `interval` after the previous
// expiry, so calls that fell behind are made at once, none skipped. A timer whose first
// expiry is ten intervals of a minute in the past owes eleven calls now (the expiries up
// to now); re-armed from the time of each call instead, it would make one and then wait
// a minute. The deadline below is shorter than that minute, so only the skip fails it.
TEST(TimerTest, APeriodicTimerThatFellBehindMakesEveryCallItOwesAtOnce) {
  ScopedRuntime runtime(2);
  // Ten intervals ago must lie after the steady clock's epoch (the machine's boot, on
  // Linux): a freshly booted machine has less than ten minutes behind it, and a time
  // point before the epoch is the epoch itself, which owes fewer calls. So the interval
  // is a minute, or a twentieth of the time since boot if that is shorter.
  const auto since_boot = TimerClock::now().time_since_epoch();
  ASSERT_GT(since_boot, 2s) << "the steady clock's epoch is under 2 s ago";
  const auto interval = std::min<TimerClock::duration>(std::chrono::minutes(1), since_boot / 20);
  const auto first = TimerClock::now() - 10 * interval;
  std::atomic<int> calls{0}, early{0};
  const std::uint64_t id = SetTimer(first, interval, [&] {
    const int k = calls.load();
    if (TimerClock::now() < first + k * interval) ++early;
    ++calls;
  });
  EXPECT_TRUE(WaitFor([&] { return calls.load() >= 11; }, std::chrono::seconds(50)))
      << "only " << calls.load() << " of the 11 calls owed were made";
  EXPECT_TRUE(KillTimer(id));
  EXPECT_EQ(early.load(), 0);
}

// KillTimer racing the expiry, 1e4 times: the callback runs at most once, and exactly
// when KillTimer says it did not prevent it. Each outcome is first forced (a kill long
// before the expiry prevents the call; a kill after the call was seen to run does not),
// so both answers are checked however fast the machine is. Then the two race; the
// racing rounds must see both outcomes too, or they did not race. How long a timer
// takes to fire depends on the machine (under TSan it can take longer than the widest
// spin below, and every kill then wins), so the spin's range widens whenever a stretch
// of rounds saw no call, and rounds run until both outcomes were seen (at most 20 s;
// past 5 s, fewer rounds than the usual are enough).
TEST(TimerTest, KillRacingExpiryReportsWhatHappened) {
  const int rounds = static_cast<int>(Scaled(10000));
  constexpr int kMaxRounds = 1000000;
  constexpr int kForcedRounds = 20;
  std::vector<std::atomic<int>> ran(kMaxRounds);
  std::vector<char> prevented(kMaxRounds);
  std::vector<std::atomic<int>> forced_early_ran(kForcedRounds);
  std::vector<std::atomic<int>> forced_late_ran(kForcedRounds);
  int done = 0;
  {
    ScopedRuntime runtime(2);
    for (int i = 0; i < kForcedRounds; ++i) {
      const std::uint64_t early = SetTimer(TimerClock::now() + std::chrono::hours(1),
                                           [&forced_early_ran, i] { ++forced_early_ran[i]; });
      EXPECT_TRUE(KillTimer(early)) << "forced round " << i << ": a kill an hour before "
                                    << "the expiry did not prevent the call";
      const std::uint64_t late =
          SetTimer(TimerClock::now(), [&forced_late_ran, i] { ++forced_late_ran[i]; });
      ASSERT_TRUE(WaitFor([&] { return forced_late_ran[i].load() == 1; }))
          << "forced round " << i << ": a timer due now never ran";
      EXPECT_FALSE(KillTimer(late)) << "forced round " << i << ": a kill after the call "
                                    << "ran says it prevented it";
    }
    std::mt19937 random(3);
    std::uint64_t spin_range_us = 60;
    int killed_in_stretch = 0;
    int killed_so_far = 0;
    const auto enough = TimerClock::now() + 5s;
    const auto give_up = TimerClock::now() + 20s;
    for (int i = 0; i < kMaxRounds; ++i) {
      const std::uint64_t id =
          SetTimer(TimerClock::now() + std::chrono::microseconds(random() % 50),
                   [&ran, i] { ++ran[i]; });
      const auto spin_until =
          TimerClock::now() + std::chrono::microseconds(random() % spin_range_us);
      while (TimerClock::now() < spin_until) {
      }
      prevented[i] = KillTimer(id);
      done = i + 1;
      killed_in_stretch += prevented[i] ? 1 : 0;
      killed_so_far += prevented[i] ? 1 : 0;
      if (done % 100 == 0) {
        // Every kill of the stretch won: let the timers have longer (at most 100 ms).
        if (killed_in_stretch == 100 && spin_range_us < 100000) spin_range_us *= 2;
        killed_in_stretch = 0;
      }
      // Enough rounds with both outcomes (or, with a widened spin, 5 s of them).
      const bool both = killed_so_far > 0 && killed_so_far < done;
      if (both && (done >= rounds || TimerClock::now() > enough)) break;
      if (TimerClock::now() > give_up) break;
    }
  }  // TerminateRuntime: every callback that started has finished
  for (int i = 0; i < kForcedRounds; ++i) {
    EXPECT_EQ(forced_early_ran[i].load(), 0) << "forced round " << i << ": killed, yet it ran";
    EXPECT_EQ(forced_late_ran[i].load(), 1) << "forced round " << i;
  }
  int killed = 0, fired = 0;
  for (int i = 0; i < done; ++i) {
    EXPECT_EQ(ran[i].load(), prevented[i] ? 0 : 1) << "round " << i;
    (prevented[i] ? killed : fired)++;
  }
  EXPECT_GT(killed, 0) << done << " rounds";
  EXPECT_GT(fired, 0) << done << " rounds";
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

// Timers due in 20 ms are killed by a TimerKiller's destructor, by Reset() and by a
// move-assignment over it; a control timer due at the same time is not killed. A killed
// timer lets its callback go (all three hold `token`); once every such callback is
// destroyed none of them can run, so a count of 0 then means none ever ran, whatever
// order the callbacks start in (chaos scheduling reorders them).
TEST(TimerTest, TimerKillerKillsOnDestruction) {
  ScopedRuntime runtime(1);
  std::atomic<int> killed_ran{0}, control_ran{0};
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> killed_alive = token;
  const auto due = TimerClock::now() + 20ms;
  {
    TimerKiller killer(SetTimer(due, [&, token] { ++killed_ran; }));
  }
  TimerKiller reset(SetTimer(due, [&, token] { ++killed_ran; }));
  reset.Reset();
  TimerKiller moved(SetTimer(due, [&, token] { ++killed_ran; }));
  moved = TimerKiller(SetTimer(due, [&] { ++control_ran; }));  // kills the first
  token.reset();
  ASSERT_TRUE(WaitFor([&] { return killed_alive.expired(); }, 10s))
      << "a killed timer kept its callback";
  EXPECT_EQ(killed_ran.load(), 0) << "a killed timer fired";
  EXPECT_TRUE(WaitFor([&] { return control_ran.load() == 1; }, 10s))
      << "the timer that was not killed did not fire";
}

// Shutdown with pending one-shot and periodic timers and sleeping fibers: sleeping
// fibers finish (TerminateRuntime drains), and every pending timer is cancelled and
// released: the callbacks are destroyed by the time TerminateRuntime returns (they all
// hold `token`), so none can run afterwards, and ASan sees no leak.
TEST(TimerTest, ShutdownCancelsPendingTimers) {
  std::atomic<int> periodic_calls{0}, far_calls{0}, slept{0};
  auto token = std::make_shared<int>(0);
  const std::weak_ptr<int> watch = token;
  {
    ScopedRuntime runtime(2);
    SetDetachedTimer(TimerClock::now(), 1ms, [&, token] { ++periodic_calls; });
    SetDetachedTimer(TimerClock::now() + 1h, [&, token] { ++far_calls; });
    const std::uint64_t kept =
        SetTimer(TimerClock::now() + 1h, [&, token] { ++far_calls; });
    token.reset();
    for (int i = 0; i < 100; ++i) {
      StartFiberDetached([&] {
        this_fiber::SleepFor(2ms);
        ++slept;
      });
    }
    ASSERT_TRUE(WaitFor([&] { return periodic_calls.load() >= 3; }));
    EXPECT_TRUE(KillTimer(kept));
    EXPECT_FALSE(watch.expired()) << "the two detached timers are still pending";
  }
  EXPECT_EQ(slept.load(), 100);
  EXPECT_TRUE(watch.expired())
      << "a pending timer's callback outlived TerminateRuntime: not cancelled or not "
         "released (" << watch.use_count() << " left)";
  EXPECT_EQ(far_calls.load(), 0);
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
