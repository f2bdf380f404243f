// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/stage_buffer.h"

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

std::vector<std::uintptr_t> TakeAll(StageBuffer& stage) {
  std::uintptr_t out[kMaxStageCapacity];
  bool stealable[kMaxStageCapacity];
  const std::size_t n = stage.TakeOldest(out, stealable, kMaxStageCapacity);
  return std::vector<std::uintptr_t>(out, out + n);
}

TEST(StageBufferTest, FifoUpToCapacity) {
  StageBuffer stage(4);
  for (std::uintptr_t e = 1; e <= 4; ++e) ASSERT_TRUE(stage.Push(e, true)) << e;
  EXPECT_FALSE(stage.Push(5, true)) << "a full stage refuses";
  EXPECT_EQ(stage.UnsafeSize(), 4u);
  EXPECT_EQ(TakeAll(stage), (std::vector<std::uintptr_t>{1, 2, 3, 4}));
  EXPECT_EQ(stage.UnsafeSize(), 0u);
}

TEST(StageBufferTest, ZeroCapacityIsAlwaysFull) {
  StageBuffer stage(0);
  EXPECT_FALSE(stage.Push(1, true));
  EXPECT_EQ(stage.UnsafeSize(), 0u);
}

TEST(StageBufferTest, TakeOldestKeepsStealableBitsAndWrapsAround) {
  StageBuffer stage(kMaxStageCapacity);
  std::uintptr_t out[3];
  bool stealable[3];
  // Walk the ring's head round its end a few times.
  std::uintptr_t next = 1, expected = 1;
  for (int round = 0; round < 400; ++round) {
    ASSERT_TRUE(stage.Push(next, next % 2 == 0));
    ASSERT_TRUE(stage.Push(next + 1, (next + 1) % 2 == 0));
    next += 2;
    ASSERT_EQ(stage.TakeOldest(out, stealable, 2), 2u);
    for (int k = 0; k < 2; ++k, ++expected) {
      ASSERT_EQ(out[k], expected);
      ASSERT_EQ(stealable[k], expected % 2 == 0) << expected;
    }
  }
  EXPECT_EQ(stage.TakeOldest(out, stealable, 3), 0u);
}

TEST(StageBufferTest, RemoveFromAnywhereKeepsTheOrder) {
  StageBuffer stage(8);
  for (std::uintptr_t e = 1; e <= 6; ++e) ASSERT_TRUE(stage.Push(e, e != 3));
  EXPECT_TRUE(stage.Remove(3));
  EXPECT_TRUE(stage.Remove(6));
  EXPECT_TRUE(stage.Remove(1));
  EXPECT_FALSE(stage.Remove(3)) << "already removed";
  EXPECT_FALSE(stage.Remove(42)) << "never staged";
  std::uintptr_t out[8];
  bool stealable[8];
  ASSERT_EQ(stage.TakeOldest(out, stealable, 8), 3u);
  EXPECT_EQ(out[0], 2u);
  EXPECT_EQ(out[1], 4u);
  EXPECT_EQ(out[2], 5u);
  EXPECT_TRUE(stealable[0] && stealable[1] && stealable[2]);
}

// The owner pushes and removes; two other threads take the oldest; every entry leaves
// exactly once (taken or removed), none twice, none lost.
TEST(StageBufferTest, ConcurrentTakersSeeEachEntryOnce) {
  constexpr std::uintptr_t kEntries = 200000;
  StageBuffer stage(16);
  std::atomic<bool> done{false};
  std::vector<std::uintptr_t> taken[2];
  std::vector<std::thread> takers;
  for (int t = 0; t < 2; ++t) {
    takers.emplace_back([&, t] {
      std::uintptr_t out[4];
      bool stealable[4];
      for (;;) {
        const bool finished = done.load(std::memory_order_acquire);
        const std::size_t n = stage.TakeOldest(out, stealable, 1 + t * 3);
        taken[t].insert(taken[t].end(), out, out + n);
        if (n == 0 && finished) return;
      }
    });
  }
  std::vector<std::uintptr_t> removed;
  for (std::uintptr_t e = 1; e <= kEntries; ++e) {
    while (!stage.Push(e, true)) {
    }
    if (e % 3 == 0 && stage.Remove(e - 1)) removed.push_back(e - 1);
  }
  done.store(true, std::memory_order_release);
  for (auto& taker : takers) taker.join();
  std::set<std::uintptr_t> seen(removed.begin(), removed.end());
  std::size_t total = removed.size();
  for (const auto& list : taken) {
    total += list.size();
    seen.insert(list.begin(), list.end());
    for (std::size_t i = 1; i < list.size(); ++i) {
      ASSERT_LT(list[i - 1], list[i]) << "one taker's entries come oldest first";
    }
  }
  EXPECT_EQ(total, kEntries) << "an entry left twice or never";
  EXPECT_EQ(seen.size(), kEntries);
  EXPECT_EQ(stage.UnsafeSize(), 0u);
}


// G3's look: the siblings' stages from the next worker on, wrapping, never the
// caller's own; entries the claim refuses are gone.
TEST(StageBufferTest, TakeFromSiblingStagesSkipsOwnAndRefusedEntries) {
  StageBuffer stages[3] = {StageBuffer(4), StageBuffer(4), StageBuffer(4)};
  auto stage_of = [&stages](std::size_t i) -> StageBuffer& { return stages[i]; };
  auto all = [](std::uintptr_t) { return true; };
  auto odd_only = [](std::uintptr_t entry) { return entry % 2 == 1; };
  ASSERT_TRUE(stages[1].Push(10, true));
  ASSERT_TRUE(stages[0].Push(20, true));
  ASSERT_TRUE(stages[0].Push(21, true));
  EXPECT_EQ(TakeFromSiblingStages(1, 3, stage_of, all), 20u) << "worker 2 empty, then 0";
  EXPECT_EQ(TakeFromSiblingStages(0, 3, stage_of, all), 10u) << "worker 1 first";
  EXPECT_EQ(TakeFromSiblingStages(0, 3, stage_of, all), 0u) << "never its own stage";
  ASSERT_TRUE(stages[2].Push(30, true));
  ASSERT_TRUE(stages[2].Push(32, true));
  EXPECT_EQ(TakeFromSiblingStages(1, 3, stage_of, odd_only), 21u)
      << "the refused 30 and 32 are dropped on the way";
  EXPECT_EQ(stages[2].UnsafeSize(), 0u);
  EXPECT_EQ(stages[0].UnsafeSize(), 0u);
}

}  // namespace
}  // namespace spindle::internal
