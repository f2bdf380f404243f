// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/local_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "fiber/internal/sanitizers.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using Entries = std::vector<std::uintptr_t>;

// Pops everything, oldest first.
Entries Drain(LocalQueue& queue) {
  Entries out;
  while (std::uintptr_t entry = queue.Pop()) out.push_back(entry);
  return out;
}

// Grabs once into a vector of at most `max` entries.
Entries GrabInto(LocalQueue& queue, std::size_t max, bool half) {
  Entries out(max);
  out.resize(queue.Grab(out.data(), max, half));
  return out;
}

void PushRange(LocalQueue& queue, std::uintptr_t first, std::uintptr_t last) {
  for (std::uintptr_t entry = first; entry <= last; ++entry) {
    ASSERT_TRUE(queue.Push(entry)) << entry;
  }
}

TEST(LocalQueueTest, ValidatesCapacity) {
  EXPECT_EQ(ValidateLocalQueueCapacity(2), "");
  EXPECT_EQ(ValidateLocalQueueCapacity(256), "");
  EXPECT_EQ(ValidateLocalQueueCapacity(65536), "");
  EXPECT_EQ(ValidateLocalQueueCapacity(3),
            "--fiber_v2_local_queue_size=3 is invalid: expected a power of two in "
            "[2, 65536]");
  for (std::uint64_t bad :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{1} << 17}) {
    const std::string error = ValidateLocalQueueCapacity(bad);
    EXPECT_NE(
        error.find("--fiber_v2_local_queue_size=" + std::to_string(bad) + " is invalid"),
        std::string::npos)
        << error;
    EXPECT_NE(error.find("power of two in [2, 65536]"), std::string::npos) << error;
  }
}

class LocalQueueDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(LocalQueueDeathTest, BadCapacityIsACheckFailure) {
  EXPECT_DEATH(LocalQueue(3),
               "LocalQueue capacity 3 is invalid: expected a power of two in "
               "\\[2, 65536\\]");
  EXPECT_DEATH(LocalQueue(0), "LocalQueue capacity 0 is invalid");
  EXPECT_DEATH(LocalQueue(std::size_t{1} << 17), "LocalQueue capacity 131072 is invalid");
}

TEST(LocalQueueTest, PopsInPushOrder) {
  LocalQueue queue(8);
  EXPECT_EQ(queue.capacity(), 8u);
  PushRange(queue, 1, 5);
  EXPECT_EQ(queue.UnsafeSize(), 5u);
  EXPECT_EQ(Drain(queue), (Entries{1, 2, 3, 4, 5}));
  EXPECT_TRUE(queue.UnsafeEmpty());
}

TEST(LocalQueueTest, EmptyQueueGivesNothing) {
  LocalQueue queue(4);
  EXPECT_TRUE(queue.UnsafeEmpty());
  EXPECT_EQ(queue.Pop(), 0u);
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/true), Entries{});
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/false), Entries{});
  ASSERT_TRUE(queue.Push(7));
  EXPECT_EQ(queue.Pop(), 7u);
  EXPECT_EQ(queue.Pop(), 0u);
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/true), Entries{});
}

TEST(LocalQueueTest, FullQueueRefusesPushesUntilATake) {
  LocalQueue queue(4);
  PushRange(queue, 1, 4);
  EXPECT_EQ(queue.UnsafeSize(), 4u);
  EXPECT_FALSE(queue.Push(5));
  EXPECT_EQ(queue.UnsafeSize(), 4u);

  EXPECT_EQ(queue.Pop(), 1u);
  EXPECT_TRUE(queue.Push(6));
  EXPECT_FALSE(queue.Push(7));
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/false), Entries{2});
  EXPECT_TRUE(queue.Push(8));
  EXPECT_FALSE(queue.Push(9));
  EXPECT_EQ(Drain(queue), (Entries{3, 4, 6, 8}));
}

// A yield's swap (StrategyV2::SwapOnYield): the check, then the push and the take of
// the oldest.
TEST(LocalQueueTest, PushAndPopTakesTheOldestAndQueuesTheNewLast) {
  LocalQueue queue(4);
  EXPECT_FALSE(queue.OwnerHasEntryAndRoom());  // empty: nothing to swap with
  PushRange(queue, 1, 2);
  ASSERT_TRUE(queue.OwnerHasEntryAndRoom());
  EXPECT_EQ(queue.PushAndPop(3), 1u);
  PushRange(queue, 4, 5);
  EXPECT_FALSE(queue.OwnerHasEntryAndRoom());  // full
  EXPECT_EQ(Drain(queue), (Entries{2, 3, 4, 5}));
  // Behind a single entry: that one is taken, the new one stays.
  PushRange(queue, 7, 7);
  EXPECT_EQ(queue.PushAndPop(8), 7u);
  // Alone (thieves took the rest since the check): the new entry is its own take.
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/false), Entries{8});
  EXPECT_EQ(queue.PushAndPop(9), 9u);
  EXPECT_EQ(queue.Pop(), 0u);
}

