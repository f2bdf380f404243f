// Copyright 2026 The Spindle Authors.
//
// Strategy v2's knobs, checked for what they do (not only that they parse): the order in
// which a worker runs the fibers its fiber started (--fiber_v2_spawn and the per-start
// Fiber::Attributes::start_order), and how much a thief takes from a sibling's local
// queue (--fiber_v2_steal). The strategy is driven directly on this thread, as its
// workers would drive it, so the orders are exact.

#include "runtime/internal/strategies/strategy_v2.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/strategies/scheduling_strategy.h"

namespace spindle::internal {
namespace {

struct StrategyDeleter {
  void operator()(StrategyV2* strategy) const { delete strategy; }
};
using StrategyPtr = std::unique_ptr<StrategyV2, StrategyDeleter>;

StrategyPtr MakeV2With(std::size_t workers, const StrategyV2Settings& settings) {
  SchedulingGroupOptions options;
  options.workers = workers;
  options.run_queue_capacity = 1024;
  options.strategy = "v2";
  return StrategyPtr(new (kNoNumaNode) StrategyV2(options, settings));
}

StrategyPtr MakeV2(std::size_t workers, bool spawn_lifo, bool steal_half) {
  StrategyV2Settings settings;
  settings.local_queue_capacity = 256;
  settings.spawn_lifo = spawn_lifo;
  settings.steal_half = steal_half;
  return MakeV2With(workers, settings);
}

// Descriptors numbered by their id, so a taken entry says which start it was.
std::uintptr_t Desc(std::uint64_t id) {
  FiberDesc* desc = AllocateFiberDesc();
  desc->id = id;
  return EncodeEntry(desc);
}

std::uint64_t TakeId(std::uintptr_t entry) {
  EXPECT_NE(entry, 0u);
  if (entry == 0) return 0;
  FiberDesc* desc = DecodeDesc(entry);
  const std::uint64_t id = desc->id;
  FreeFiberDesc(desc);
  return id;
}

// Worker 0 starts fibers 1, 2 and 3 for `reason`, then takes three: their order.
std::vector<std::uint64_t> OrderOfThreeStarts(bool spawn_lifo, ReadyReason reason) {
  StrategyPtr v2 = MakeV2(1, spawn_lifo, /*steal_half=*/true);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    v2->Enqueue(Desc(id), /*stealable=*/true, reason, /*origin=*/0);
  }
  std::vector<std::uint64_t> order;
  for (int i = 0; i < 3; ++i) order.push_back(TakeId(v2->TakeNext(0)));
  EXPECT_EQ(v2->TakeNext(0), 0u);
  return order;
}

using Order = std::vector<std::uint64_t>;

// --fiber_v2_spawn=lifo (the default): the newest start runs next (runnext); the ones
// it displaced wait at the local queue's tail in the order they were started.
TEST(StrategyV2Test, SpawnLifoRunsTheNewestStartNext) {
  EXPECT_EQ(OrderOfThreeStarts(/*spawn_lifo=*/true, ReadyReason::kStarted), (Order{3, 1, 2}));
}

// --fiber_v2_spawn=fifo: every start goes to the back of the local queue.
TEST(StrategyV2Test, SpawnFifoRunsStartsInTheirOrder) {
  EXPECT_EQ(OrderOfThreeStarts(/*spawn_lifo=*/false, ReadyReason::kStarted),
            (Order{1, 2, 3}));
}

// StartOrder::kBack and kNext override the flag for one start (seed 002's enqueue and
// spawn), whichever way the flag is set.
TEST(StrategyV2Test, APerStartOrderOverridesTheFlag) {
  for (const bool spawn_lifo : {true, false}) {
    EXPECT_EQ(OrderOfThreeStarts(spawn_lifo, ReadyReason::kStartedBack), (Order{1, 2, 3}))
        << "spawn_lifo=" << spawn_lifo;
    EXPECT_EQ(OrderOfThreeStarts(spawn_lifo, ReadyReason::kStartedNext), (Order{3, 1, 2}))
        << "spawn_lifo=" << spawn_lifo;
  }
  // Mixed: a kNext start displaces nothing it should not; kBack ones keep their order.
  StrategyPtr v2 = MakeV2(1, /*spawn_lifo=*/false, /*steal_half=*/true);
  v2->Enqueue(Desc(1), true, ReadyReason::kStartedBack, 0);
  v2->Enqueue(Desc(2), true, ReadyReason::kStartedNext, 0);
  v2->Enqueue(Desc(3), true, ReadyReason::kStarted, 0);  // fifo: the back
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 2u);
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u);
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 3u);
}

