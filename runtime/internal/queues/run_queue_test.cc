// Copyright 2026 The Spindle Authors.

#include "runtime/internal/queues/run_queue.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fiber/internal/sanitizers.h"
#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

// Pops everything, oldest first.
std::vector<std::uintptr_t> Drain(RunQueue& queue) {
  std::vector<std::uintptr_t> out;
  while (std::uintptr_t entry = queue.Pop()) out.push_back(entry);
  return out;
}

using Entries = std::vector<std::uintptr_t>;

TEST(RunQueueTest, PopsInPushOrder) {
  RunQueue queue(8);
  EXPECT_EQ(queue.capacity(), 8u);
  for (std::uintptr_t entry = 1; entry <= 5; ++entry) {
    ASSERT_TRUE(queue.Push(entry, /*stealable=*/true));
  }
  EXPECT_EQ(queue.UnsafeSize(), 5u);
  EXPECT_EQ(Drain(queue), (Entries{1, 2, 3, 4, 5}));
  EXPECT_TRUE(queue.UnsafeEmpty());
}

TEST(RunQueueTest, EmptyQueueGivesZero) {
  RunQueue queue(4);
  EXPECT_TRUE(queue.UnsafeEmpty());
  EXPECT_EQ(queue.Pop(), 0u);
  EXPECT_EQ(queue.Steal(), 0u);
  ASSERT_TRUE(queue.Push(7, true));
  EXPECT_EQ(queue.Pop(), 7u);
  EXPECT_EQ(queue.Pop(), 0u);
  EXPECT_EQ(queue.Steal(), 0u);
}

TEST(RunQueueTest, FullQueueRefusesPushesUntilAPop) {
  RunQueue queue(4);
  for (std::uintptr_t entry = 1; entry <= 4; ++entry) {
    ASSERT_TRUE(queue.Push(entry, true));
  }
  EXPECT_EQ(queue.UnsafeSize(), 4u);
  EXPECT_FALSE(queue.Push(5, true));
  const std::uintptr_t one[] = {6};
  EXPECT_FALSE(queue.BatchPush(one, 1, true));
  EXPECT_EQ(queue.UnsafeSize(), 4u);

  EXPECT_EQ(queue.Pop(), 1u);
  EXPECT_TRUE(queue.Push(7, true));
  EXPECT_FALSE(queue.Push(8, true));
  EXPECT_EQ(Drain(queue), (Entries{2, 3, 4, 7}));
}

TEST(RunQueueTest, WrapsAroundManyLaps) {
  RunQueue queue(4);
  std::uintptr_t next_in = 1;
  std::uintptr_t next_out = 1;
  for (int lap = 0; lap < 1000; ++lap) {
    // A varying fill level, so every slot is first, last and full at some point.
    const int fill = 1 + lap % 4;
    for (int i = 0; i < fill; ++i) ASSERT_TRUE(queue.Push(next_in++, true));
    if (fill == 4) {
      ASSERT_FALSE(queue.Push(next_in, true));
    }
    for (int i = 0; i < fill; ++i) ASSERT_EQ(queue.Pop(), next_out++);
    ASSERT_EQ(queue.Pop(), 0u);
  }
}

TEST(RunQueueTest, BatchPushIsAllOrNothing) {
  RunQueue queue(8);
  for (std::uintptr_t entry = 1; entry <= 3; ++entry) {
    ASSERT_TRUE(queue.Push(entry, true));
  }
  const Entries six = {11, 12, 13, 14, 15, 16};
  EXPECT_FALSE(queue.BatchPush(six.data(), six.size(), true));
  EXPECT_EQ(queue.UnsafeSize(), 3u);

  const Entries five = {21, 22, 23, 24, 25};
  EXPECT_TRUE(queue.BatchPush(five.data(), five.size(), true));
  EXPECT_FALSE(queue.Push(26, true));
  EXPECT_EQ(Drain(queue), (Entries{1, 2, 3, 21, 22, 23, 24, 25}));
}

TEST(RunQueueTest, BatchPushFillsAWholeRingAcrossTheWrap) {
  RunQueue queue(4);
  std::uintptr_t next = 1;
  for (int lap = 0; lap < 100; ++lap) {
    // Start the batch at a different slot every time, so it wraps past the end.
    ASSERT_TRUE(queue.Push(1000, true));
    for (int i = 0; i < lap % 4; ++i) {
      ASSERT_TRUE(queue.Push(1000, true));
      ASSERT_EQ(queue.Pop(), 1000u);
    }
    ASSERT_EQ(queue.Pop(), 1000u);
    const Entries batch = {next, next + 1, next + 2, next + 3};
    ASSERT_TRUE(queue.BatchPush(batch.data(), batch.size(), true));
    ASSERT_EQ(Drain(queue), batch);
    next += 4;
  }
}

