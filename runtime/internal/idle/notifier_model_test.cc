// Copyright 2026 The Spindle Authors.
//
// Models of SearchNotifier (notifier.cc, the real source built against Relacy:
// atomic.h), the searcher/sleeper protocol of strategies v2 and relaxed, on the idle
// path of notifier_model.h.

#include "runtime/internal/idle/notifier.h"
#include "runtime/internal/idle/notifier_model.h"

namespace spindle::internal {
namespace {

using testing::ExpectIdleModelHolds;
using testing::IdleModel;

// One producer's two pushes against two workers (one may search, half the group).
TEST(SearchNotifierModelTest, TwoWorkersOneProducerTwoPushes) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 2, 1, 2>>(100000);
}

// Two producers race each other's N2-N5 and the workers' announcements. N5's second
// look: without it, the count given back hides the other producer's entry (found at
// iteration 132,679 of the random search, so this model runs 400,000).
TEST(SearchNotifierModelTest, TwoWorkersTwoProducers) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 2, 2, 1>>(400000);
}

// Three workers: two may search at once, so the last searcher out (I4) decides.
TEST(SearchNotifierModelTest, ThreeWorkersOneProducerTwoPushes) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 3, 1, 2>>(100000);
}

// Over the real RunQueue, whose pushes a model may stall between claim and publish.
TEST(SearchNotifierModelTest, TwoWorkersTwoProducersOverTheRunQueue) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 2, 2, 1, testing::RunQueueModelQueues>>(
      200000);
}

// The same, with the first push stalled between claim and publish until the other
// producer's push and wake-up are done.
TEST(SearchNotifierModelTest, TwoWorkersTwoProducersOneStalled) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 2, 2, 1, testing::StalledPushModelQueues>>(
      200000);
}

// A fiber that yields (bug 3 of issue 30): its worker took the producer's second entry
// before queueing the yielder again, so the sibling may have looked, found nothing and
// slept; the re-queue must wake it, as any push does, or the yielder waits behind an
// entry that keeps its worker busy.
TEST(SearchNotifierModelTest, TwoWorkersOneProducerTwoPushesOneYield) {
  ExpectIdleModelHolds<IdleModel<SearchNotifier, 2, 1, 2, testing::ModelQueues, /*kYields=*/1>>(
      200000);
}

}  // namespace
}  // namespace spindle::internal
