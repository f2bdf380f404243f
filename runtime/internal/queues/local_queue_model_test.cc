// Copyright 2026 The Spindle Authors.
//
// Models of LocalQueue's PushAndPop (local_queue.h, the real source built against
// Relacy: atomic.h), the owner's half of a yield's swap (StrategyV2::SwapOnYield): the
// yielder pushed behind the queue's entries, then the oldest taken. The swap wakes
// nobody because no other thread can see the queue emptier than it was before the
// swap: the readers on the idle path (a re-check's Grab(), the last searcher's
// UnsafeSize()) load head_ with acquire before tail_. Each model starts with one entry
// queued and checks that a reader racing one swap never finds the queue empty, and that
// every entry is taken exactly once.

#include <cstdint>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/queues/local_queue.h"

namespace spindle::internal {
namespace {

using testing::ExpectModelHolds;

constexpr std::uintptr_t kOld = 2;   // queued before the threads start
constexpr std::uintptr_t kSelf = 4;  // the yielder

// Thread 0, the owner, swaps once; thread 1 reads the queue's size (AnyQueued's look).
struct SwapAgainstSize : rl::test_suite<SwapAgainstSize, 2> {
  LocalQueue queue{4};

  void before() { RL_ASSERT(queue.Push(kOld)); }

  void thread(unsigned index) {
    if (index == 0) {
      RL_ASSERT(queue.OwnerHasEntryAndRoom());
      RL_ASSERT(queue.PushAndPop(kSelf) == kOld);  // nobody else takes
    } else {
      RL_ASSERT(queue.UnsafeSize() >= 1);
    }
  }

  void after() {
    RL_ASSERT(queue.Pop() == kSelf);
    RL_ASSERT(queue.Pop() == 0);
  }
};

// Thread 1 is a thief instead (a re-check's Grab() of one): it always finds an entry,
// and the owner takes the other one (or, if the thief took the old one before the
// owner's look, does not swap).
struct SwapAgainstGrab : rl::test_suite<SwapAgainstGrab, 2> {
  LocalQueue queue{4};
  std::uintptr_t owner_took = 0;  // plain: read in after()
  std::uintptr_t thief_took = 0;
  bool swapped = false;

  void before() { RL_ASSERT(queue.Push(kOld)); }

  void thread(unsigned index) {
    if (index == 0) {
      if (queue.OwnerHasEntryAndRoom()) {
        swapped = true;
        owner_took = queue.PushAndPop(kSelf);
      }
    } else {
      std::uintptr_t out[2];
      RL_ASSERT(queue.Grab(out, 2, /*half=*/false) == 1);
      thief_took = out[0];
    }
  }

  void after() {
    RL_ASSERT(queue.Pop() == 0);
    if (!swapped) {
      RL_ASSERT(thief_took == kOld);
      return;
    }
    // kOld and kSelf, each taken exactly once (the owner takes kSelf back when the
    // thief took kOld between the push and the pop).
    RL_ASSERT((owner_took == kOld && thief_took == kSelf) ||
              (owner_took == kSelf && thief_took == kOld));
  }
};

TEST(LocalQueueModelTest, ASwapNeverLooksEmptyToASizeReader) {
  ExpectModelHolds<SwapAgainstSize>(100000);
}

TEST(LocalQueueModelTest, ASwapNeverLooksEmptyToAThiefAndLosesNothing) {
  ExpectModelHolds<SwapAgainstGrab>(100000);
}

}  // namespace
}  // namespace spindle::internal