TEST(RunQueueTest, StealRefusesANonStealableOldestEntry) {
  RunQueue queue(8);
  ASSERT_TRUE(queue.Push(1, /*stealable=*/false));
  ASSERT_TRUE(queue.Push(2, /*stealable=*/true));
  EXPECT_EQ(queue.Steal(), 0u);
  EXPECT_EQ(queue.UnsafeSize(), 2u);
  EXPECT_EQ(queue.Pop(), 1u);
  EXPECT_EQ(queue.Steal(), 2u);
  EXPECT_EQ(queue.Steal(), 0u);
}

TEST(RunQueueTest, StealTakesStealableEntriesInOrder) {
  RunQueue queue(4);
  const Entries batch = {1, 2};
  ASSERT_TRUE(queue.BatchPush(batch.data(), batch.size(), /*stealable=*/true));
  const Entries pinned = {3, 4};
  ASSERT_TRUE(queue.BatchPush(pinned.data(), pinned.size(), /*stealable=*/false));
  EXPECT_EQ(queue.Steal(), 1u);
  EXPECT_EQ(queue.Steal(), 2u);
  EXPECT_EQ(queue.Steal(), 0u);
  EXPECT_EQ(Drain(queue), (Entries{3, 4}));
  // The pinned flag belongs to the entry, not to the slot: the next lap may steal.
  for (std::uintptr_t entry = 5; entry <= 8; ++entry) {
    ASSERT_TRUE(queue.Push(entry, true));
  }
  for (std::uintptr_t entry = 5; entry <= 8; ++entry) EXPECT_EQ(queue.Steal(), entry);
}

TEST(RunQueueTest, ValidateRunQueueCapacity) {
  EXPECT_EQ(ValidateRunQueueCapacity(2), "");
  EXPECT_EQ(ValidateRunQueueCapacity(4), "");
  EXPECT_EQ(ValidateRunQueueCapacity(65536), "");
  EXPECT_EQ(ValidateRunQueueCapacity(std::uint64_t{1} << 30), "");
  EXPECT_EQ(ValidateRunQueueCapacity(1000),
            "--fiber_run_queue_size=1000 is invalid: expected a power of two in "
            "[2, 1073741824]");
  for (std::uint64_t bad :
       {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{1} << 31}) {
    const std::string error = ValidateRunQueueCapacity(bad);
    EXPECT_NE(error.find("--fiber_run_queue_size=" + std::to_string(bad) + " is invalid"),
              std::string::npos)
        << error;
    EXPECT_NE(error.find("[2, 1073741824]"), std::string::npos) << error;
  }
}

class RunQueueDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(RunQueueDeathTest, BadCapacityIsACheckFailure) {
  EXPECT_DEATH(RunQueue(3), "RunQueue capacity 3 is invalid: expected a power of two");
  EXPECT_DEATH(RunQueue(1), "RunQueue capacity 1 is invalid");
  EXPECT_DEATH(RunQueue(0), "RunQueue capacity 0 is invalid");
}

// Torture tests. Entry = id + 1, where id = producer * per_producer + index; producers
// write payload[id] (plain memory) before pushing and consumers check it after taking,
// so TSan also verifies that a push happens-before the pop that returns the entry.
struct TortureOptions {
  int producers = 4;
  int poppers = 0;   // consumers that only Pop()
  int stealers = 0;  // consumers that only Steal()
  int mixers = 0;    // consumers that pick Pop() or Steal() at random
  std::size_t capacity = 64;
  std::size_t per_producer = 0;
  bool batches = true;    // mix BatchPush (1..8 entries) with Push
  int pinned_one_in = 0;  // every push is non-stealable with odds 1 / this (0: never)
};

struct TortureResult {
  std::size_t consumed = 0;
  std::size_t duplicates = 0;
  std::size_t out_of_order = 0;
  std::size_t bad_payloads = 0;
  std::size_t stolen_pinned = 0;
  std::size_t missing = 0;
  bool timed_out = false;
};

std::size_t ScaledTotal(std::size_t total) {
  return kUnderSanitizer ? total / 10 : total;
}

