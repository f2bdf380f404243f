// Copyright 2026 The Spindle Authors.
//
// Models of strategy v2 (strategy_v2.cc, the real source built against Relacy, with its
// global queue, local queues, inboxes and SearchNotifier built the same way): threads
// outside the group start fibers (the global queue, then Notify), and the workers run
// the idle path of notifier_model.h over the strategy itself: TakeNext, then
// StealInGroup, in IdlePath's order. A worker that takes a batch from the global queue
// runs its first entry and moves the rest into its local queue; M1 (strategy_v2.cc)
// makes that move a push with its wake-up, without which the rest can wait in a busy
// worker's local queue while its sibling sleeps (bug 5 of issue 30).

#include <cstdint>

#include "runtime/internal/idle/notifier_model.h"
#include "runtime/internal/strategies/scheduling_strategy.h"
#include "runtime/internal/strategies/strategy_model_group.h"
#include "runtime/internal/strategies/strategy_v2.h"

namespace spindle::internal {
namespace {

using testing::ExpectIdleModelHolds;
using testing::GroupIdleModel;

// A v2 group of kWorkers workers, as the idle-path model drives it (a yielder goes to
// the tail of its worker's local queue: by the swap, StrategyV2::SwapOnYield, where it
// applies and kSwap; else by the general path), over notifier_model.h's copy of the
// idle path's order: LookInGroup is IdlePath's.
template <std::size_t kWorkers, bool kSwap = true>
class V2Group : public testing::StrategyModelGroup {
 public:
  V2Group() : strategy_(Options(), Settings()) {
    Drive(&strategy_, kSwap ? &strategy_ : nullptr);
  }

  std::uintptr_t LookInGroup(std::size_t w) {
    if (const std::uintptr_t entry = strategy_.TakeNext(w)) return entry;
    return strategy_.StealInGroup(w);
  }

 private:
  static SchedulingGroupOptions Options() {
    SchedulingGroupOptions options;
    options.workers = kWorkers;
    options.run_queue_capacity = 8;
    options.strategy = "v2";
    return options;
  }
  static StrategyV2Settings Settings() {
    StrategyV2Settings settings;
    settings.local_queue_capacity = 8;
    return settings;
  }

  StrategyV2 strategy_;
};

// Two entries from one plain thread: one worker may take both in one global batch (TK4)
// and run the first, and the second must still reach the other worker.
TEST(StrategyV2ModelTest, TwoWorkersOneProducerTwoStarts) {
  ExpectIdleModelHolds<GroupIdleModel<V2Group<2>, 2, 1, 2>>(200000);
}

// Two plain threads, one start each: their pushes and wake-ups race the batch.
TEST(StrategyV2ModelTest, TwoWorkersTwoProducers) {
  ExpectIdleModelHolds<GroupIdleModel<V2Group<2>, 2, 2, 1>>(200000);
}

// Two starts, and a fiber yields once by the general path: its worker takes the next
// entry of its own queues (the rest of a global batch in its local queue) before the
// yielder goes to the tail of that queue, so the sibling may have looked while both
// were held, found nothing and slept. The re-queue's Notify() (StrategyV2::Enqueue,
// kYielded) wakes it; without it this model deadlocks (bug 3 of issue 30, at
// iteration 385).
TEST(StrategyV2ModelTest, TwoWorkersTwoStartsOneYield) {
  ExpectIdleModelHolds<GroupIdleModel<V2Group<2, /*kSwap=*/false>, 2, 1, 2, /*kYields=*/1>>(
      200000);
}

// The same by the swap (StrategyV2::SwapOnYield): the yielder is pushed before the
// next entry is popped from the same local queue, with no Notify(); the sibling's
// re-check can never find that queue empty (SW2). Taken back, pop before push with no
// Notify(), this model deadlocks.
TEST(StrategyV2ModelTest, TwoWorkersTwoStartsOneSwap) {
  ExpectIdleModelHolds<GroupIdleModel<V2Group<2>, 2, 1, 2, /*kYields=*/1>>(200000);
}

// Two swaps: the second may find the first's yielder at the head, or a sibling that
// took either entry meanwhile.
TEST(StrategyV2ModelTest, TwoWorkersTwoStartsTwoSwaps) {
  ExpectIdleModelHolds<GroupIdleModel<V2Group<2>, 2, 1, 2, /*kYields=*/2>>(200000);
}

}  // namespace
}  // namespace spindle::internal