// An idle worker that finds its own queues empty steals from a sibling's local queue:
// half of it with --fiber_v2_steal=half (one to run, the rest into its own queue), a
// single fiber with =one.
std::uint64_t StolenFromASiblingOfEight(bool steal_half) {
  StrategyPtr v2 = MakeV2(2, /*spawn_lifo=*/false, steal_half);
  for (std::uint64_t id = 1; id <= 8; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStartedBack, /*origin=*/0);
  }
  EXPECT_EQ(v2->TakeNext(1), 0u) << "worker 1's own queues are empty";
  const std::uint64_t first = TakeId(v2->StealInGroup(1));
  EXPECT_EQ(first, 1u) << "a thief takes the oldest of the victim's queue";
  const std::uint64_t stolen = v2->stats().steals_in_group;
  // What the thief moved into its own queue is now its own to run; the rest stays.
  std::uint64_t own = 0;
  while (std::uintptr_t entry = v2->TakeNext(1)) {
    TakeId(entry);
    ++own;
  }
  EXPECT_EQ(own + 1, stolen);
  std::uint64_t left = 0;
  while (std::uintptr_t entry = v2->TakeNext(0)) {
    TakeId(entry);
    ++left;
  }
  EXPECT_EQ(stolen + left, 8u);
  return stolen;
}

TEST(StrategyV2Test, StealHalfTakesHalfOfASiblingsQueue) {
  EXPECT_EQ(StolenFromASiblingOfEight(/*steal_half=*/true), 4u);
}

TEST(StrategyV2Test, StealOneTakesOneFiber) {
  EXPECT_EQ(StolenFromASiblingOfEight(/*steal_half=*/false), 1u);
}

// A thief of another group (StealBatch) takes up to half of one worker's local queue,
// oldest first: the first claimed for it to run, the others left unclaimed for whoever
// takes them from the thief's queues. A descriptor that its joiner already ran inline
// is dropped, not carried over; a scheduling_group_local fiber stays in the victim's
// group (its global queue) and ends the batch, the ones behind it keeping their place.
TEST(StrategyV2Test, StealBatchTakesHalfOfAWorkersQueueAndLeavesLocalFibers) {
  StrategyPtr v2 = MakeV2(2, /*spawn_lifo=*/false, /*steal_half=*/true);
  std::atomic<bool> ran_inline{true};
  FiberDesc* run_by_its_joiner = nullptr;
  for (std::uint64_t id = 1; id <= 10; ++id) {
    const std::uintptr_t entry = Desc(id);
    if (id == 3) {
      run_by_its_joiner = DecodeDesc(entry);
      run_by_its_joiner->claim = &ran_inline;  // its joiner claimed it and ran it
    }
    DecodeDesc(entry)->scheduling_group_local = id == 6;
    v2->Enqueue(entry, /*stealable=*/id != 6, ReadyReason::kStartedBack, /*origin=*/0);
  }
  std::uintptr_t out[32];
  const std::size_t n = v2->StealBatch(out, 32);
  // Half of 10 is 5: 1, 2, 4 and 5 (3 dropped), then 6 ends the batch.
  std::vector<std::uint64_t> ids;
  for (std::size_t i = 0; i < n; ++i) ids.push_back(TakeId(out[i]));
  EXPECT_EQ(ids, (Order{1, 2, 4, 5}));
  // The victim keeps 7..10 in its worker's queue and 6 in its global queue (the
  // global queue is looked at every 61st take; a worker whose queues are empty looks).
  std::vector<std::uint64_t> left;
  while (std::uintptr_t entry = v2->TakeNext(0)) left.push_back(TakeId(entry));
  while (std::uintptr_t entry = v2->TakeNext(1)) left.push_back(TakeId(entry));
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (Order{6, 7, 8, 9, 10}));
  // The queue's reference was dropped by the steal; the joiner's is the last.
  EXPECT_EQ(run_by_its_joiner->run_inline_refs.load(), 1);
  ReleaseRunInlineDesc(run_by_its_joiner);
}

