// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/relaxed_queue.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "fiber/internal/sanitizers.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {
namespace {

// Values are never 0 (0 means "nothing"); tests use 1..n.
std::uintptr_t V(std::size_t i) { return static_cast<std::uintptr_t>(i) + 1; }

TEST(RelaxedQueueTest, EmptyQueuePopsNothing) {
  RelaxedQueue queue(8, kNoNumaNode);
  RelaxedCursor cursor;
  EXPECT_EQ(queue.Pop(cursor), 0u);
  EXPECT_EQ(queue.Steal(0), 0u);
  EXPECT_TRUE(queue.UnsafeEmpty());
  EXPECT_EQ(queue.UnsafeSize(), 0u);
}

TEST(RelaxedQueueTest, OneListIsStrictlyFifoThroughGrowthAndShrinking) {
  RelaxedQueue queue(1, kNoNumaNode);
  RelaxedCursor cursor;
  // Several growths past the shrink threshold, interleaved so the ring wraps.
  constexpr std::size_t kCount = 20000;
  std::size_t next_in = 0, next_out = 0;
  for (int round = 0; round < 3; ++round) {
    for (std::size_t i = 0; i < kCount; ++i) {
      queue.Push(cursor, V(next_in++), true);
      if (i % 3 == 0) {
        EXPECT_EQ(queue.Pop(cursor), V(next_out++));
      }
    }
    EXPECT_EQ(queue.UnsafeSize(), next_in - next_out);
    while (next_out < next_in) ASSERT_EQ(queue.Pop(cursor), V(next_out++));
    EXPECT_EQ(queue.Pop(cursor), 0u);
    EXPECT_TRUE(queue.UnsafeEmpty());
  }
}

TEST(RelaxedQueueTest, PopNeverMissesAQueuedValueSingleThreaded) {
  // With n values queued in many lists, n pops return all n: the two-choice picks
  // miss empty lists, and the sweep finds what they missed.
  for (std::size_t lists : {1u, 2u, 7u, 64u, 1024u}) {
    RelaxedQueue queue(lists, kNoNumaNode);
    RelaxedCursor producer(11), consumer(29);
    for (std::size_t n : {1u, 2u, 5u, 300u}) {
      std::vector<char> seen(n, 0);
      for (std::size_t i = 0; i < n; ++i) queue.Push(producer, V(i), true);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uintptr_t value = queue.Pop(consumer);
        ASSERT_NE(value, 0u) << lists << " lists, pop " << i << " of " << n;
        ASSERT_EQ(seen[value - 1], 0) << "value popped twice";
        seen[value - 1] = 1;
      }
      EXPECT_EQ(queue.Pop(consumer), 0u);
    }
  }
}

TEST(RelaxedQueueTest, TwoChoicesTakeTheOlderHead) {
  // Two lists: whichever two picks a pop makes, it compares both heads (or the one
  // list twice), so with both lists non-empty the oldest value overall comes out.
  RelaxedQueue queue(2, kNoNumaNode);
  RelaxedCursor cursor(5);
  for (std::size_t i = 0; i < 200; ++i) queue.Push(cursor, V(i), true);
  std::size_t in_order = 0;
  std::uintptr_t last = 0;
  for (std::size_t i = 0; i < 200; ++i) {
    const std::uintptr_t value = queue.Pop(cursor);
    ASSERT_NE(value, 0u);
    if (value > last) ++in_order;
    last = value;
  }
  // A pop whose two picks are the same list takes that list's head, which may be
  // younger than the other's; the rest are the oldest overall.
  EXPECT_GT(in_order, 150u);
}