TEST(LocalQueueTest, GrabHalfRoundsUp) {
  LocalQueue queue(8);
  PushRange(queue, 1, 1);
  EXPECT_EQ(GrabInto(queue, 8, /*half=*/true), Entries{1});  // 1 -> 1

  PushRange(queue, 2, 6);
  EXPECT_EQ(GrabInto(queue, 8, /*half=*/true), (Entries{2, 3, 4}));  // 5 -> 3
  EXPECT_EQ(GrabInto(queue, 8, /*half=*/true), (Entries{5}));        // 2 -> 1
  EXPECT_EQ(Drain(queue), Entries{6});

  PushRange(queue, 10, 17);  // full: 8 -> 4
  EXPECT_EQ(GrabInto(queue, 8, /*half=*/true), (Entries{10, 11, 12, 13}));
  EXPECT_EQ(Drain(queue), (Entries{14, 15, 16, 17}));
}

TEST(LocalQueueTest, GrabTakesAtMostMax) {
  LocalQueue queue(8);
  PushRange(queue, 1, 7);
  EXPECT_EQ(GrabInto(queue, 2, /*half=*/true), (Entries{1, 2}));  // 4 capped at 2
  EXPECT_EQ(GrabInto(queue, 0, /*half=*/true), Entries{});
  EXPECT_EQ(GrabInto(queue, 3, /*half=*/false), Entries{3});
  EXPECT_EQ(queue.UnsafeSize(), 4u);
  EXPECT_EQ(GrabInto(queue, 1, /*half=*/true), Entries{4});
  EXPECT_EQ(Drain(queue), (Entries{5, 6, 7}));
}

TEST(LocalQueueTest, OwnerMovesHalfOfAFullQueue) {
  // What the owner does when Push() fails: move the oldest half elsewhere, then push.
  LocalQueue queue(4);
  PushRange(queue, 1, 4);
  ASSERT_FALSE(queue.Push(5));
  EXPECT_EQ(GrabInto(queue, 4, /*half=*/true), (Entries{1, 2}));
  PushRange(queue, 5, 6);
  EXPECT_EQ(Drain(queue), (Entries{3, 4, 5, 6}));
}

TEST(LocalQueueTest, TakesFromANumaNodeAndTheSmallestCapacity) {
  LocalQueue queue(kMinLocalQueueCapacity, /*numa_node=*/0);
  PushRange(queue, 1, 2);
  EXPECT_FALSE(queue.Push(3));
  EXPECT_EQ(GrabInto(queue, 2, /*half=*/true), Entries{1});
  PushRange(queue, 3, 3);
  EXPECT_EQ(Drain(queue), (Entries{2, 3}));
}

TEST(LocalQueueTest, WrapsAroundManyLaps) {
  LocalQueue queue(4);
  std::uintptr_t next_in = 1;
  std::uintptr_t next_out = 1;
  for (int lap = 0; lap < 2000; ++lap) {
    // A varying fill level and a varying way to take, so every slot is first, last
    // and full at some point and each is taken by each operation.
    const int fill = 1 + lap % 4;
    for (int i = 0; i < fill; ++i) ASSERT_TRUE(queue.Push(next_in++));
    if (fill == 4) {
      ASSERT_FALSE(queue.Push(next_in));
    }
    ASSERT_EQ(queue.UnsafeSize(), static_cast<std::size_t>(fill));
    switch (lap % 3) {
      case 0:
        for (int i = 0; i < fill; ++i) ASSERT_EQ(queue.Pop(), next_out++);
        break;
      case 1:
        while (!queue.UnsafeEmpty()) {
          for (std::uintptr_t entry : GrabInto(queue, 4, /*half=*/true)) {
            ASSERT_EQ(entry, next_out++);
          }
        }
        break;
      default:
        for (int i = 0; i < fill; ++i) {
          ASSERT_EQ(GrabInto(queue, 4, /*half=*/false), Entries{next_out++});
        }
        break;
    }
    ASSERT_EQ(queue.Pop(), 0u);
  }
  EXPECT_EQ(next_out, next_in);
}