// At most `max` entries, and nothing from an empty group.
TEST(StrategyV2Test, StealBatchTakesAtMostMaxAndNothingFromAnEmptyGroup) {
  StrategyPtr v2 = MakeV2(1, /*spawn_lifo=*/false, /*steal_half=*/true);
  std::uintptr_t out[4];
  EXPECT_EQ(v2->StealBatch(out, 4), 0u);
  for (std::uint64_t id = 1; id <= 20; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStartedBack, /*origin=*/0);
  }
  ASSERT_EQ(v2->StealBatch(out, 4), 4u);
  for (std::uint64_t id = 1; id <= 4; ++id) EXPECT_EQ(TakeId(out[id - 1]), id);
  std::size_t left = 0;
  while (std::uintptr_t entry = v2->TakeNext(0)) {
    TakeId(entry);
    ++left;
  }
  EXPECT_EQ(left, 16u);
}

// T1 (strategy_v1.cc), v2's notifier: a group whose workers are all busy wakes a
// sleeping worker of a thief group for its backlog only while none of the thief's
// workers searches (a searcher looks at the victim by itself); the thief's last
// searcher out, leaving with work of its own, wakes that sleeper instead (I4 in
// notifier.cc), since it will not look at the victim now. The workers are driven
// here as the idle path drives them.
TEST(StrategyV2Test, ABusyGroupWakesAThiefOnlyWhereNoneOfItsWorkersSearches) {
  StrategyPtr victim = MakeV2(1, /*spawn_lifo=*/false, /*steal_half=*/true);
  StrategyPtr thief = MakeV2(2, /*spawn_lifo=*/false, /*steal_half=*/true);
  victim->SetThieves({thief.get()});
  IdleNotifier& thieves = thief->notifier();
  thieves.Announce(0);                     // thief worker 0 sleeps
  ASSERT_TRUE(thieves.StartSearching(1));  // thief worker 1 searches
  // The victim's only worker is busy (it never announced): every push asks a thief.
  victim->Enqueue(Desc(1), /*stealable=*/true, ReadyReason::kStartedBack, /*origin=*/0);
  victim->Enqueue(Desc(2), /*stealable=*/true, ReadyReason::kStartedBack, /*origin=*/0);
  EXPECT_EQ(thieves.wakeups(), 0u) << "woke a thief while one of its workers searched";
  // The searcher found work of its own group and leaves; the victim's backlog is left:
  // worker 0 is woken for it, holding the searcher count.
  thieves.StopSearching(1, /*searching=*/true, /*entry=*/1);
  EXPECT_EQ(thieves.wakeups(), 1u) << "the last searcher out left the victim's backlog";
  EXPECT_TRUE(thieves.EndSleep(0)) << "woken without the count (not as a searcher)";
  // Worker 0 searched, found nothing and sleeps again; nobody searches now, so the
  // next push wakes it.
  thieves.StopSearching(0, /*searching=*/true, /*entry=*/0);
  thieves.Announce(0);
  victim->Enqueue(Desc(3), /*stealable=*/true, ReadyReason::kStartedBack, /*origin=*/0);
  EXPECT_EQ(thieves.wakeups(), 2u);
  EXPECT_TRUE(thieves.EndSleep(0));
  thieves.StopSearching(0, /*searching=*/true, /*entry=*/0);
  // A thief group whose workers are all busy is not woken, and not written to.
  victim->Enqueue(Desc(4), /*stealable=*/true, ReadyReason::kStartedBack, /*origin=*/0);
  EXPECT_EQ(thieves.wakeups(), 2u);
  std::vector<std::uint64_t> left;
  while (std::uintptr_t entry = victim->TakeNext(0)) left.push_back(TakeId(entry));
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (Order{1, 2, 3, 4}));
}

// A yield's swap (StrategyV2::SwapApplies, SwapOnYield): the yielder goes behind the
// local queue and the oldest entry there is taken, as TakeNext() then Enqueue(kYielded)
// would do.
TEST(StrategyV2Test, SwapOnYieldTakesTheOldestLocalEntryAndQueuesTheYielderLast) {
  StrategyPtr v2 = MakeV2(1, /*spawn_lifo=*/false, /*steal_half=*/true);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStartedBack, /*origin=*/0);
  }
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u);  // TK1's first round: the general path
  const std::uintptr_t self = Desc(100);
  StrategyV2::Worker* me = v2->SwapApplies(0);
  ASSERT_NE(me, nullptr);
  EXPECT_EQ(TakeId(v2->SwapOnYield(*me, self)), 2u);
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 3u);
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 100u);
  EXPECT_EQ(v2->TakeNext(0), 0u);
}