TEST(RelaxedQueueTest, DynamicEntropyTakesBackWhatACursorPushed) {
  // T = P: four cursors (workers) with one value each; every round each pushes its
  // value, then each pops. The first list a cursor picks is the one it pushed to, so
  // it mostly gets its own value back; without that (random picks) it would get its
  // own about a quarter of the time.
  constexpr std::size_t kWorkers = 4;
  RelaxedQueue queue(kWorkers * 2, kNoNumaNode);
  std::vector<RelaxedCursor> cursors;
  for (std::size_t w = 0; w < kWorkers; ++w) cursors.emplace_back(1000 + 77 * w);
  std::vector<std::uintptr_t> held(kWorkers);
  for (std::size_t w = 0; w < kWorkers; ++w) held[w] = V(w);
  std::size_t own = 0, total = 0;
  for (int round = 0; round < 2000; ++round) {
    for (std::size_t w = 0; w < kWorkers; ++w) queue.Push(cursors[w], held[w], true);
    for (std::size_t w = 0; w < kWorkers; ++w) {
      const std::uintptr_t value = queue.Pop(cursors[w]);
      ASSERT_NE(value, 0u);
      own += value == held[w];
      ++total;
      held[w] = value;
    }
  }
  EXPECT_GT(own * 2, total) << own << " of " << total << " pops returned the popper's own";
}

TEST(RelaxedQueueTest, AWorkersPushesStayHomeAndItsPopsStillReachEveryList) {
  // Two workers' cursors, two home lists each.
  RelaxedQueue queue(4, kNoNumaNode);
  RelaxedCursor a(11, /*first=*/0, /*count=*/2);
  RelaxedCursor b(29, /*first=*/2, /*count=*/2);
  // Every lock is free: a's pushes all land at home.
  constexpr std::size_t kPushes = 64;
  for (std::size_t i = 0; i < kPushes; ++i) queue.Push(a, V(i), true);
  EXPECT_EQ(queue.UnsafeListSize(0) + queue.UnsafeListSize(1), kPushes);
  EXPECT_EQ(queue.UnsafeListSize(2) + queue.UnsafeListSize(3), 0u);
  EXPECT_GT(queue.UnsafeListSize(0), 0u);  // both home lists are used
  EXPECT_GT(queue.UnsafeListSize(1), 0u);
  // b's pops look at a list outside its home beside its own: with its home full of
  // younger values, a's older ones are still taken, and everything comes out once.
  for (std::size_t i = 0; i < 200; ++i) queue.Push(b, V(kPushes + i), true);
  EXPECT_EQ(queue.UnsafeListSize(0) + queue.UnsafeListSize(1), kPushes);
  std::vector<char> seen(kPushes + 200, 0);
  std::size_t of_a_in_first_16 = 0;
  for (std::size_t n = 1; n <= kPushes + 200; ++n) {
    const std::uintptr_t value = queue.Pop(b);
    ASSERT_NE(value, 0u) << "pop " << n;
    ASSERT_EQ(seen[value - 1], 0) << "value popped twice";
    seen[value - 1] = 1;
    if (value <= kPushes && n <= 16) ++of_a_in_first_16;
  }
  EXPECT_EQ(queue.Pop(b), 0u);
  // Each of b's pops compares a home list with one outside it (here one of a's, both
  // far from empty): a's older values come first. (With the second pick over all
  // lists, half the pairs were two of b's own lists.)
  EXPECT_EQ(of_a_in_first_16, 16u) << "b's pops did not compare a's lists";
  // A cursor whose home does not fit the queue has none: its pushes go anywhere.
  RelaxedCursor stray(5, /*first=*/6, /*count=*/2);
  for (std::size_t i = 0; i < 64; ++i) queue.Push(stray, V(i), true);
  EXPECT_EQ(queue.UnsafeSize(), 64u);
  std::size_t popped = 0;
  while (queue.Pop(stray) != 0) ++popped;
  EXPECT_EQ(popped, 64u);
}

TEST(RelaxedQueueTest, StealSkipsValuesThatMustStayAndKeepsTheirOrder) {
  RelaxedQueue queue(1, kNoNumaNode);
  RelaxedCursor cursor;
  queue.Push(cursor, V(0), false);
  queue.Push(cursor, V(1), false);
  queue.Push(cursor, V(2), true);
  queue.Push(cursor, V(3), false);
  EXPECT_EQ(queue.Steal(0), V(2));
  EXPECT_EQ(queue.Steal(0), 0u);  // V(3) is not stealable either
  EXPECT_EQ(queue.Pop(cursor), V(0));
  EXPECT_EQ(queue.Pop(cursor), V(1));
  EXPECT_EQ(queue.Pop(cursor), V(3));
  // Beyond the lookahead a stealable value is not seen.
  for (std::size_t i = 0; i < RelaxedQueue::kStealLookahead; ++i) queue.Push(cursor, V(i), false);
  queue.Push(cursor, V(99), true);
  EXPECT_EQ(queue.Steal(0), 0u);
  for (std::size_t i = 0; i < RelaxedQueue::kStealLookahead; ++i) {
    EXPECT_EQ(queue.Pop(cursor), V(i));
  }
  EXPECT_EQ(queue.Steal(0), V(99));
}

