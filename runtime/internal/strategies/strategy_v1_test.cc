// Copyright 2026 The Spindle Authors.
//
// Strategy v1's policies, each with a test that fails when it breaks: at most two
// workers spin (poll the queue) at once, and a producer that finds no spinner wakes the
// lowest-numbered sleeper; a busy worker's fibers wait in its stage, which its joiners,
// its next scheduling point, idle siblings and the hog monitor empty; timer-woken fibers
// go first without starving the shared queue. Plain threads play the workers: through
// the spinner notifier's steps, and through the idle path a FiberWorker runs.

#include "runtime/internal/strategies/strategy_v1.h"

#include <atomic>
#include <bitset>
#include <chrono>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/group/scheduling_group.h"
#include "runtime/internal/group/idle_path.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;
using spindle::testing::WaitFor;

struct StrategyDeleter {
  void operator()(StrategyV1* strategy) const { delete strategy; }
};
using StrategyPtr = std::unique_ptr<StrategyV1, StrategyDeleter>;

StrategyPtr MakeV1(std::size_t workers, std::chrono::nanoseconds spin_time) {
  SchedulingGroupOptions options;
  options.workers = workers;
  options.run_queue_capacity = 64;
  options.strategy = "v1";
  options.spin_time = spin_time;
  return StrategyPtr(new (kNoNumaNode) StrategyV1(options));
}

std::uintptr_t Desc() { return EncodeEntry(AllocateFiberDesc()); }
void Free(std::uintptr_t entry) { FreeFiberDesc(DecodeDesc(entry)); }
std::size_t Bits(std::uint64_t mask) { return std::bitset<64>(mask).count(); }

// Four workers want to spin; two may (S1). A push then claims the lowest spinner (P2),
// which stops spinning and takes the fiber with the poll its claim is owed (S3); the
// other spinner keeps spinning until it leaves empty-handed.
TEST(StrategyV1Test, AtMostTwoWorkersSpin) {
  StrategyPtr v1 = MakeV1(4, 60s);
  IdleNotifier& notifier = v1->notifier();
  bool spins[4] = {};
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < 4; ++i) {
    workers.emplace_back([&, i] { spins[i] = notifier.StartSearching(i); });
  }
  for (auto& worker : workers) worker.join();
  const std::uint64_t spinners = v1->spinner_notifier().spinning_workers();
  ASSERT_EQ(Bits(spinners), 2u) << "spinners: " << std::bitset<4>(spinners);
  std::size_t lowest = 4, other = 4;
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(spins[i], ((spinners >> i) & 1) != 0) << "worker " << i;
    if (spins[i]) (lowest == 4 ? lowest : other) = i;
  }
  v1->Enqueue(Desc(), true, ReadyReason::kStarted, SchedulingStrategy::kNoWorker);
  EXPECT_EQ(v1->spinner_notifier().spinning_workers(), std::uint64_t{1} << other)
      << "the push should claim the lowest spinner";
  EXPECT_FALSE(notifier.KeepSearching(lowest)) << "a claimed spinner stops spinning";
  EXPECT_TRUE(notifier.KeepSearching(other));
  const std::uintptr_t taken = notifier.StopSearching(lowest, true, 0);
  ASSERT_NE(taken, 0u) << "a claimed spinner polls once more and takes the fiber";
  Free(taken);
  EXPECT_EQ(notifier.StopSearching(other, true, 0), 0u);
  EXPECT_EQ(v1->spinner_notifier().spinning_workers(), 0u);
}

// A FiberWorker's loop without stealing, as worker `index` of `group`, on a plain
// thread: until it has run one fiber, or `stop`.
void RunUntilOneFiber(SchedulingGroup* group, std::size_t index,
                      const std::atomic<bool>& stop) {
  group->BindWorkerThread(index);
  IdlePath idle(group, index);
  while (!stop.load()) {
    if (FiberEntity* fiber = idle.FindRunnable()) {
      GetMasterFiberEntity()->SwitchTo(fiber);
      break;  // the others keep sleeping
    }
  }
  group->BindWorkerThread(SchedulingGroup::kNoWorker);
}

