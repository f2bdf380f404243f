// Copyright 2026 The Spindle Authors.

#include "sync/condition_variable.h"

#include <atomic>
#include <deque>
#include <thread>
#include <tuple>
#include <vector>

#include "fiber/fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

class ConditionVariableTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, ConditionVariableTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// Producer/consumer through a bounded queue: 2 fiber producers, 1 thread producer,
// 2 fiber consumers and 1 thread consumer, 1e4+ items; no lost wake-up may strand one.
TEST_P(ConditionVariableTest, ProducerConsumerHammerFinishes) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  ConditionVariable not_empty, not_full;
  std::deque<int> queue;
  const int per_producer = static_cast<int>(Scaled(10000));
  constexpr int kProducers = 3, kConsumers = 3;
  std::atomic<long> consumed_sum{0};
  std::atomic<int> consumed{0};
  auto produce = [&] {
    for (int i = 1; i <= per_producer; ++i) {
      std::unique_lock<Mutex> lock(mutex);
      not_full.wait(lock, [&] { return queue.size() < 8; });
      queue.push_back(i);
      not_empty.notify_one();
    }
  };
  auto consume = [&] {
    for (;;) {
      std::unique_lock<Mutex> lock(mutex);
      not_empty.wait(lock, [&] { return !queue.empty(); });
      const int item = queue.front();
      queue.pop_front();
      not_full.notify_one();
      if (item < 0) return;
      consumed_sum += item;
      ++consumed;
    }
  };
  std::vector<Fiber> fibers;
  fibers.emplace_back(produce);
  fibers.emplace_back(produce);
  fibers.emplace_back(consume);
  fibers.emplace_back(consume);
  std::thread thread_producer(produce), thread_consumer(consume);
  ASSERT_TRUE(WaitFor([&] { return consumed.load() == kProducers * per_producer; }, 60s));
  {
    std::unique_lock<Mutex> lock(mutex);
    for (int c = 0; c < kConsumers; ++c) queue.push_back(-1);
    not_empty.notify_all();
  }
  for (auto& f : fibers) f.join();
  thread_producer.join();
  thread_consumer.join();
  EXPECT_EQ(consumed_sum.load(), long{kProducers} * per_producer * (per_producer + 1) / 2);
}

// The timeout-vs-notify matrix:
// {wait, wait_for 0 / 1 us / 1 ms / 100 ms / 20 s} x {notified, timed out}
//   x {waiter fiber, thread} x {notifier fiber, thread}.
// The waiter's result is the predicate's value when it returns (notified before the
// deadline or not: with 100 ms or less, either may happen on a loaded machine), an
// untimed or 20-second wait is always notified (a deadline in seconds, so that only a
// lost notify or a stall of 20 s fails it), and the condition variable works normally
// afterwards.
enum class Timeout { kNone, kZero, kOneMicro, kOneMilli, kHundredMilli, kLong };

class TimeoutMatrixTest
    : public ::testing::TestWithParam<std::tuple<Timeout, bool, bool, bool>> {};

std::string MatrixCaseName(
    const ::testing::TestParamInfo<std::tuple<Timeout, bool, bool, bool>>& info) {
  static const char* const kNames[] = {"Wait",       "WaitFor0",     "WaitFor1us",
                                       "WaitFor1ms", "WaitFor100ms", "WaitFor20s"};
  return std::string(kNames[static_cast<int>(std::get<0>(info.param))]) +
         (std::get<1>(info.param) ? "Notified" : "TimedOut") +
         (std::get<2>(info.param) ? "FiberWaiter" : "ThreadWaiter") +
         (std::get<3>(info.param) ? "FiberNotifier" : "ThreadNotifier");
}

INSTANTIATE_TEST_SUITE_P(
    Matrix, TimeoutMatrixTest,
    ::testing::Combine(::testing::Values(Timeout::kNone, Timeout::kZero, Timeout::kOneMicro,
                                         Timeout::kOneMilli, Timeout::kHundredMilli,
                                         Timeout::kLong),
                       ::testing::Bool(), ::testing::Bool(), ::testing::Bool()),
    MatrixCaseName);

std::chrono::nanoseconds DurationOf(Timeout t) {
  switch (t) {
    case Timeout::kZero:
      return 0ns;
    case Timeout::kOneMicro:
      return 1us;
    case Timeout::kOneMilli:
      return 1ms;
    case Timeout::kHundredMilli:
      return 100ms;
    case Timeout::kLong:
      return 20s;
    case Timeout::kNone:
      break;
  }
  return 0ns;
}

template <class F>
void RunOn(bool fiber, F&& f) {
  if (fiber) {
    RunAsFiber(std::forward<F>(f));
  } else {
    f();
  }
}

TEST_P(TimeoutMatrixTest, WaiterReturnsWithTheRightResult) {
  const auto [timeout, notify, fiber_waiter, fiber_notifier] = GetParam();
  if ((timeout == Timeout::kNone || timeout == Timeout::kLong) && !notify) {
    GTEST_SKIP() << "an untimed or 20-second wait is for a notify";
  }
  ScopedRuntime runtime(2);
  Mutex mutex;
  ConditionVariable cv;
  const int rounds = static_cast<int>(Scaled(20));
  for (int round = 0; round < rounds; ++round) {
    bool flag = false;
    Event waiting;  // the waiter is about to wait (holds the mutex until it does)
    bool result = false, flag_at_return = false;
    auto wait_side = [&] {
      std::unique_lock<Mutex> lock(mutex);
      waiting.Set();
      if (timeout == Timeout::kNone) {
        cv.wait(lock, [&] { return flag; });
        result = true;
      } else {
        result = cv.wait_for(lock, DurationOf(timeout), [&] { return flag; });
      }
      flag_at_return = flag;  // read under the lock the wait returned with
    };
    auto notify_side = [&] {
      waiting.Wait();
      if (!notify) return;
      std::lock_guard<Mutex> lock(mutex);  // the waiter is waiting or done by now
      flag = true;
      cv.notify_one();
    };
    std::thread notifier_thread;
    Fiber notifier_fiber;
    if (fiber_notifier) {
      notifier_fiber = Fiber(notify_side);
    } else {
      notifier_thread = std::thread(notify_side);
    }
    RunOn(fiber_waiter, wait_side);
    if (fiber_notifier) {
      notifier_fiber.join();
    } else {
      notifier_thread.join();
    }
    EXPECT_EQ(result, flag_at_return) << "round " << round;
    if (!notify) {
      EXPECT_FALSE(result);
    }
    if (notify && (timeout == Timeout::kNone || timeout == Timeout::kLong)) {
      EXPECT_TRUE(result) << "a waiter with a long deadline missed its notify";
    }
    // The condition variable works normally afterwards.
    bool again = false;
    Fiber second([&] {
      std::lock_guard<Mutex> lock(mutex);
      again = true;
      cv.notify_all();
    });
    RunOn(fiber_waiter, [&] {
      std::unique_lock<Mutex> lock(mutex);
      cv.wait(lock, [&] { return again; });
    });
    second.join();
  }
}

}  // namespace
}  // namespace spindle