// Where TakeNext() would take from elsewhere than the local queue, the swap does not
// apply (and the yield path queues nothing): an empty local queue, TK1's round,
// runnext, the inbox.
TEST(StrategyV2Test, SwapAppliesOnlyWhereTakeNextWouldTakeTheLocalQueue) {
  const std::uintptr_t self = Desc(100);
  {
    StrategyPtr v2 = MakeV2(1, /*spawn_lifo=*/true, /*steal_half=*/true);
    EXPECT_EQ(v2->SwapApplies(0), nullptr);  // TK1's round
    v2->Enqueue(Desc(1), true, ReadyReason::kStartedBack, /*origin=*/0);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u);
    EXPECT_EQ(v2->SwapApplies(0), nullptr);  // nothing to swap with
    v2->Enqueue(Desc(2), true, ReadyReason::kStartedBack, /*origin=*/0);
    v2->Enqueue(Desc(3), true, ReadyReason::kStarted, /*origin=*/0);  // runnext
    EXPECT_EQ(v2->SwapApplies(0), nullptr);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 3u);
    const std::uintptr_t woken = Desc(4);
    const bool stealable = true;
    v2->EnqueueWoken(&woken, &stealable, 1, /*origin=*/0);  // worker 0's inbox
    EXPECT_EQ(v2->SwapApplies(0), nullptr);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 4u);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 2u);  // self was never queued
    EXPECT_EQ(v2->TakeNext(0), 0u);
  }
  {
    // A sibling's inbox, which TK0 looks at too.
    StrategyPtr v2 = MakeV2(2, /*spawn_lifo=*/false, /*steal_half=*/true);
    v2->Enqueue(Desc(1), true, ReadyReason::kStartedBack, /*origin=*/0);
    v2->Enqueue(Desc(2), true, ReadyReason::kStartedBack, /*origin=*/0);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u);
    const std::uintptr_t woken = Desc(3);
    const bool stealable = true;
    v2->EnqueueWoken(&woken, &stealable, 1, /*origin=*/1);
    EXPECT_EQ(v2->SwapApplies(0), nullptr);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 3u);
    StrategyV2::Worker* me = v2->SwapApplies(0);
    ASSERT_NE(me, nullptr);
    EXPECT_EQ(TakeId(v2->SwapOnYield(*me, self)), 2u);
    EXPECT_EQ(TakeId(v2->TakeNext(0)), 100u);
  }
}


// --fiber_v2_global_take (seed 000's GetOneFromGlob / GetAllFromGlob): how much of the
// global queue a worker takes at once. The rest of what it took waits in its local
// queue, where a sibling's TakeNext() no longer sees it (only a steal would).
std::size_t LocalAfterOneGlobalTake(StrategyV2Settings::GlobalTake take) {
  StrategyV2Settings settings;
  settings.local_queue_capacity = 64;
  settings.global_take = take;
  StrategyPtr v2 = MakeV2With(2, settings);
  for (std::uint64_t id = 1; id <= 40; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStarted, SchedulingStrategy::kNoWorker);
  }
  // A worker's first take is its periodic look at the global queue (TK1: one entry);
  // the second finds its own sources empty and takes from the global queue (TK4).
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u) << "the oldest first, whatever the choice";
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 2u);
  const std::size_t local = v2->stats().local_queue_sizes[0];
  std::size_t left = 0;
  for (std::uintptr_t entry; (entry = v2->TakeNext(0)) != 0;) {
    TakeId(entry);
    ++left;
  }
  EXPECT_EQ(left, 38u) << "nothing lost";
  return local;
}

TEST(StrategyV2Test, GlobalTakeOneShareOrAll) {
  EXPECT_EQ(LocalAfterOneGlobalTake(StrategyV2Settings::GlobalTake::kOne), 0u);
  // Go's share: 39 / 2 workers + 1 = 20 taken, one run.
  EXPECT_EQ(LocalAfterOneGlobalTake(StrategyV2Settings::GlobalTake::kShare), 19u);
  // All, up to half the local queue (32): 32 taken, one run.
  EXPECT_EQ(LocalAfterOneGlobalTake(StrategyV2Settings::GlobalTake::kAll), 31u);
}

