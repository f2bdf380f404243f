// Copyright 2026 The Spindle Authors.
//
// The GlobalFIFO baseline's queue: one FIFO for everything, dead entries dropped where
// they are taken or compacted away, thieves passing over scheduling_group_local fibers. Its
// wake-ups are the shared notifier's (notifier_test, the idle-path models); the runtime's
// tests run under it through tools/stress_runner.sh.

#include "runtime/internal/strategies/strategy_global_fifo.h"

#include <atomic>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/internal/base/fiber_desc.h"

namespace spindle::internal {
namespace {

struct StrategyDeleter {
  void operator()(StrategyGlobalFifo* strategy) const { delete strategy; }
};
using StrategyPtr = std::unique_ptr<StrategyGlobalFifo, StrategyDeleter>;

StrategyPtr MakeGlobalFifo(std::size_t workers) {
  SchedulingGroupOptions options;
  options.workers = workers;
  options.strategy = "globalfifo";
  return StrategyPtr(new (kNoNumaNode) StrategyGlobalFifo(options));
}

std::uintptr_t Fiber(std::uintptr_t i) { return i * 16; }  // even: never a descriptor

TEST(StrategyGlobalFifoTest, OneFifoForEveryReasonAndEveryWorker) {
  StrategyPtr fifo = MakeGlobalFifo(2);
  fifo->Enqueue(Fiber(1), true, ReadyReason::kStarted, 0);
  fifo->Enqueue(Fiber(2), true, ReadyReason::kStartedNext, 1);
  const std::uintptr_t woken[] = {Fiber(3), Fiber(4)};
  const bool stealable[] = {true, true};
  fifo->EnqueueWoken(woken, stealable, 2, SchedulingStrategy::kNoWorker);
  fifo->Enqueue(Fiber(5), true, ReadyReason::kYielded, 0);
  EXPECT_EQ(fifo->stats().global_queue_size, 5u);
  for (std::uintptr_t i = 1; i <= 5; ++i) EXPECT_EQ(fifo->TakeNext(i % 2), Fiber(i));
  EXPECT_EQ(fifo->TakeNext(0), 0u);
  EXPECT_TRUE(fifo->UnsafeEmpty());
}

TEST(StrategyGlobalFifoTest, DeadEntriesAreDroppedAndTheHeadCanBeTakenBack) {
  StrategyPtr fifo = MakeGlobalFifo(1);
  FiberDesc* ran_inline = AllocateFiberDesc();
  FiberDesc* live = AllocateFiberDesc();
  fifo->Enqueue(EncodeEntry(ran_inline), true, ReadyReason::kStarted, 0);
  fifo->Enqueue(EncodeEntry(live), true, ReadyReason::kStarted, 0);
  EXPECT_FALSE(fifo->TakeBackEntry(0, EncodeEntry(live))) << "only the head is taken back";
  // Its joiner won the first one's claim and ran it inline, leaving it queued
  // (take_back.cc): the queue holds one reference, the joiner the other.
  std::atomic<bool> claimed{true};
  ran_inline->claim = &claimed;
  EXPECT_EQ(fifo->TakeNext(0), EncodeEntry(live)) << "the dead head is dropped";
  EXPECT_EQ(ran_inline->run_inline_refs.load(), 1) << "the queue's reference released";
  ReleaseRunInlineDesc(ran_inline);  // the joiner's: frees it
  FreeFiberDesc(live);
  fifo->Enqueue(Fiber(7), true, ReadyReason::kStarted, 0);
  EXPECT_TRUE(fifo->TakeBackEntry(0, Fiber(7)));
  EXPECT_TRUE(fifo->UnsafeEmpty());
}

TEST(StrategyGlobalFifoTest, ThievesTakeUpToHalfAndPassOverPinnedFibers) {
  StrategyPtr fifo = MakeGlobalFifo(1);
  for (std::uintptr_t i = 1; i <= 4; ++i) {
    fifo->Enqueue(Fiber(i), /*stealable=*/i != 3, ReadyReason::kStarted, 0);
  }
  std::uintptr_t out[8];
  ASSERT_EQ(fifo->StealBatch(out, 8), 2u) << "half of four";
  EXPECT_EQ(out[0], Fiber(1));
  EXPECT_EQ(out[1], Fiber(2));
  EXPECT_TRUE(fifo->MayHaveStealable());
  ASSERT_EQ(fifo->StealBatch(out, 8), 1u) << "a pinned fiber at the head hides nothing";
  EXPECT_EQ(out[0], Fiber(4));
  EXPECT_FALSE(fifo->MayHaveStealable()) << "only a pinned fiber is left";
  EXPECT_EQ(fifo->StealBatch(out, 8), 0u) << "the pinned one stays";
  EXPECT_EQ(fifo->TakeNext(0), Fiber(3)) << "for its own workers";
}


// A joiner that runs its children inline while its worker never pops leaves dead
// entries behind the live ones: once it noted some, the push that finds the queue at
// its compaction size (1024 at first) drops them, so the queue does not grow without
// bound (fiber_test's JoinLoopTest).
TEST(StrategyGlobalFifoTest, DeadEntriesAreCompactedAwayBeforeTheQueueGrows) {
  StrategyPtr fifo = MakeGlobalFifo(1);
  std::atomic<bool> claimed{true};  // every joiner won: all of them ran inline
  std::vector<FiberDesc*> dead;
  for (int i = 0; i < 1100; ++i) {
    FiberDesc* desc = AllocateFiberDesc();
    desc->claim = &claimed;
    dead.push_back(desc);
    fifo->Enqueue(EncodeEntry(desc), true, ReadyReason::kStarted, 0);
    if (i == 0) fifo->NoteDeadEntries();
  }
  EXPECT_EQ(fifo->stats().global_queue_size, 1100u - 1024u)
      << "the 1025th push should have dropped the 1024 dead entries before it";
  EXPECT_EQ(fifo->TakeNext(0), 0u) << "the rest are dead too: dropped when taken";
  for (FiberDesc* desc : dead) ReleaseRunInlineDesc(desc);  // the joiners' references
}

}  // namespace
}  // namespace spindle::internal
