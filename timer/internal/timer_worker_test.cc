// Copyright 2026 The Spindle Authors.

#include "timer/internal/timer_worker.h"

#include <atomic>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_testing.h"

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
TEST(TimerWorkerTest, FiresInExpiryOrderAndNeverEarly) {
  ScopedRuntime runtime(1);
  TimerWorker* worker = Runtime::Get().timer_worker(0);
  constexpr int kTimers = 500;
  std::vector<Probe> probes(kTimers);
  std::vector<TimerClock::time_point> due(kTimers), armed(kTimers);
  std::vector<int> order;
  order.reserve(kTimers);
  std::atomic<int> count{0};
  std::mt19937 random(5);
  const auto base = TimerClock::now() + 10ms;
  for (int i = 0; i < kTimers; ++i) {
    probes[i] = Probe{i, {}, &order, &count};
    auto* entry = new TimerEntry;
    entry->refs.store(1, std::memory_order_relaxed);  // the worker's only
    due[i] = base + std::chrono::microseconds(random() % 50000);
    entry->expires_at = due[i];
    entry->inline_callback = &Record;
    entry->inline_arg = &probes[i];
    worker->Add(entry);
    armed[i] = TimerClock::now();
  }
  ASSERT_TRUE(WaitFor([&] { return count.load(std::memory_order_acquire) == kTimers; }));
  for (int i = 0; i < kTimers; ++i) EXPECT_GE(probes[i].fired_at, due[i]) << i;
  int compared = 0;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const int earlier = order[k - 1], later = order[k];
    // Only timers that were both in the heap when the first of them fired.
    if (armed[later] >= probes[earlier].fired_at) continue;
    ++compared;
    EXPECT_LE(due[earlier], due[later]) << "fired out of expiry order at position " << k;
  }
  EXPECT_GT(compared, kTimers / 2);
}

}  // namespace
}  // namespace spindle::internal