// --fiber_v2_overflow (PutHalfToGlob / PutOneToGlob): what a full local queue moves to
// the global queue.
TEST(StrategyV2Test, OverflowMovesHalfOrOne) {
  for (const bool half : {true, false}) {
    StrategyV2Settings settings;
    settings.local_queue_capacity = 8;
    settings.spawn_lifo = false;
    settings.overflow_half = half;
    StrategyPtr v2 = MakeV2With(1, settings);
    for (std::uint64_t id = 1; id <= 9; ++id) {
      v2->Enqueue(Desc(id), true, ReadyReason::kStarted, 0);
    }
    // The ninth found the local queue full: half of it (4) and the ninth, or the ninth.
    EXPECT_EQ(v2->stats().global_queue_size, half ? 5u : 1u) << "half=" << half;
    EXPECT_EQ(v2->stats().local_queue_size, half ? 4u : 8u) << "half=" << half;
    std::size_t taken = 0;
    for (std::uintptr_t entry; (entry = v2->TakeNext(0)) != 0; ++taken) TakeId(entry);
    EXPECT_EQ(taken, 9u) << "half=" << half;
  }
}

// A busy worker's poll takes only as many events as its local queue has room for
// (PollBudget): the fibers they wake are queued there, and more would overflow the
// queue's oldest half to the global queue, behind everything there.
TEST(StrategyV2Test, ThePollBudgetIsTheRoomInTheLocalQueue) {
  StrategyV2Settings settings;
  settings.local_queue_capacity = 8;
  settings.spawn_lifo = false;
  StrategyPtr v2 = MakeV2With(2, settings);
  // One place stays for the fiber that switches out (a yield polls before it queues).
  EXPECT_EQ(v2->PollBudget(0), 7u);
  for (std::uint64_t id = 1; id <= 5; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kWoken, 0);
  }
  EXPECT_EQ(v2->PollBudget(0), 2u);
  EXPECT_EQ(v2->PollBudget(1), 7u);  // the sibling's own queue
  for (std::uint64_t id = 6; id <= 7; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kWoken, 0);
  }
  EXPECT_EQ(v2->PollBudget(0), 0u);
  v2->Enqueue(Desc(8), true, ReadyReason::kYielded, 0);  // the yielder's place
  EXPECT_EQ(v2->PollBudget(0), 0u);
  EXPECT_EQ(v2->stats().global_queue_size, 0u);
  std::size_t taken = 0;
  for (std::uintptr_t entry; (entry = v2->TakeNext(0)) != 0; ++taken) TakeId(entry);
  EXPECT_EQ(taken, 8u);
  EXPECT_EQ(v2->PollBudget(0), 7u);
}

// Staging ("Staging" in strategy_v2.cc): while no worker searches or sleeps, the entry a
// new runnext displaces waits in the worker's stage, where its joiner takes it back from
// anywhere (G5), its next take moves it to the local queue (G1) and an idle sibling
// takes its oldest (G3).
TEST(StrategyV2Test, BusyWorkersStageWhatRunnextDisplaces) {
  StrategyV2Settings settings;
  settings.stage_capacity = 8;
  StrategyPtr v2 = MakeV2With(2, settings);
  const std::uintptr_t first = Desc(1), second = Desc(2), third = Desc(3), fourth = Desc(4);
  for (std::uintptr_t entry : {first, second, third, fourth}) {
    v2->Enqueue(entry, true, ReadyReason::kStarted, 0);
  }
  // runnext holds the fourth; the stage the first three; the local queue nothing.
  EXPECT_EQ(v2->stats().local_queue_sizes[0], 4u);
  EXPECT_FALSE(v2->UnsafeEmpty());
  EXPECT_TRUE(v2->TakeBackEntry(0, second)) << "from the middle of the stage";
  FreeFiberDesc(DecodeDesc(second));
  EXPECT_EQ(TakeId(v2->StealInGroup(1)), 1u) << "a sibling takes the oldest staged";
  EXPECT_EQ(v2->stats().steals_in_group, 1u);
  // Worker 0's next take: runnext first (TK2), then what the stage moved to the local
  // queue.
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 4u);
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 3u);
  EXPECT_EQ(v2->TakeNext(0), 0u);
  EXPECT_TRUE(v2->UnsafeEmpty());
}