// Three workers sleep (no spinner). A producer's fiber goes to the lowest-numbered one,
// worker 0: v1 keeps the low workers busy and lets the high ones sleep on.
TEST(StrategyV1Test, AProducerWakesTheLowestSleeper) {
  SchedulingGroupOptions options;
  options.workers = 3;
  options.run_queue_capacity = 64;
  options.strategy = "v1";
  options.spin_time = 0ns;
  auto* group = new (kNoNumaNode) SchedulingGroup(options);
  const auto& protocol = static_cast<StrategyV1*>(group->strategy())->spinner_notifier();
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < 3; ++i) {
    workers.emplace_back(RunUntilOneFiber, group, i, std::cref(stop));
  }
  // Marked sleeping is not enough: a worker between its mark (W1) and its re-check (W3)
  // would take the fiber itself. Wait until each has gone to sleep (its sleeps count).
  ASSERT_TRUE(WaitFor(
      [&] {
        return protocol.sleeping_workers() == 0b111 && protocol.sleeps(0) >= 1 &&
               protocol.sleeps(1) >= 1 && protocol.sleeps(2) >= 1;
      },
      10s))
      << "sleepers: " << std::bitset<3>(protocol.sleeping_workers());
  std::atomic<int> taker{-1};
  group->StartFiber(NewFiberDesc([&taker] {
    taker.store(static_cast<int>(GetCurrentFiberEntity()->scheduling_worker));
  }));
  ASSERT_TRUE(WaitFor([&] { return taker.load() >= 0; }, 10s)) << "nobody woke";
  EXPECT_EQ(taker.load(), 0) << "the fiber went to worker " << taker.load();
  EXPECT_TRUE(WaitFor([&] { return protocol.sleeping_workers() == 0b110; }, 10s))
      << "only the lowest sleeper should be woken; sleepers: "
      << std::bitset<3>(protocol.sleeping_workers());
  stop = true;
  group->strategy()->Stop();  // wakes every sleeper
  for (auto& worker : workers) worker.join();
  delete group;
}


// ---- Staging ("Staging" in strategy_v1.cc) and the timers' woken queue.

StrategyPtr MakeV1Staged(std::size_t workers, std::size_t stage) {
  SchedulingGroupOptions options;
  options.workers = workers;
  // Room for a test thread's 200 wake-ups (a plain thread waits for room; the timer
  // thread would spill).
  options.run_queue_capacity = 256;
  options.strategy = "v1";
  StrategyV1Settings settings;
  settings.stage_capacity = stage;
  return StrategyPtr(new (kNoNumaNode) StrategyV1(options, settings));
}

// Distinct fake fiber entries (even words, never dereferenced: ClaimEntry only reads
// descriptors, which are odd).
std::uintptr_t Fiber(std::uintptr_t i) { return i * 16; }

// While no worker is idle, a fiber made ready by worker 0's fiber waits in its stage,
// off the shared queue; the joiner takes it back from anywhere in the stage (G5).
TEST(StrategyV1Test, BusyWorkersStageAndJoinersTakeBack) {
  StrategyPtr v1 = MakeV1Staged(2, 8);
  for (std::uintptr_t i = 1; i <= 3; ++i) {
    v1->Enqueue(Fiber(i), true, ReadyReason::kStarted, 0);
  }
  EXPECT_EQ(v1->stats().global_queue_size, 0u) << "nothing reached the shared queue";
  EXPECT_EQ(v1->stats().local_queue_size, 3u);
  EXPECT_FALSE(v1->UnsafeEmpty()) << "a stage is part of what the re-check sees";
  EXPECT_TRUE(v1->TakeBackEntry(0, Fiber(2))) << "from the middle of the stage";
  EXPECT_FALSE(v1->TakeBackEntry(1, Fiber(1))) << "another worker's stage is not its own";
  // G1: worker 0's next scheduling point moves the stage to the ring, order kept.
  EXPECT_EQ(v1->TakeNext(0), Fiber(1));
  EXPECT_EQ(v1->TakeNext(0), Fiber(3));
  EXPECT_EQ(v1->TakeNext(0), 0u);
  EXPECT_TRUE(v1->UnsafeEmpty());
}

// G3: a worker whose own sources are empty takes the oldest fiber of a sibling's stage.
TEST(StrategyV1Test, AnIdleWorkerTakesFromASiblingsStage) {
  StrategyPtr v1 = MakeV1Staged(3, 8);
  v1->Enqueue(Fiber(1), true, ReadyReason::kStarted, 2);
  v1->Enqueue(Fiber(2), true, ReadyReason::kWoken, 2);
  EXPECT_EQ(v1->TakeNext(0), Fiber(1));
  EXPECT_EQ(v1->TakeNext(1), Fiber(2));
  EXPECT_EQ(v1->TakeNext(0), 0u);
  EXPECT_EQ(v1->stats().steals_in_group, 2u);
}

