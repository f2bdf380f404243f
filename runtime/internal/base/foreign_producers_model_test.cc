// Copyright 2026 The Spindle Authors.
//
// A model of TerminateRuntime()'s drain (runtime_impl.cc) against a foreign producer:
// a plain thread pushes a fiber and wakes the group through its notifier, a worker
// runs the fiber, and the terminating thread waits until no fiber is live and then
// until no foreign producer is counted (ForeignProducers, the real header built against
// Relacy), and frees the group's strategy, here its notifier. The fiber may finish
// while its producer is still inside Notify(); if the terminating thread frees the
// notifier under it, Relacy reports the access to the destroyed notifier's atomics or
// (when the producer is past them) a data race on the strategy's plain memory: the
// free must happen after the producer's leaving (bug 7 of issue 30).
//
// The notifier and the queue are the real SearchNotifier and RunQueue (their model
// builds); the worker takes the fiber without the idle path (it parks on a word the
// producer bumps before its Notify(), so that the fiber can run while the producer is
// still in Notify(), which is the window the drain must cover).

#include <cstdint>
#include <optional>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/foreign_producers.h"
#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/idle/notifier_model.h"
#include "runtime/internal/base/parker.h"

namespace spindle::internal {
namespace {

using testing::ExpectIdleModelHolds;
using testing::RunQueueModelQueues;

struct DrainAgainstAForeignProducer : rl::test_suite<DrainAgainstAForeignProducer, 3> {
  ForeignProducers foreign;
  RunQueueModelQueues queues;
  // The group's strategy, destroyed by the drain. Not on the heap: a failed run is
  // replayed for its trace in the same process, and a notifier it left allocated (its
  // wake-up counter registered) would fail the replay's allocations instead.
  std::optional<SearchNotifier> notifier;
  // The strategy's plain (non-atomic) memory, which the producer's wake-up reads and
  // the free overwrites: unless the producer's Leave() happens-before the free, Relacy
  // reports the two accesses as a data race, whatever order they ran in.
  rl::var<int> strategy_memory;
  Parker pushed;  // its word counts pushes, which the worker waits for
  Parker live;    // its word: fibers not yet finished

  void before() {
    g_model_foreign_producers = &foreign;
    notifier.emplace(queues, 1);
    // The fiber about to start. relaxed: before the model's threads start.
    live.word().store(1, std::memory_order_relaxed);
    strategy_memory(ModelWhere().info) = 1;
  }

  void thread(unsigned index) {
    if (index == 0) {
      // A plain thread's StartFiber: scheduling_group.cc counts it around its push and
      // wake-up.
      ForeignProducerScope scope(/*foreign=*/true);
      queues.Push();
      pushed.word().fetch_add(1, std::memory_order_release);  // release: the push
      pushed.Unpark();
      notifier->Notify();
      RL_ASSERT(strategy_memory(ModelWhere().info) == 1);  // still the strategy's
    } else if (index == 1) {
      // A worker: takes the fiber and runs it to its end.
      while (!queues.TryTake()) {
        const int seen = pushed.word().load(std::memory_order_acquire);
        if (queues.TryTake()) break;
        pushed.ParkWhile(seen, MonotonicDeadline::None());
      }
      // The fiber's finish (live_fibers.cc's count). release: pairs with the drain's
      // acquire.
      live.word().fetch_sub(1, std::memory_order_release);
      live.Unpark();
    } else {
      // TerminateRuntime(): WaitUntilNoLiveFibers(), WaitForForeignProducers(), then
      // the groups (their strategies) are freed.
      for (;;) {
        const int left = live.word().load(std::memory_order_acquire);  // acquire: see above
        if (left == 0) break;
        live.ParkWhile(left, MonotonicDeadline::None());
      }
      foreign.WaitUntilNone();
      strategy_memory(ModelWhere().info) = 0;
      notifier.reset();
    }
  }
};

TEST(ForeignProducersModelTest, DrainAgainstAForeignProducer) {
  ExpectIdleModelHolds<DrainAgainstAForeignProducer>(100000);
}

}  // namespace
}  // namespace spindle::internal