// The entries are tagged pointers to tasks whose fields the owner writes before the
// push; thieves read them after the grab, with no other synchronization. Under TSan this
// checks that a Push() happens-before the Grab() that returns its entry.
TEST(LocalQueueTest, ReferentsWrittenBeforePushAreVisibleAfterGrab) {
  struct Task {
    std::uint64_t value = 0;
    int taken_by = -1;  // written by the thread that took the task
  };
  constexpr std::uintptr_t kTag = 1;
  const int tasks_count = kUnderSanitizer ? 5000 : 50000;
  const int thieves_count = 2;
  std::unique_ptr<Task[]> tasks(new Task[tasks_count]);
  LocalQueue queue(16);
  std::atomic<bool> done{false};
  std::atomic<int> bad{0};

  auto take = [&](std::uintptr_t entry, int taker) {
    Task* task = reinterpret_cast<Task*>(entry & ~kTag);
    const std::size_t i = task - tasks.get();
    // relaxed: a failure count, read after the joins.
    if ((entry & kTag) == 0 || task->value != i * 3 + 1 || task->taken_by != -1) {
      bad.fetch_add(1, std::memory_order_relaxed);
    }
    task->taken_by = taker;
  };
  std::vector<std::thread> thieves;
  for (int t = 0; t < thieves_count; ++t) {
    thieves.emplace_back([&, t] {
      std::uintptr_t buffer[16];
      // acquire: pairs with the release store below; nothing is pushed after it.
      while (!done.load(std::memory_order_acquire)) {
        const std::size_t n = queue.Grab(buffer, 16, /*half=*/true);
        for (std::size_t k = 0; k < n; ++k) take(buffer[k], t);
        if (n == 0) std::this_thread::yield();
      }
    });
  }
  for (int i = 0; i < tasks_count; ++i) {
    tasks[i].value = static_cast<std::uint64_t>(i) * 3 + 1;
    const std::uintptr_t entry = reinterpret_cast<std::uintptr_t>(&tasks[i]) | kTag;
    while (!queue.Push(entry)) {
      if (std::uintptr_t taken = queue.Pop()) take(taken, thieves_count);
    }
  }
  while (std::uintptr_t entry = queue.Pop()) take(entry, thieves_count);
  done.store(true, std::memory_order_release);  // release: pairs with the thieves' load
  for (std::thread& thief : thieves) thief.join();

  // relaxed: the joins ordered the thieves' writes before us.
  EXPECT_EQ(bad.load(std::memory_order_relaxed), 0);
  for (int i = 0; i < tasks_count; ++i) ASSERT_NE(tasks[i].taken_by, -1) << i;
}

// Torture: one owner pushes kTotal distinct entries (entry = id + 1), popping now and
// then, one in three behind the others while taking the oldest (PushAndPop), and
// taking entries itself when the queue is full (a Pop() or a Grab() of half, as a spill
// to elsewhere would); thieves alternate Grab(half) and Grab(one). Every id
// must be taken exactly once, each taker must see ids in increasing order (positions
// are taken in order), and the payload written before the push must be visible.
struct TortureCounts {
  std::size_t taken = 0;
  std::size_t out_of_order = 0;
  std::size_t bad_payloads = 0;
  std::size_t oversized = 0;  // UnsafeSize() above capacity
};