// G2: with a worker spinning, a fiber goes to the shared queue, after what the stage
// held (an idle worker gets the oldest); a yield never stages.
TEST(StrategyV1Test, AnIdleWorkerTurnsStagingOff) {
  StrategyPtr v1 = MakeV1Staged(3, 8);
  v1->Enqueue(Fiber(1), true, ReadyReason::kStarted, 0);
  ASSERT_EQ(v1->stats().local_queue_size, 1u);
  ASSERT_TRUE(v1->notifier().StartSearching(2));
  v1->Enqueue(Fiber(2), true, ReadyReason::kStarted, 0);
  EXPECT_EQ(v1->stats().local_queue_size, 0u);
  EXPECT_EQ(v1->stats().global_queue_size, 2u);
  // The push claimed the spinner (P2); its S3 poll takes the oldest.
  EXPECT_EQ(v1->notifier().StopSearching(2, true, 0), Fiber(1));
  EXPECT_EQ(v1->TakeNext(1), Fiber(2));
  v1->Enqueue(Fiber(3), true, ReadyReason::kYielded, 0);
  EXPECT_EQ(v1->stats().global_queue_size, 1u) << "a yielding fiber is not staged";
  EXPECT_EQ(v1->TakeNext(1), Fiber(3));
}

// G4: a full stage sends its older half to the shared queue; G6: the hog monitor's
// rescue sends the rest.
TEST(StrategyV1Test, AFullStageSpillsItsOlderHalfAndARescueMovesTheRest) {
  StrategyPtr v1 = MakeV1Staged(2, 4);
  for (std::uintptr_t i = 1; i <= 5; ++i) {
    v1->Enqueue(Fiber(i), true, ReadyReason::kStarted, 0);
  }
  EXPECT_EQ(v1->stats().global_queue_size, 2u);
  EXPECT_EQ(v1->stats().local_queue_size, 3u);
  EXPECT_EQ(v1->RescueStalledWorker(0), 3u);
  EXPECT_EQ(v1->stats().local_queue_size, 0u);
  for (std::uintptr_t i = 1; i <= 5; ++i) EXPECT_EQ(v1->TakeNext(1), Fiber(i));
  EXPECT_EQ(v1->RescueStalledWorker(0), 0u);
}

// --fiber_v1_stage_size=0: every fiber goes to the shared queue at once.
TEST(StrategyV1Test, StageSizeZeroStagesNothing) {
  StrategyPtr v1 = MakeV1Staged(2, 0);
  v1->Enqueue(Fiber(1), true, ReadyReason::kStarted, 0);
  EXPECT_EQ(v1->stats().global_queue_size, 1u);
  EXPECT_EQ(v1->TakeNext(1), Fiber(1));
}

// Timer-woken fibers run ahead of fibers merely started, but the shared queue still
// goes first once in 61 takes, so timers that keep firing cannot starve it.
TEST(StrategyV1Test, TimerWokenFibersGoFirstWithoutStarvingTheQueue) {
  StrategyPtr v1 = MakeV1Staged(1, 8);
  v1->Enqueue(Fiber(1000), true, ReadyReason::kStarted, SchedulingStrategy::kNoWorker);
  std::uintptr_t woken[200];
  bool stealable[200];
  for (std::uintptr_t i = 1; i <= 200; ++i) {
    woken[i - 1] = Fiber(i);
    stealable[i - 1] = true;
  }
  v1->EnqueueWoken(woken, stealable, 200, SchedulingStrategy::kNoWorker);
  EXPECT_EQ(v1->TakeNext(0), Fiber(1)) << "the overdue fiber first";
  std::size_t takes = 1;
  std::uintptr_t entry = 0;
  while ((entry = v1->TakeNext(0)) != Fiber(1000)) {
    ASSERT_NE(entry, 0u) << "the started fiber was lost";
    ++takes;
  }
  EXPECT_LE(takes, 61u) << "the shared queue waited behind " << takes << " timer wake-ups";
  std::size_t rest = 0;
  while (v1->TakeNext(0) != 0) ++rest;
  EXPECT_EQ(takes + rest, 200u) << "every woken fiber is taken once";
  EXPECT_TRUE(v1->UnsafeEmpty());
}

}  // namespace
}  // namespace spindle::internal
