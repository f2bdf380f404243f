// Copyright 2026 The Spindle Authors.
//
// Models of RunQueue (run_queue.cc, the real source built against Relacy: atomic.h):
// producers' claim and publish against consumers' pops, including a producer stalled
// between the two (the "progress caveat" of run_queue.h) and positions that wrap round
// the ring. Each entry's payload is a plain variable that its producer writes before the
// push and its consumer reads after the pop: Relacy reports a data race unless the push
// happens-before that pop, so a weakened memory order in the queue shows up even where
// x86 would forgive it. At the end every entry was taken exactly once, and each
// consumer saw each producer's entries in the order they were pushed.

#include <cstdint>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/queues/run_queue.h"

namespace spindle::internal {
namespace {

using testing::ExpectModelHolds;

// kProducers producers (the first threads) push kPushes entries each into a queue of
// kCapacity slots; kConsumers consumers (the rest) pop until all are taken. A thread
// that finds the queue full (a producer) or empty (a consumer) parks until the next
// push or pop, which every thread announces on `events`; so a lost entry is a
// deadlock, and nothing spins.
template <int kCapacity, int kProducers, int kConsumers, int kPushes>
struct PushAgainstPop
    : rl::test_suite<PushAgainstPop<kCapacity, kProducers, kConsumers, kPushes>,
                     kProducers + kConsumers> {
  static constexpr int kEntries = kProducers * kPushes;

  RunQueue queue{kCapacity};
  rl::var<int> payload[kEntries];
  Parker events;  // its word counts pushes and pops
  Atomic<int> taken{0};
  int times_taken[kEntries] = {};  // plain: a model's threads take turns

  static std::uintptr_t EntryOf(int id) { return static_cast<std::uintptr_t>(id) + 1; }

  void Announce() {
    events.word().fetch_add(1, std::memory_order_release);  // release: a new state
    events.UnparkAll();
  }

  void thread(unsigned index) {
    if (index < static_cast<unsigned>(kProducers)) {
      Produce(static_cast<int>(index));
    } else {
      Consume();
    }
  }

  void Produce(int producer) {
    for (int i = 0; i < kPushes; ++i) {
      const int id = producer * kPushes + i;
      payload[id](ModelWhere().info) = 1000 + id;  // plain write before the push
      for (;;) {
        // acquire: a consumer's pop announced after it freed a slot. Read before the
        // push, so a pop between the two makes the park return at once.
        const int seen = events.word().load(std::memory_order_acquire);
        const bool pushed = queue.Push(EntryOf(id), /*stealable=*/true);
        if (pushed) break;
        events.ParkWhile(seen, MonotonicDeadline::None());  // full
      }
      Announce();
    }
  }

  void Consume() {
    int last_of[kProducers];
    for (int& last : last_of) last = -1;
    for (;;) {
      // acquire: as in Produce().
      const int seen = events.word().load(std::memory_order_acquire);
      const std::uintptr_t entry = queue.Pop();
      if (entry == 0) {
        // acquire: pairs with the other consumers' acq_rel count below (nothing is
        // left to take once it says all were taken).
        if (taken.load(std::memory_order_acquire) == kEntries) return;
        events.ParkWhile(seen, MonotonicDeadline::None());  // empty, or a producer mid-push
        continue;
      }
      const int id = static_cast<int>(entry - 1);
      RL_ASSERT(id >= 0 && id < kEntries);
      // The push happened-before this pop: the payload is there (and no race).
      RL_ASSERT(payload[id](ModelWhere().info) == 1000 + id);
      ++times_taken[id];
      // Per producer, in push order.
      const int producer = id / kPushes;
      RL_ASSERT(id > last_of[producer]);
      last_of[producer] = id;
      // acq_rel: pairs with the other consumers' acquire loads of the count above.
      taken.fetch_add(1, std::memory_order_acq_rel);
      Announce();
    }
  }

  void after() {
    for (int id = 0; id < kEntries; ++id) RL_ASSERT(times_taken[id] == 1);
    RL_ASSERT(queue.Pop() == 0);
  }
};

// Two producers and two consumers over two slots: every position is claimed and freed
// twice, so a consumer's free and the next lap's claim race, and so do two producers'
// claims and two consumers'.
TEST(RunQueueModelTest, TwoProducersTwoConsumersWrapping) {
  ExpectModelHolds<PushAgainstPop<2, 2, 2, 2>>(200000);
}

// One consumer against two producers: whenever the search preempts a producer between
// claim and publish, the positions after its own are hidden from the consumer, which
// must find them once it publishes.
TEST(RunQueueModelTest, TwoProducersOneConsumer) {
  ExpectModelHolds<PushAgainstPop<4, 2, 1, 2>>(100000);
}

}  // namespace
}  // namespace spindle::internal