class Torture {
 public:
  explicit Torture(const TortureOptions& options)
      : options_(options),
        total_(options.per_producer * options.producers),
        queue_(options.capacity),
        payload_(total_, 0),
        pinned_(total_, 0),
        seen_(total_),
        single_consumer_(options.poppers + options.stealers + options.mixers == 1),
        deadline_(std::chrono::steady_clock::now() + std::chrono::seconds(60)) {}

  TortureResult Run() {
    std::vector<std::thread> threads;
    for (int p = 0; p < options_.producers; ++p) {
      threads.emplace_back([this, p] { Produce(p); });
    }
    const int consumers = options_.poppers + options_.stealers + options_.mixers;
    for (int c = 0; c < consumers; ++c) threads.emplace_back([this, c] { Consume(c); });
    for (std::thread& thread : threads) thread.join();

    // relaxed (here and below): the joins ordered every thread's writes before us.
    result_.consumed = consumed_.load(std::memory_order_relaxed);
    for (std::size_t id = 0; id < total_; ++id) {
      if (seen_[id].load(std::memory_order_relaxed) == 0) ++result_.missing;
    }
    return result_;
  }

  RunQueue& queue() { return queue_; }

 private:
  enum class Role { kPopper, kStealer, kMixer };

  bool PastDeadline() {
    if (std::chrono::steady_clock::now() < deadline_) return false;
    // relaxed: a flag that only ends loops; the joins publish it.
    timed_out_.store(true, std::memory_order_relaxed);
    return true;
  }

  void Produce(int producer) {
    std::mt19937 rng(producer + 1);
    std::uniform_int_distribution<std::size_t> batch_size(1, 8);
    std::uintptr_t batch[8];
    std::size_t index = 0;
    while (index < options_.per_producer) {
      const std::size_t n =
          options_.batches ? std::min(batch_size(rng), options_.per_producer - index) : 1;
      const bool stealable = options_.pinned_one_in == 0 ||
                             rng() % static_cast<unsigned>(options_.pinned_one_in) != 0;
      for (std::size_t k = 0; k < n; ++k) {
        const std::size_t id = producer * options_.per_producer + index + k;
        payload_[id] = static_cast<std::uint32_t>(id * 7 + 1);
        pinned_[id] = stealable ? 0 : 1;
        batch[k] = id + 1;
      }
      const bool single = n == 1 && rng() % 2 == 0;
      while (!(single ? queue_.Push(batch[0], stealable)
                      : queue_.BatchPush(batch, n, stealable))) {
        // relaxed: see PastDeadline().
        if (timed_out_.load(std::memory_order_relaxed) || PastDeadline()) return;
        std::this_thread::yield();  // full: let a consumer run (2-core CI machines)
      }
      index += n;
    }
  }

  Role RoleOf(int consumer) const {
    if (consumer < options_.poppers) return Role::kPopper;
    if (consumer < options_.poppers + options_.stealers) return Role::kStealer;
    return Role::kMixer;
  }

  void Consume(int consumer) {
    const Role role = RoleOf(consumer);
    std::mt19937 rng(1000 + consumer);
    // Per producer, the next index this consumer may see at the earliest: a consumer
    // claims positions in increasing order, so it sees each producer's entries in order.
    std::vector<std::size_t> next_index(options_.producers, 0);
    TortureResult local;
    // relaxed: a progress count; each entry is counted once by the consumer that got it.
    while (consumed_.load(std::memory_order_relaxed) < total_) {
      const bool steal =
          role == Role::kStealer || (role == Role::kMixer && rng() % 2 == 0);
      const std::uintptr_t entry = steal ? queue_.Steal() : queue_.Pop();
      if (entry == 0) {
        // relaxed: see PastDeadline().
        if (timed_out_.load(std::memory_order_relaxed) || PastDeadline()) break;
        std::this_thread::yield();  // empty (or refused): let a producer run
        continue;
      }
      Check(entry - 1, steal, &next_index, &local);
      consumed_.fetch_add(1, std::memory_order_relaxed);  // relaxed: see above
    }
    std::lock_guard<std::mutex> lock(result_lock_);
    result_.duplicates += local.duplicates;
    result_.out_of_order += local.out_of_order;
    result_.bad_payloads += local.bad_payloads;
    result_.stolen_pinned += local.stolen_pinned;
    // relaxed: see PastDeadline().
    result_.timed_out |= timed_out_.load(std::memory_order_relaxed);
  }