// A thief's batch (StealMany): half of each list in turn from `start`, oldest first,
// skipping the values that must stay, up to `max` in all.
TEST(RelaxedQueueTest, StealManyTakesHalfOfEachListUpToMax) {
  RelaxedQueue queue(2, kNoNumaNode);
  ASSERT_EQ(queue.lists(), 2u);
  RelaxedCursor cursor;
  // A cursor without a home pushes to random lists: fill them through Push and sort
  // what each list holds by reading it back with StealMany at a large max.
  for (std::size_t i = 0; i < 40; ++i) queue.Push(cursor, V(i), /*stealable=*/i % 10 != 0);
  const std::size_t in_list0 = queue.UnsafeListSize(0);
  const std::size_t in_list1 = queue.UnsafeListSize(1);
  ASSERT_EQ(in_list0 + in_list1, 40u);
  std::uintptr_t out[64];
  const std::size_t n = queue.StealMany(0, out, 64);
  EXPECT_EQ(n, (in_list0 + 1) / 2 + (in_list1 + 1) / 2);
  for (std::size_t i = 0; i < n; ++i) {
    EXPECT_NE((out[i] - 1) % 10, 0u) << "value " << out[i] << " must stay in its group";
  }
  // Each list's values came oldest first.
  std::vector<std::uintptr_t> first_list(out, out + (in_list0 + 1) / 2);
  EXPECT_TRUE(std::is_sorted(first_list.begin(), first_list.end()));
  // The rest is all there, each value once.
  std::vector<std::uintptr_t> all(out, out + n);
  while (std::uintptr_t value = queue.Pop(cursor)) all.push_back(value);
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), 40u);
  for (std::size_t i = 0; i < 40; ++i) EXPECT_EQ(all[i], V(i));
  // At most max.
  for (std::size_t i = 0; i < 40; ++i) queue.Push(cursor, V(i), true);
  EXPECT_EQ(queue.StealMany(1, out, 3), 3u);
}

TEST(RelaxedQueueTest, TakeBackFindsRecentPushesNearEitherEndOfTheirList) {
  RelaxedQueue queue(3, kNoNumaNode);
  RelaxedCursor cursor;
  constexpr std::size_t kRecent = RelaxedCursor::kRecentPushes;
  constexpr std::size_t kCount = 5 * kRecent;
  std::size_t taken = 0;
  // Older values first, then a batch of kRecent "children" joined in start order.
  for (std::size_t i = 0; i < kCount; ++i) queue.Push(cursor, V(i), true);
  for (std::size_t i = kCount - kRecent; i < kCount; ++i) {
    taken += queue.TakeBack(cursor, V(i)) ? 1 : 0;
  }
  EXPECT_EQ(taken, kRecent);
  // A batch joined in reverse order.
  for (std::size_t i = 0; i < kRecent; ++i) queue.Push(cursor, V(kCount + i), true);
  for (std::size_t i = kCount + kRecent; i-- > kCount;) {
    taken += queue.TakeBack(cursor, V(i)) ? 1 : 0;
  }
  EXPECT_EQ(taken, 2 * kRecent);
  // A value taken back once is not found again.
  EXPECT_FALSE(queue.TakeBack(cursor, V(kCount)));
  // An old value is not among the recent pushes: left alone.
  EXPECT_FALSE(queue.TakeBack(cursor, V(0)));
  EXPECT_EQ(queue.UnsafeSize(), kCount - kRecent);
  // Those left come out, each once, and none of those taken back.
  std::vector<char> seen(kCount + kRecent, 0);
  while (std::uintptr_t value = queue.Pop(cursor)) {
    ASSERT_EQ(seen[value - 1], 0);
    seen[value - 1] = 1;
  }
  for (std::size_t i = 0; i < kCount + kRecent; ++i) {
    EXPECT_EQ(seen[i], i < kCount - kRecent ? 1 : 0) << i;
  }
  // A value already popped is not found; the others still are.
  for (std::size_t i = 0; i < 3; ++i) queue.Push(cursor, V(100 + i), true);
  EXPECT_EQ(queue.Pop(cursor), V(100));
  EXPECT_FALSE(queue.TakeBack(cursor, V(100)));
  EXPECT_TRUE(queue.TakeBack(cursor, V(102)));
  EXPECT_EQ(queue.UnsafeSize(), 1u);
  RelaxedCursor fresh;  // never pushed: nothing to take back
  EXPECT_FALSE(queue.TakeBack(fresh, V(101)));
  EXPECT_EQ(queue.UnsafeSize(), 1u);
}

