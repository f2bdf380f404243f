// Copyright 2026 The Spindle Authors.
//
// The TimerWorker's protocol windows, forced through its test hooks. Built only with the
// test seams (runtime/internal/seams/test_seams.h: --config=seams, and the asan and tsan
// configs), which .ci/run tests as a lane of its own.

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/seams/test_seams.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {
namespace {

static_assert(kTestSeams, "this test needs the test seams (--config=seams)");

// A worker number with no timer queue: these tests drive the timer thread's heap alone.
constexpr std::size_t kNotAWorker = SIZE_MAX;

using namespace std::chrono_literals;
using spindle::testing::ScopedRuntime;
using spindle::testing::WaitFor;

// Holds the first round of `g_stalled`'s loop, between its two reads, until Stop() has
// both set the stop flag and bumped the wake-up sequence.
std::atomic<TimerWorker*> g_stalled{nullptr};
std::atomic<bool> g_stall_entered{false};

void StallUntilStopIsRequested(TimerWorker* worker) {
  if (worker != g_stalled.load()) return;
  g_stalled.store(nullptr);  // the first round only
  const int seq = worker->wake_sequence();
  g_stall_entered.store(true);
  while (!worker->stop_requested() || worker->wake_sequence() == seq) {
    std::this_thread::yield();
  }
}

// Stop() lands between the loop's read of the wake-up sequence and its check of the stop
// flag. The thread must see the stop and leave. (Before the fix the loop checked the
// flag first and read the sequence second: a Stop() in between left it waiting on the
// new sequence, with no timer and no wake-up to come, and Stop()'s join hung. Seen on
// 16 cores as a hung ~ScopedRuntime in future_test.)
TEST(TimerWorkerTest, StopBetweenTheLoopsTwoReadsIsNotLost) {
  ScopedRuntime runtime(1);
  // Leaked if the test fails: its thread cannot be joined then.
  auto* worker = new TimerWorker(Runtime::Get().group(0), /*workers=*/0);
  g_stall_entered = false;
  g_stalled = worker;
  SetTimerWorkerTestHook(&StallUntilStopIsRequested);
  worker->Start();
  ASSERT_TRUE(WaitFor([] { return g_stall_entered.load(); }, 10s));
  auto stopped = std::make_shared<std::atomic<bool>>(false);
  std::thread stopper([worker, stopped] {
    worker->Stop();
    stopped->store(true);
  });
  const bool ok = WaitFor([&] { return stopped->load(); }, 10s);
  SetTimerWorkerTestHook(nullptr);
  if (!ok) {
    stopper.detach();  // blocked in join() for good; the process exits around it
    FAIL() << "TimerWorker::Stop() did not return: the thread slept through the stop";
  }
  stopper.join();
  delete worker;
}

std::atomic<bool> g_hold_timer_threads{false};

std::int64_t Nanos(TimerClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

void CountFiring(void* arg) { static_cast<std::atomic<int>*>(arg)->fetch_add(1); }

TimerEntry* CountingTimer(TimerClock::time_point expires_at, std::atomic<int>* count) {
  auto* entry = NewTimerEntry();  // released through the pool: not plain new
  entry->refs.store(1, std::memory_order_relaxed);  // the worker's only
  entry->expires = MonotonicDeadline::At(expires_at);
  entry->inline_callback = &CountFiring;
  entry->inline_arg = count;
  return entry;
}

std::atomic<TimerWorker*> g_late_target{nullptr};
std::atomic<TimerEntry*> g_late_entry{nullptr};

void AddLateTimer(TimerWorker* worker) {
  if (worker != g_late_target.load()) return;  // the runtime's own timer workers
  if (TimerEntry* entry = g_late_entry.exchange(nullptr)) worker->Add(entry);
}

// A producer adds a timer after an assist's collection and reads the published expiry
// before the assist publishes the heap's new front: its timer is later than what it
// reads, so it neither lowers the expiry nor wakes the thread. The assist must still
// find it (its re-check of the producer lists) and publish its expiry; before that
// re-check it published "no timer" and the entry waited for the thread, which busy
// workers keep off the CPU (CI: 499 of 500 sleepers woke in BusyWorkersFireDueTimers).
TEST(TimerWorkerTest, AnAssistPublishesATimerAddedDuringItsRound) {
  ScopedRuntime runtime(1);
  // Its thread never starts: only the assists below fire its timers.
  TimerWorker worker(Runtime::Get().group(0), /*workers=*/0);
  std::atomic<int> fired{0};
  const auto now = TimerClock::now();
  const auto late = now + 1h;
  worker.Add(CountingTimer(now - 1ms, &fired));
  ASSERT_TRUE(worker.Due(kNotAWorker, Nanos(now)));
  g_late_entry = CountingTimer(late, &fired);
  g_late_target = &worker;
  SetTimerWorkerAssistTestHook(&AddLateTimer);
  worker.FireDue(kNotAWorker, Nanos(now));
  SetTimerWorkerAssistTestHook(nullptr);
  g_late_target = nullptr;
  EXPECT_EQ(g_late_entry.load(), nullptr) << "the hook did not run inside the assist";
  EXPECT_EQ(fired.load(), 1);
  EXPECT_FALSE(worker.Due(kNotAWorker, Nanos(late) - 1));
  EXPECT_TRUE(worker.Due(kNotAWorker, Nanos(late))) << "the timer added during the round was lost";
  worker.FireDue(kNotAWorker, Nanos(late));
  EXPECT_EQ(fired.load(), 2);
  EXPECT_EQ(worker.assists(), 2u);
}

// Busy workers fire due timers themselves (group_timers.h): with the timer thread held
// at the top of its loop (the test hook), sleeping fibers are woken only by the workers
// that switch between yielding fibers. Every sleeper wakes exactly once and none early.
TEST(TimerWorkerTest, BusyWorkersFireDueTimers) {
  ScopedRuntime runtime(2);
  TimerWorker* worker = TimerWorkerFor(Runtime::Get().group(0));
  const std::uint64_t assists_before = worker->assists();
  g_hold_timer_threads = true;
  SetTimerWorkerTestHook([](TimerWorker*) {
    // Held for at most a minute, so a broken assist fails the test instead of hanging it.
    WaitFor([] { return !g_hold_timer_threads.load(); }, std::chrono::seconds(60));
  });
  const int sleepers = static_cast<int>(spindle::testing::Scaled(2000));
  std::atomic<int> woken{0};
  std::atomic<int> early{0};
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<Fiber>> busy;
  for (int i = 0; i < 2; ++i) {
    busy.push_back(std::make_unique<Fiber>([&] {
      while (!stop.load(std::memory_order_relaxed)) this_fiber::Yield();
    }));
  }
  for (int i = 0; i < sleepers; ++i) {
    StartFiberDetached([&] {
      const auto deadline = TimerClock::now() + 1ms;
      this_fiber::SleepUntil(deadline);
      if (TimerClock::now() < deadline) early.fetch_add(1);
      woken.fetch_add(1);
    });
  }
  EXPECT_TRUE(WaitFor([&] { return woken.load() == sleepers; }, std::chrono::seconds(30)));
  g_hold_timer_threads = false;
  SetTimerWorkerTestHook(nullptr);
  stop = true;
  for (auto& fiber : busy) fiber->join();
  EXPECT_EQ(woken.load(), sleepers);
  EXPECT_EQ(early.load(), 0);
  EXPECT_GT(worker->assists(), assists_before);
}

}  // namespace
}  // namespace spindle::internal