  void Check(std::size_t id, bool stolen, std::vector<std::size_t>* next_index,
             TortureResult* local) {
    if (id >= total_) {
      ++local->bad_payloads;
      return;
    }
    // relaxed: a counter; only its final value (read after the joins) matters.
    if (seen_[id].fetch_add(1, std::memory_order_relaxed) != 0) ++local->duplicates;
    if (payload_[id] != static_cast<std::uint32_t>(id * 7 + 1)) ++local->bad_payloads;
    if (stolen && pinned_[id] != 0) ++local->stolen_pinned;
    const std::size_t producer = id / options_.per_producer;
    const std::size_t index = id % options_.per_producer;
    // With a single consumer, every entry of a producer comes through it: no gaps.
    const bool in_order = single_consumer_ ? index == (*next_index)[producer]
                                           : index >= (*next_index)[producer];
    if (!in_order) ++local->out_of_order;
    (*next_index)[producer] = index + 1;
  }

  const TortureOptions options_;
  const std::size_t total_;
  RunQueue queue_;
  std::vector<std::uint32_t> payload_;  // written by the producer of each id
  std::vector<std::uint8_t> pinned_;    // ditto
  std::vector<std::atomic<std::uint8_t>> seen_;
  const bool single_consumer_;
  std::atomic<std::size_t> consumed_{0};
  std::atomic<bool> timed_out_{false};
  const std::chrono::steady_clock::time_point deadline_;
  std::mutex result_lock_;
  TortureResult result_;  // guarded by result_lock_ until the joins
};

void ExpectEveryEntryExactlyOnce(const TortureResult& result, std::size_t total) {
  EXPECT_FALSE(result.timed_out) << "consumed " << result.consumed << " of " << total;
  EXPECT_EQ(result.consumed, total);
  EXPECT_EQ(result.missing, 0u);
  EXPECT_EQ(result.duplicates, 0u);
  EXPECT_EQ(result.bad_payloads, 0u);
  EXPECT_EQ(result.out_of_order, 0u);
  EXPECT_EQ(result.stolen_pinned, 0u);
}

TEST(RunQueueTortureTest, ProducersAndConsumersMixingEveryOperation) {
  TortureOptions options;
  options.producers = 4;
  options.mixers = 4;
  options.capacity = 64;
  options.per_producer = ScaledTotal(1000000) / 4;
  options.pinned_one_in = 8;  // some refusals, which the Pop() half always clears
  Torture torture(options);
  ExpectEveryEntryExactlyOnce(torture.Run(), options.per_producer * options.producers);
  EXPECT_EQ(torture.queue().Pop(), 0u);
  EXPECT_TRUE(torture.queue().UnsafeEmpty());
}

TEST(RunQueueTortureTest, SingleConsumerSeesEveryProducerInOrder) {
  // One consumer, so "in order" is strict: each producer's entries arrive with no gaps
  // in between (out_of_order would catch a reordering, missing a loss).
  TortureOptions options;
  options.producers = 4;
  options.poppers = 1;
  options.capacity = 64;
  options.per_producer = ScaledTotal(400000) / 4;
  Torture torture(options);
  ExpectEveryEntryExactlyOnce(torture.Run(), options.per_producer * options.producers);
  EXPECT_TRUE(torture.queue().UnsafeEmpty());
}

TEST(RunQueueTortureTest, NonStealableEntriesDrainThroughTheOnePopper) {
  TortureOptions options;
  options.producers = 3;
  options.poppers = 1;
  options.stealers = 3;
  options.capacity = 64;
  options.per_producer = ScaledTotal(300000) / 3;
  options.pinned_one_in = 3;
  Torture torture(options);
  ExpectEveryEntryExactlyOnce(torture.Run(), options.per_producer * options.producers);
  EXPECT_TRUE(torture.queue().UnsafeEmpty());
}

TEST(RunQueueTortureTest, SinglePushesOnATinyRing) {
  // Capacity 2: nearly every operation meets a full or empty ring and a slot that the
  // other side is handing over.
  TortureOptions options;
  options.producers = 2;
  options.mixers = 2;
  options.capacity = 2;
  options.batches = false;
  options.per_producer = ScaledTotal(200000) / 2;
  Torture torture(options);
  ExpectEveryEntryExactlyOnce(torture.Run(), options.per_producer * options.producers);
}

}  // namespace
}  // namespace spindle::internal