TEST(RelaxedQueueTest, TakeBackLooksOnlyNearTheEnds) {
  // One list; the joiner's child is pushed between 2 windows' worth of other
  // producers' values on either side: a recent push of the joiner's, out of reach.
  RelaxedQueue queue(1, kNoNumaNode);
  RelaxedCursor joiner, others(77);
  constexpr std::size_t kSide = 2 * RelaxedQueue::kTakeBackWindow;
  for (std::size_t i = 0; i < kSide; ++i) queue.Push(others, V(i), true);
  const std::uintptr_t child = V(1000);
  queue.Push(joiner, child, true);
  for (std::size_t i = 0; i < kSide; ++i) queue.Push(others, V(kSide + i), true);
  EXPECT_FALSE(queue.TakeBack(joiner, child));
  EXPECT_EQ(queue.UnsafeSize(), 2 * kSide + 1);
  // Once the values before it are gone, it is at the head: found.
  for (std::size_t i = 0; i < kSide; ++i) EXPECT_EQ(queue.Pop(others), V(i));
  EXPECT_TRUE(queue.TakeBack(joiner, child));
  EXPECT_EQ(queue.UnsafeSize(), kSide);
}

// Values above kDeadFrom are dead for CompactsDeadValuesBeforeGrowing.
constexpr std::uintptr_t kDeadFrom = 1000;
bool IsDeadForTest(std::uintptr_t value) { return value >= kDeadFrom; }

TEST(RelaxedQueueTest, AFullListDropsDeadValuesBeforeGrowingOnceTold) {
  RelaxedQueue queue(1, kNoNumaNode, &IsDeadForTest);
  RelaxedCursor cursor;
  // Fill the first ring (16) with live and dead values in turn: without the note the
  // list grows and keeps them all.
  for (std::size_t i = 0; i < 16; ++i) queue.Push(cursor, i % 2 ? kDeadFrom + i : V(i), true);
  queue.Push(cursor, V(16), true);
  EXPECT_EQ(queue.UnsafeSize(), 17u);
  for (std::size_t i = 17; i < 32; ++i) queue.Push(cursor, i % 2 ? kDeadFrom + i : V(i), false);
  queue.NoteDeadEntries();
  queue.Push(cursor, V(32), true);  // the ring of 32 is full: the dead go first
  EXPECT_EQ(queue.UnsafeSize(), 17u);
  EXPECT_TRUE(queue.UnsafeHasStealable());
  // The live ones, in order; the stealable count followed the compaction (V(16) and
  // V(32) and the even ones below 16 are stealable).
  std::size_t stolen = 0;
  while (queue.Steal(0) != 0) ++stolen;
  EXPECT_EQ(stolen, 8u + 1 + 1);
  for (std::size_t i = 18; i < 32; i += 2) EXPECT_EQ(queue.Pop(cursor), V(i));
  EXPECT_EQ(queue.Pop(cursor), 0u);
}