class LocalQueueTortureTest
    : public ::testing::TestWithParam<std::tuple<std::size_t, int>> {
 protected:
  LocalQueueTortureTest()
      : capacity_(std::get<0>(GetParam())),
        thieves_(std::get<1>(GetParam())),
        total_(kUnderSanitizer ? 100000 : 1000000),
        queue_(capacity_),
        payload_(total_, 0),
        taken_(total_) {}

  void Owner(TortureCounts* counts) {
    std::mt19937 rng(7);
    std::vector<std::uintptr_t> buffer(capacity_);
    std::uint64_t last = 0;  // the last id this thread took, plus one
    for (std::size_t id = 0; id < total_; ++id) {
      payload_[id] = static_cast<std::uint32_t>(id * 7 + 1);
      if (id == 0) {
        // The first entry is left to the thieves, so that every run shows a steal
        // (on a loaded machine the owner could otherwise take everything itself).
        EXPECT_TRUE(queue_.Push(id + 1));  // an empty queue has room
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (stolen_.load() == 0 && std::chrono::steady_clock::now() < give_up) {
          std::this_thread::yield();
        }
        // Not fatal: the owner goes on, and the thieves stop only when it is done.
        EXPECT_GT(stolen_.load(), 0u) << "no thief took the first entry in 60 s";
        continue;
      }
      // One push in three is a yield's swap (PushAndPop, where the owner saw an entry
      // and room): the entry goes behind the others and the oldest is taken, itself if
      // thieves took the rest, none if they took it too.
      if (rng() % 3 == 0 && queue_.OwnerHasEntryAndRoom()) {
        if (std::uintptr_t swapped = queue_.PushAndPop(id + 1)) Take(swapped, &last, counts);
        continue;
      }
      while (!queue_.Push(id + 1)) {
        if (rng() % 2 == 0) {
          // 0 when thieves emptied the queue since the failed push: just retry it.
          if (std::uintptr_t entry = queue_.Pop()) Take(entry, &last, counts);
        } else {
          const std::size_t n = queue_.Grab(buffer.data(), capacity_, /*half=*/true);
          for (std::size_t k = 0; k < n; ++k) Take(buffer[k], &last, counts);
        }
      }
      if (rng() % 4 == 0) {
        if (std::uintptr_t entry = queue_.Pop()) Take(entry, &last, counts);
      }
      if (queue_.UnsafeSize() > capacity_) ++counts->oversized;
    }
    while (std::uintptr_t entry = queue_.Pop()) Take(entry, &last, counts);
    // release: pairs with the acquire load in Thief(); the queue stays empty from now.
    done_.store(true, std::memory_order_release);
  }

  void Thief(int thief, TortureCounts* counts) {
    // Half the thieves can hold a whole queue, the others only 3 entries per grab.
    const std::size_t max = thief % 2 == 0 ? capacity_ : 3;
    std::vector<std::uintptr_t> buffer(max);
    std::uint64_t last = 0;
    bool half = true;
    // acquire: pairs with the release store at the end of Owner().
    while (!done_.load(std::memory_order_acquire)) {
      const std::size_t n = queue_.Grab(buffer.data(), max, half);
      half = !half;
      for (std::size_t k = 0; k < n; ++k) Take(buffer[k], &last, counts);
      stolen_.fetch_add(n);
      if (queue_.UnsafeSize() > capacity_) ++counts->oversized;
      if (n == 0) std::this_thread::yield();  // empty: let the owner run (2-core CI)
    }
  }

  void Take(std::uintptr_t entry, std::uint64_t* last, TortureCounts* counts) {
    if (entry == 0 || entry > total_) {
      ++counts->bad_payloads;
      return;
    }
    const std::size_t id = entry - 1;
    // relaxed: a counter read after the joins.
    taken_[id].fetch_add(1, std::memory_order_relaxed);
    if (payload_[id] != static_cast<std::uint32_t>(id * 7 + 1)) ++counts->bad_payloads;
    if (entry <= *last) ++counts->out_of_order;
    *last = entry;
    ++counts->taken;
  }

  const std::size_t capacity_;
  const int thieves_;
  const std::size_t total_;
  LocalQueue queue_;
  std::vector<std::uint32_t> payload_;  // written by the owner before each push
  std::vector<std::atomic<std::uint8_t>> taken_;
  std::atomic<bool> done_{false};
  std::atomic<std::size_t> stolen_{0};  // entries the thieves took
};

TEST_P(LocalQueueTortureTest, EveryEntryIsTakenExactlyOnce) {
  std::vector<TortureCounts> counts(thieves_ + 1);
  std::vector<std::thread> threads;
  for (int t = 0; t < thieves_; ++t) {
    threads.emplace_back([this, t, &counts] { Thief(t, &counts[t]); });
  }
  Owner(&counts[thieves_]);
  for (std::thread& thread : threads) thread.join();

  TortureCounts sum;
  for (const TortureCounts& c : counts) {
    sum.taken += c.taken;
    sum.out_of_order += c.out_of_order;
    sum.bad_payloads += c.bad_payloads;
    sum.oversized += c.oversized;
  }
  EXPECT_EQ(sum.taken, total_);
  EXPECT_EQ(sum.out_of_order, 0u);
  EXPECT_EQ(sum.bad_payloads, 0u);
  EXPECT_EQ(sum.oversized, 0u);
  std::size_t wrong = 0;
  for (std::size_t id = 0; id < total_; ++id) {
    // relaxed: the joins ordered every increment before us.
    const int times = taken_[id].load(std::memory_order_relaxed);
    if (times != 1 && ++wrong <= 10) ADD_FAILURE() << "id " << id << " taken " << times;
  }
  EXPECT_EQ(wrong, 0u);
  EXPECT_TRUE(queue_.UnsafeEmpty());
  // Thieves took some share: at least the first entry, which the owner left to them.
  const std::size_t stolen = sum.taken - counts[thieves_].taken;
  EXPECT_GT(stolen, 0u);
  EXPECT_EQ(stolen, stolen_.load());
  RecordProperty("stolen", static_cast<int>(stolen));
  RecordProperty("laps", static_cast<int>(total_ / capacity_));
}

INSTANTIATE_TEST_SUITE_P(
    CapacityAndThieves, LocalQueueTortureTest,
    ::testing::Combine(::testing::Values(std::size_t{4}, std::size_t{256}),
                       ::testing::Values(1, 2, 4, 8)),
    [](const ::testing::TestParamInfo<std::tuple<std::size_t, int>>& info) {
      return "Capacity" + std::to_string(std::get<0>(info.param)) + "Thieves" +
             std::to_string(std::get<1>(info.param));
    });

}  // namespace
}  // namespace spindle::internal