// RG1: a thief leaves a sibling's runnext to it for the grace. Left there, the thief
// takes it once the grace is over; taken by its owner meanwhile, the thief gives up on it
// at once (it does not wait out the rest of the grace) and finds nothing.
TEST(StrategyV2Test, AThiefTakesARunnextFiberOnlyAfterTheGrace) {
  StrategyV2Settings settings;
  settings.runnext_grace_ns = 1000000;  // 1 ms
  StrategyPtr v2 = MakeV2With(2, settings);
  v2->Enqueue(Desc(1), true, ReadyReason::kStarted, /*origin=*/0);  // runnext
  EXPECT_EQ(TakeId(v2->StealInGroup(1)), 1u) << "nobody took it during the grace";
  EXPECT_EQ(v2->TakeNext(0), 0u);
}

TEST(StrategyV2Test, AThiefGivesUpARunnextFiberItsOwnerTakesDuringTheGrace) {
  StrategyV2Settings settings;
  // Longer than the test's deadline: a thief that waited it out would fail the test.
  settings.runnext_grace_ns = 600ull * 1000 * 1000 * 1000;
  StrategyPtr v2 = MakeV2With(2, settings);
  v2->Enqueue(Desc(1), true, ReadyReason::kStarted, /*origin=*/0);  // runnext
  std::atomic<bool> searching{false};
  std::uintptr_t stolen = 1;
  std::thread thief([&] {
    searching.store(true);
    stolen = v2->StealInGroup(1);
  });
  while (!searching.load()) std::this_thread::yield();
  // Whether the thief is in its grace or has not looked yet, the owner takes its fiber.
  EXPECT_EQ(TakeId(v2->TakeNext(0)), 1u);
  thief.join();
  EXPECT_EQ(stolen, 0u) << "the thief finds nothing left";
  EXPECT_EQ(v2->stats().steals_in_group, 0u);
}

// A worker that searches turns staging off: the displaced entry goes to the local
// queue, after whatever was staged (G2).
TEST(StrategyV2Test, AnIdleWorkerTurnsStagingOff) {
  StrategyV2Settings settings;
  settings.stage_capacity = 8;
  StrategyPtr v2 = MakeV2With(3, settings);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStarted, 0);
  }
  ASSERT_TRUE(v2->notifier().StartSearching(2));
  v2->Enqueue(Desc(4), true, ReadyReason::kStarted, 0);
  // The stage (1, 2) and the newly displaced 3 are in the local queue now: a thief's
  // grab of it sees them in start order.
  EXPECT_EQ(TakeId(v2->StealInGroup(1)), 1u);
  v2->notifier().StopSearching(2, true, 0);
  std::vector<std::uint64_t> rest;
  for (std::uintptr_t entry; (entry = v2->TakeNext(0)) != 0;) rest.push_back(TakeId(entry));
  for (std::uintptr_t entry; (entry = v2->TakeNext(1)) != 0;) rest.push_back(TakeId(entry));
  std::sort(rest.begin(), rest.end());
  EXPECT_EQ(rest, (Order{2, 3, 4}));
}

// G6: the hog monitor's rescue moves the stage too; a lone worker never stages.
TEST(StrategyV2Test, ARescueMovesTheStageAndALoneWorkerNeverStages) {
  StrategyV2Settings settings;
  settings.stage_capacity = 8;
  StrategyPtr v2 = MakeV2With(2, settings);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    v2->Enqueue(Desc(id), true, ReadyReason::kStarted, 0);
  }
  EXPECT_EQ(v2->RescueStalledWorker(0), 3u) << "runnext and the two staged";
  EXPECT_EQ(v2->stats().global_queue_size, 3u);
  EXPECT_EQ(v2->stats().local_queue_sizes[0], 0u);
  for (std::uint64_t id : {3, 1, 2}) EXPECT_EQ(TakeId(v2->TakeNext(1)), id);

  StrategyPtr lone = MakeV2With(1, settings);
  for (std::uint64_t id = 1; id <= 3; ++id) {
    lone->Enqueue(Desc(id), true, ReadyReason::kStarted, 0);
  }
  // Nothing staged: the displaced two are in the local queue, where other groups'
  // thieves see them (half of it).
  std::uintptr_t out[4];
  ASSERT_EQ(lone->StealBatch(out, 4), 1u);
  EXPECT_EQ(TakeId(out[0]), 1u);
  EXPECT_EQ(TakeId(lone->TakeNext(0)), 3u);
  EXPECT_EQ(TakeId(lone->TakeNext(0)), 2u);
}

}  // namespace
}  // namespace spindle::internal
