// Copyright 2026 The Spindle Authors.
//
// Strategy v1's wake-up protocol driven step by step through the scheduler's test
// points. Built only with the test seams (runtime/internal/seams/test_seams.h: --config=seams,
// and the asan and tsan configs), which .ci/run tests as a lane of its own.

#include <atomic>
#include <chrono>
#include <thread>

#include "fiber/internal/fiber_entity.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/group/idle_path.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/internal/strategies/scheduling_strategy.h"
#include "runtime/internal/strategies/strategy_v1.h"

namespace spindle::internal {
namespace {

static_assert(kTestSeams, "this test needs the test seams (--config=seams)");

using spindle::testing::WaitFor;
using namespace std::chrono_literals;

// ---- The v1 protocol driven step by step: plain threads play the workers of a group
// that no FiberWorker runs, and the test hook stops them at chosen steps.

// Runs a fiber just taken from a group on this plain thread until it finishes.
void RunToCompletion(FiberEntity* fiber) { GetMasterFiberEntity()->SwitchTo(fiber); }

// A FiberWorker's loop without stealing, as worker `index` of `group`, run on this
// plain thread until the group stops or `done` (if given) is set.
void RunIdleLoop(SchedulingGroup* group, std::size_t index,
                 const std::atomic<bool>* done = nullptr) {
  group->BindWorkerThread(index);
  IdlePath idle(group, index);
  while (!group->stopping() && (done == nullptr || !done->load())) {
    if (FiberEntity* fiber = idle.FindRunnable()) RunToCompletion(fiber);
  }
  group->BindWorkerThread(SchedulingGroup::kNoWorker);
}

StrategyV1* V1(SchedulingGroup* group) { return static_cast<StrategyV1*>(group->strategy()); }
const SpinnerNotifier& Protocol(SchedulingGroup* group) {
  return V1(group)->spinner_notifier();
}

// What the hook below does; the test sets the flags, the workers' threads read them.
struct Script {
  std::atomic<bool> hold_worker0_spinning{false};  // worker 0 waits in kSpinning
  std::atomic<bool> worker1_holds_fiber{false};     // set by worker 1 in kSpinnerTookFiber
  std::atomic<bool> release_worker1{false};         // lets worker 1 leave that step
};
Script* g_script = nullptr;

void FollowScript(SchedulerTestPoint point, std::size_t worker) {
  if (point == SchedulerTestPoint::kSpinning && worker == 0) {
    while (g_script->hold_worker0_spinning.load()) std::this_thread::yield();
  } else if (point == SchedulerTestPoint::kSpinnerTookFiber && worker == 1) {
    g_script->worker1_holds_fiber.store(true);
    while (!g_script->release_worker1.load()) std::this_thread::yield();
  }
}

// The interleaving that lost a wake-up on 16 cores (steps 1-7 of "The wake-up that was
// lost" at the top of spinner_notifier.cc), forced step by step: a producer claims
// spinner B after B popped a fiber, while A, the other worker, has gone to sleep. B must
// pass the claim on, so A wakes and runs the second fiber. On the code before the fix,
// A slept until the group stopped and this test failed at the deadline below.
TEST(SchedulingGroupProtocolTest, ClaimOfASpinnerHoldingAFiberIsPassedOn) {
  SchedulingGroupOptions options;
  options.workers = 2;
  options.run_queue_capacity = 64;
  options.spin_time = 60s;  // spinners leave only when they find a fiber or are claimed
  auto* group = new (kNoNumaNode) SchedulingGroup(options);
  Script script;
  script.hold_worker0_spinning = true;
  g_script = &script;
  SetSchedulerTestHook(&FollowScript);

  std::atomic<bool> n_ran{false}, w_ran{false};
  // Worker A (0), until it has run W or the group stops.
  std::thread a([group, &w_ran] { RunIdleLoop(group, 0, &w_ran); });
  // 1. A and B spin; A is held before its first poll, so B will pop N.
  ASSERT_TRUE(WaitFor([&] { return Protocol(group).spinning_workers() == 0b01; }, 10s));
  // Worker B (1): one pass of its idle path, which spins (S1), takes N and runs it.
  std::thread b([group] {
    group->BindWorkerThread(1);
    IdlePath idle(group, 1);
    if (FiberEntity* fiber = idle.FindRunnable()) RunToCompletion(fiber);
    group->BindWorkerThread(SchedulingGroup::kNoWorker);
  });
  ASSERT_TRUE(WaitFor([&] { return Protocol(group).spinning_workers() == 0b11; }, 10s));
  // 2-3. N claims A (the lowest spinner); B pops N and stops holding it, bit still set.
  group->StartFiber(NewFiberDesc([&n_ran] { n_ran = true; }));
  ASSERT_TRUE(WaitFor([&] { return script.worker1_holds_fiber.load(); }, 10s));
  EXPECT_EQ(Protocol(group).spinning_workers(), 0b10u) << "N should have claimed worker 0";
  // 4. A polls, finds nothing, and goes to sleep.
  script.hold_worker0_spinning = false;
  ASSERT_TRUE(WaitFor([&] { return Protocol(group).sleeping_workers() == 0b01; }, 10s));
  // 5. W claims B, the only spinner.
  group->StartFiber(NewFiberDesc([&w_ran] { w_ran = true; }));
  EXPECT_EQ(Protocol(group).spinning_workers(), 0u) << "W should have claimed worker 1";
  // 6-7. B leaves with N; W must still run, on A.
  script.release_worker1 = true;
  EXPECT_TRUE(WaitFor([&] { return w_ran.load(); }, 10s))
      << "W stayed queued while worker 0 slept: the claim of a spinner that already "
         "held a fiber was lost";
  b.join();
  EXPECT_TRUE(n_ran.load());
  group->strategy()->Stop();  // also wakes A if the claim was lost, so W runs and nothing leaks
  a.join();
  SetSchedulerTestHook(nullptr);
  g_script = nullptr;
  EXPECT_TRUE(w_ran.load());
  delete group;
}

// How many times each of workers 0 and 1 has reached W4 (its W3 poll found nothing).
std::atomic<int> g_waits[2];

void CountWaits(SchedulerTestPoint point, std::size_t worker) {
  if (point == SchedulerTestPoint::kBeforeWait && worker < 2) g_waits[worker]++;
}

// A producer preempted inside its push hides the queue from consumers: the wake-up that
// a later producer pays for finds nothing. Steps 1-5 of "More work" at the top of
// spinner_notifier.cc, forced: X must wake Y for F6 after it takes F5. On the code
// before the fix, F5 (which waits for F6) timed out with Y asleep.
TEST(SchedulingGroupProtocolTest, StalledPushDoesNotStrandTheFibersItHid) {
  SchedulingGroupOptions options;
  options.workers = 2;
  options.run_queue_capacity = 64;
  options.spin_time = 1us;
  auto* group = new (kNoNumaNode) SchedulingGroup(options);
  g_waits[0] = 0;
  g_waits[1] = 0;
  SetSchedulerTestHook(&CountWaits);
  std::thread x(RunIdleLoop, group, 0, nullptr), y(RunIdleLoop, group, 1, nullptr);
  ASSERT_TRUE(WaitFor([] { return g_waits[0] >= 1 && g_waits[1] >= 1; }, 10s));
  // 1. Producer A claims a position and stalls.
  const std::uint64_t position = V1(group)->BeginStalledPushForTesting();
  // 2. Producer B pushes F6 behind it and wakes X.
  std::atomic<bool> f6_ran{false}, f5_ok{false}, f5_done{false};
  const std::uint64_t wakeups_before = group->strategy()->stats().wakeups;
  group->StartFiber(NewFiberDesc([&f6_ran] { f6_ran = true; }));
  EXPECT_EQ(group->strategy()->stats().wakeups, wakeups_before + 1);
  // 3. X finds the queue empty and goes back to W4.
  ASSERT_TRUE(WaitFor([] { return g_waits[0] >= 2; }, 10s));
  EXPECT_FALSE(f6_ran.load()) << "F6 ran past the unpublished position";
  // 4-5. A publishes F5 and wakes X, which runs F5; F5 waits for F6 on X's thread.
  V1(group)->FinishStalledPushForTesting(position, EncodeEntry(NewFiberDesc([&] {
                                           f5_ok = WaitFor([&] { return f6_ran.load(); }, 10s);
                                           f5_done = true;
                                         })),
                                         /*stealable=*/true);
  ASSERT_TRUE(WaitFor([&] { return f5_done.load(); }, 20s));
  EXPECT_TRUE(f5_ok.load()) << "F6 stayed queued behind F5 while worker 1 slept";
  group->strategy()->Stop();  // wakes Y if it still sleeps, so F6 runs and nothing leaks
  x.join();
  y.join();
  SetSchedulerTestHook(nullptr);
  EXPECT_TRUE(f6_ran.load());
  delete group;
}

}  // namespace
}  // namespace spindle::internal
