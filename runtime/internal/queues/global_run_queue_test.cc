// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/global_run_queue.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {
namespace {

// Entries are even words (fibers, which ClaimEntry never reads); tests use 2, 4, ...
std::uintptr_t E(std::size_t i) { return static_cast<std::uintptr_t>(i + 1) * 2; }

// n entries E(0) .. E(n - 1), all stealable, as PushMany takes them.
struct Batch {
  explicit Batch(std::size_t n) : stealable(new bool[n]) {
    for (std::size_t i = 0; i < n; ++i) {
      entries.push_back(E(i));
      stealable[i] = true;
    }
  }
  std::vector<std::uintptr_t> entries;
  std::unique_ptr<bool[]> stealable;
};

class RuntimeThreadScope {
 public:
  RuntimeThreadScope() { MarkThisThreadAsRuntimeThread(true); }
  ~RuntimeThreadScope() { MarkThisThreadAsRuntimeThread(false); }
};

TEST(GlobalRunQueueTest, ARuntimeThreadsBatchThatFindsTheRingFullSpillsTheRestInOrder) {
  RuntimeThreadScope runtime_thread;
  GlobalRunQueue queue(/*group_index=*/0, /*capacity=*/8, kNoNumaNode);
  constexpr std::size_t kCount = 40;
  const Batch batch(kCount);
  int make_room_calls = 0;
  queue.PushMany(batch.entries.data(), batch.stealable.get(), kCount,
                 [&] { ++make_room_calls; });
  EXPECT_EQ(make_room_calls, 0) << "a runtime thread never waits for room";
  EXPECT_EQ(queue.spills(), kCount - 8);
  EXPECT_EQ(queue.full_waits(), 0u);
  // The spilled entries (the batch's last 32, in order) come first, then the ring's 8.
  std::vector<std::uintptr_t> taken(kCount);
  std::size_t n = queue.TakeBatchUnclaimed(taken.data(), 5);
  ASSERT_EQ(n, 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_EQ(taken[i], E(8 + i)) << i;
  // A batch that empties the overflow list goes on into the ring.
  n = queue.TakeBatchUnclaimed(taken.data(), 30);
  ASSERT_EQ(n, 30u);
  for (std::size_t i = 0; i < 27; ++i) EXPECT_EQ(taken[i], E(13 + i)) << i;
  for (std::size_t i = 27; i < 30; ++i) EXPECT_EQ(taken[i], E(i - 27)) << i;
  for (std::size_t i = 3; i < 8; ++i) EXPECT_EQ(queue.Take(), E(i)) << i;
  EXPECT_EQ(queue.Take(), 0u);
  EXPECT_EQ(queue.TakeBatchUnclaimed(taken.data(), 4), 0u);
}

TEST(GlobalRunQueueTest, APlainThreadsBatchWaitsForRoomAndSpillsNothing) {
  GlobalRunQueue queue(/*group_index=*/0, /*capacity=*/4, kNoNumaNode);
  constexpr std::size_t kCount = 10;
  const Batch batch(kCount);
  // make_room plays the woken consumers: it takes one entry each time.
  std::vector<std::uintptr_t> consumed;
  queue.PushMany(batch.entries.data(), batch.stealable.get(), kCount, [&] {
    if (std::uintptr_t entry = queue.Take()) consumed.push_back(entry);
  });
  EXPECT_EQ(queue.spills(), 0u);
  EXPECT_GE(queue.full_waits(), 1u);
  while (std::uintptr_t entry = queue.Take()) consumed.push_back(entry);
  ASSERT_EQ(consumed.size(), kCount);
  for (std::size_t i = 0; i < kCount; ++i) EXPECT_EQ(consumed[i], E(i)) << "FIFO, " << i;
}

}  // namespace
}  // namespace spindle::internal