// Torture: pushers and poppers (and a thief) at once over a few wrap rounds of every
// list's ring; every value comes out exactly once.
TEST(RelaxedQueueTest, TortureEveryValueTakenExactlyOnce) {
  const std::size_t kPushers = 4, kPoppers = 4;
  const std::size_t kPerPusher = kUnderSanitizer ? 20000 : 200000;
  const std::size_t total = kPushers * kPerPusher;
  RelaxedQueue queue(6, kNoNumaNode);
  std::unique_ptr<std::atomic<std::uint8_t>[]> seen(new std::atomic<std::uint8_t>[total]);
  for (std::size_t i = 0; i < total; ++i) seen[i].store(0, std::memory_order_relaxed);
  std::atomic<std::size_t> taken{0};
  std::atomic<std::size_t> duplicates{0};
  auto record = [&](std::uintptr_t value) {
    // relaxed: each slot is only exchanged; the joins below order the final reads.
    if (seen[value - 1].exchange(1, std::memory_order_relaxed) != 0) {
      duplicates.fetch_add(1, std::memory_order_relaxed);
    }
    taken.fetch_add(1, std::memory_order_relaxed);
  };
  std::vector<std::thread> threads;
  for (std::size_t p = 0; p < kPushers; ++p) {
    threads.emplace_back([&, p] {
      RelaxedCursor cursor(p * 7919 + 1);
      for (std::size_t i = 0; i < kPerPusher; ++i) {
        // Every fifth value must stay (the thief may not take it).
        const std::size_t id = p * kPerPusher + i;
        queue.Push(cursor, V(id), id % 5 != 0);
      }
    });
  }
  std::atomic<bool> stolen_wrong{false};
  for (std::size_t c = 0; c < kPoppers + 1; ++c) {
    threads.emplace_back([&, c] {
      RelaxedCursor cursor(c * 104729 + 3);
      std::size_t start = c;
      // relaxed: a progress count; the loop ends once every value is accounted for.
      while (taken.load(std::memory_order_relaxed) < total) {
        std::uintptr_t value = 0;
        if (c == kPoppers) {  // the thief
          value = queue.Steal(start++);
          if (value != 0 && (value - 1) % 5 == 0) stolen_wrong.store(true);
        } else {
          value = queue.Pop(cursor);
        }
        if (value != 0) record(value);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(taken.load(), total);
  EXPECT_EQ(duplicates.load(), 0u);
  EXPECT_FALSE(stolen_wrong.load());
  EXPECT_TRUE(queue.UnsafeEmpty());
  for (std::size_t i = 0; i < total; ++i) ASSERT_EQ(seen[i].load(), 1) << "value " << i;
}

// The bound on an empty answer: one popper, pushers running. Whenever the pushes it
// knows of (published after Push returned, acquired here) exceed what it took, the
// queue holds values, and Pop (kPopTries pairs, then one sweep) must return one.
TEST(RelaxedQueueTest, PopNeverReturnsEmptyWhileTheQueueHoldsValues) {
  const std::size_t kPushers = 3;
  const std::size_t kPerPusher = kUnderSanitizer ? 20000 : 200000;
  RelaxedQueue queue(16, kNoNumaNode);  // many lists: the two-choice picks miss often
  std::atomic<std::size_t> published{0};
  std::vector<std::thread> pushers;
  for (std::size_t p = 0; p < kPushers; ++p) {
    pushers.emplace_back([&, p] {
      RelaxedCursor cursor(p + 17);
      for (std::size_t i = 0; i < kPerPusher; ++i) {
        queue.Push(cursor, V(p * kPerPusher + i), true);
        // release: pairs with the popper's acquire; the push happens-before its Pop.
        published.fetch_add(1, std::memory_order_release);
      }
    });
  }
  RelaxedCursor cursor(99);
  std::size_t mine = 0, empty_answers = 0, misses = 0;
  const std::size_t total = kPushers * kPerPusher;
  while (mine < total) {
    // acquire: pairs with the pushers' release.
    const std::size_t known = published.load(std::memory_order_acquire);
    const std::uintptr_t value = queue.Pop(cursor);
    if (value != 0) {
      ++mine;
    } else {
      ++empty_answers;
      if (known > mine) ++misses;
    }
  }
  for (auto& thread : pushers) thread.join();
  EXPECT_EQ(misses, 0u) << "Pop returned 0 while values were queued (" << empty_answers
                        << " empty answers in all)";
  EXPECT_EQ(queue.Pop(cursor), 0u);
}

}  // namespace
}  // namespace spindle::internal
