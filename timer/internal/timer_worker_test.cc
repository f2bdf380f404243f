// Copyright 2026 The Spindle Authors.

#include "timer/internal/timer_worker.h"

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/testing/runtime_testing.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;
using spindle::testing::ScopedRuntime;
using spindle::testing::WaitFor;

struct Probe {
  int index = 0;
  TimerClock::time_point fired_at;
  std::vector<int>* order = nullptr;  // appended to on the timer thread only
  std::atomic<int>* count = nullptr;
};

void Record(void* arg) {
  auto* probe = static_cast<Probe*>(arg);
  probe->fired_at = TimerClock::now();
  probe->order->push_back(probe->index);
  probe->count->fetch_add(1, std::memory_order_release);
}

// Inline callbacks run on the timer thread in exactly the order it fires them: any two
// timers that were in its heap together fire in expiry order, and none fires early.
// Deadlines armed far ahead and cancelled at once (a socket deadline per request) do
// not pile up until the next expiry: producers wake the thread every kCollectEvery
// timers, and it drops the cancelled ones. They used to stay until the thread woke
// for an expiry (an hour here): the HTTP server grew by 30 MB per million requests.
TEST(TimerWorkerTest, TimersCancelledFarAheadOfAnyExpiryDoNotPileUp) {
  ScopedRuntime runtime(1);
  TimerWorker* worker = TimerWorkerFor(Runtime::Get().group(0));
  constexpr int kTimers = 100'000;
  const auto far = TimerClock::now() + std::chrono::hours(1);
  for (int i = 0; i < kTimers; ++i) {
    auto* entry = NewTimerEntry();
    entry->refs.store(2, std::memory_order_relaxed);  // the worker's and ours
    entry->expires = MonotonicDeadline::At(far);
    entry->inline_callback = &Record;  // never called: cancelled below
    worker->Add(entry);
    int expected = TimerEntry::kPending;
    ASSERT_TRUE(entry->state.compare_exchange_strong(expected, TimerEntry::kCancelled,
                                                     std::memory_order_acq_rel));
    ReleaseTimerEntry(entry);  // ours; the worker's goes when it drops the entry
  }
  // Bounded by a few collection intervals, not by the 100k armed.
  EXPECT_TRUE(WaitFor([&] { return worker->held() <= 4 * TimerWorker::kCollectEvery; }))
      << worker->held() << " timers held";
}

// One round of FiresInExpiryOrderAndNeverEarly: kTimers timers due `lead` from now,
// spread over 50 ms, fired inline on the timer thread. Checks that none fired early and
// that every two timers that were surely in the heap together fired in expiry order;
// returns how many such pairs there were (the check's coverage).
int CheckExpiryOrderOnce(TimerWorker* worker, std::chrono::milliseconds lead) {
  constexpr int kTimers = 500;
  std::vector<Probe> probes(kTimers);
  std::vector<TimerClock::time_point> due(kTimers), armed(kTimers);
  std::vector<int> order;
  order.reserve(kTimers);
  std::atomic<int> count{0};
  std::mt19937 random(5);
  const auto base = TimerClock::now() + lead;
  for (int i = 0; i < kTimers; ++i) {
    probes[i] = Probe{i, {}, &order, &count};
    auto* entry = NewTimerEntry();  // released through the pool: not plain new
    entry->refs.store(1, std::memory_order_relaxed);  // the worker's only
    due[i] = base + std::chrono::microseconds(random() % 50000);
    entry->expires = MonotonicDeadline::At(due[i]);
    entry->inline_callback = &Record;
    entry->inline_arg = &probes[i];
    worker->Add(entry);
    armed[i] = TimerClock::now();
  }
  EXPECT_TRUE(WaitFor([&] { return count.load(std::memory_order_acquire) == kTimers; }));
  if (count.load(std::memory_order_acquire) != kTimers) return 0;
  for (int i = 0; i < kTimers; ++i) EXPECT_GE(probes[i].fired_at, due[i]) << i;
  int compared = 0;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const int earlier = order[k - 1], later = order[k];
    // Only timers that were both in the heap when the first of them fired. The round
    // that fired `earlier` collected new timers right before it read the clock (at or
    // after due[earlier]); a timer armed after that collection waits for the next
    // round. So `later` was surely collected if it was armed well before due[earlier]
    // (2 ms: the collection's time, preemption included). Armed before the firing is
    // not enough: under chaos scheduling the round's collection can come first.
    if (armed[later] >= probes[earlier].fired_at || armed[later] + 2ms >= due[earlier]) {
      continue;
    }
    ++compared;
    EXPECT_LE(due[earlier], due[later]) << "fired out of expiry order at position " << k;
  }
  return compared;
}

// Every timer is meant to be armed long before the first is due, so that the check
// has pairs to look at: the lead starts at 200 ms (arming 500 timers took ~30 ms under
// ASan with chaos pauses in Add) and doubles, up to 12.8 s, on a machine too slow to
// arm them within it. The order is checked in every round; only the coverage decides
// whether another round runs.
TEST(TimerWorkerTest, FiresInExpiryOrderAndNeverEarly) {
  ScopedRuntime runtime(1);
  TimerWorker* worker = TimerWorkerFor(Runtime::Get().group(0));
  int compared = 0;
  for (auto lead = std::chrono::milliseconds(200); lead <= std::chrono::milliseconds(12800);
       lead *= 2) {
    compared = CheckExpiryOrderOnce(worker, lead);
    if (compared > 250 || ::testing::Test::HasFailure()) break;
  }
  EXPECT_GT(compared, 250) << "too few timers were in the heap together at the widest lead";
}

}  // namespace
}  // namespace spindle::internal
