// Copyright 2026 The Spindle Authors.

#include "sync/future.h"

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fiber/async.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/mutex.h"


namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;

class FutureTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, FutureTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// Runs `f` on a plain thread (when `in_fiber` is false) or in a fiber, and waits.
template <class F>
void RunOn(bool in_fiber, F&& f) {
  if (in_fiber) {
    Fiber fiber(std::forward<F>(f));
    fiber.join();
  } else {
    std::thread thread(std::forward<F>(f));
    thread.join();
  }
}

// Continuations attached before the value arrives run in attachment (chain) order,
// each exactly once, whether a fiber or a thread sets the value.
TEST_P(FutureTest, ContinuationsRunInChainOrder) {
  ScopedRuntime runtime(GetParam());
  for (bool setter_in_fiber : {false, true}) {
    Promise<int> promise;
    std::vector<int> order;  // appended by continuations, one after another
    auto future = promise.GetFuture()
                      .Then([&](int v) {
                        order.push_back(1);
                        return v + 1;
                      })
                      .Then([&](int v) {
                        order.push_back(2);
                        return std::to_string(v);
                      })
                      .Then([&](std::string s) {
                        order.push_back(3);
                        return s + "!";
                      });
    EXPECT_FALSE(future.is_ready());
    EXPECT_TRUE(order.empty());
    RunOn(setter_in_fiber, [&] { promise.SetValue(41); });
    EXPECT_TRUE(future.is_ready());
    EXPECT_EQ(BlockingGet(std::move(future)), "42!");
    EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  }
}

// A continuation attached to a ready future runs at once, on the attaching thread.
TEST_P(FutureTest, ThenOnAReadyFutureRunsInline) {
  ScopedRuntime runtime(GetParam());
  const auto caller = std::this_thread::get_id();
  std::thread::id ran_on;
  auto future = MakeReadyFuture(7).Then([&](int v) {
    ran_on = std::this_thread::get_id();
    return v * 6;
  });
  EXPECT_EQ(ran_on, caller);
  EXPECT_TRUE(future.is_ready());
  EXPECT_EQ(BlockingGet(std::move(future)), 42);
}

TEST_P(FutureTest, VoidFuturesAndFlattening) {
  ScopedRuntime runtime(GetParam());
  std::atomic<int> steps{0};
  Future<int> future = Async([&] { ++steps; })
                           .Then([&] {
                             ++steps;
                             // A continuation returning a future: flattened.
                             return Async([&] { return ++steps * 10; });
                           })
                           .Then([&](int v) { return v + steps.load(); });
  EXPECT_EQ(BlockingGet(std::move(future)), 33);
  BlockingGet(MakeReadyFuture());
}

TEST_P(FutureTest, ExceptionsReachBlockingGetAndSkipContinuations) {
  ScopedRuntime runtime(GetParam());
  for (bool getter_in_fiber : {false, true}) {
    std::atomic<bool> skipped_ran{false};
    auto thrown_in_async = Async([]() -> int { throw std::runtime_error("from Async"); })
                               .Then([&](int v) {
                                 skipped_ran = true;
                                 return v;
                               });
    auto thrown_in_then =
        MakeReadyFuture(1).Then([](int) -> int { throw std::out_of_range("from Then"); });
    auto thrown_in_inner = MakeReadyFuture().Then(
        [] { return Async([]() -> int { throw std::logic_error("from inner"); }); });
    RunOn(getter_in_fiber, [&] {
      EXPECT_THROW(
          {
            try {
              BlockingGet(std::move(thrown_in_async));
            } catch (const std::runtime_error& e) {
              EXPECT_STREQ(e.what(), "from Async");
              throw;
            }
          },
          std::runtime_error);
      EXPECT_THROW(BlockingGet(std::move(thrown_in_then)), std::out_of_range);
      EXPECT_THROW(BlockingGet(std::move(thrown_in_inner)), std::logic_error);
    });
    EXPECT_FALSE(skipped_ran.load());
  }
}

TEST_P(FutureTest, BrokenPromise) {
  ScopedRuntime runtime(GetParam());
  Future<int> future;
  {
    Promise<int> promise;
    future = promise.GetFuture();
  }
  EXPECT_THROW(BlockingGet(std::move(future)), BrokenPromise);
}

// BlockingTryGet: a value in time is returned; none in time gives nullopt at (not
// before) the deadline; a value set after the timeout is dropped safely.
TEST_P(FutureTest, BlockingTryGetTimesOutCorrectly) {
  ScopedRuntime runtime(GetParam());
  for (bool getter_in_fiber : {false, true}) {
    for (auto timeout : {0us, 1us, 1000us, 20000us}) {
      Promise<int> late;
      Future<int> late_future = late.GetFuture();
      RunOn(getter_in_fiber, [&] {
        const auto start = std::chrono::steady_clock::now();
        EXPECT_EQ(BlockingTryGet(std::move(late_future), timeout), std::nullopt);
        EXPECT_GE(std::chrono::steady_clock::now() - start, timeout);
      });
      late.SetValue(1);  // nobody waits any more

      Promise<int> prompt;
      Future<int> prompt_future = prompt.GetFuture();
      Fiber setter([&] { prompt.SetValue(5); });
      RunOn(getter_in_fiber, [&] {
        auto got = BlockingTryGet(std::move(prompt_future), 10s);
        ASSERT_TRUE(got.has_value());
        EXPECT_EQ(*got, 5);
      });
      setter.join();
    }
    Promise<void> unit;
    auto unit_future = unit.GetFuture();
    unit.SetValue();
    EXPECT_TRUE(BlockingTryGet(std::move(unit_future), 1ms).has_value());
  }
}

TEST_P(FutureTest, WhenAllOfTenThousandFutures) {
  ScopedRuntime runtime(GetParam());
  const std::size_t n = Scaled(10000);
  std::vector<Future<std::size_t>> futures;
  for (std::size_t i = 0; i < n; ++i) {
    futures.push_back(Async([i] {
      if (i % 7 == 0) this_fiber::Yield();
      return i * i;
    }));
  }
  std::vector<std::size_t> values = BlockingGet(WhenAll(std::move(futures)));
  ASSERT_EQ(values.size(), n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(values[i], i * i) << "index " << i;

  std::atomic<std::size_t> ran{0};
  std::vector<Future<void>> voids;
  for (std::size_t i = 0; i < n; ++i) voids.push_back(Async([&] { ++ran; }));
  BlockingGet(WhenAll(std::move(voids)));
  EXPECT_EQ(ran.load(), n);

  EXPECT_TRUE(BlockingGet(WhenAll(std::vector<Future<int>>())).empty());
}

TEST_P(FutureTest, WhenAllCarriesTheFirstErrorAfterAllArrive) {
  ScopedRuntime runtime(GetParam());
  Promise<int> last;
  std::vector<Future<int>> futures;
  futures.push_back(MakeReadyFuture(1));
  futures.push_back(MakeExceptionalFuture<int>(std::make_exception_ptr(std::runtime_error("a"))));
  futures.push_back(MakeExceptionalFuture<int>(std::make_exception_ptr(std::logic_error("b"))));
  futures.push_back(last.GetFuture());
  auto all = WhenAll(std::move(futures));
  EXPECT_FALSE(all.is_ready());  // the last one is not in yet
  last.SetValue(4);
  EXPECT_THROW(BlockingGet(std::move(all)), std::runtime_error);
}

TEST_P(FutureTest, WhenAllOfMixedTypes) {
  ScopedRuntime runtime(GetParam());
  auto all = WhenAll(Async([] { return 1; }), Async([] { return std::string("two"); }),
                     Async([] {}));
  auto [one, two, three] = BlockingGet(std::move(all));
  EXPECT_EQ(one, 1);
  EXPECT_EQ(two, "two");
  (void)three;
  auto failing = WhenAll(MakeReadyFuture(1), Async([]() -> int { throw std::out_of_range("x"); }));
  EXPECT_THROW(BlockingGet(std::move(failing)), std::out_of_range);
}

// A chain far deeper than a fiber's stack could hold inline: attached first, then set
// from a fiber and from a thread; every link runs once, in order.
TEST_P(FutureTest, LongChainsDoNotOverflowTheStack) {
  ScopedRuntime runtime(GetParam());
  const int links = static_cast<int>(Scaled(100000));
  for (bool setter_in_fiber : {true, false}) {
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    int expected_next = 0;
    bool in_order = true;
    for (int i = 0; i < links; ++i) {
      future = std::move(future).Then([&, i](int v) {
        in_order = in_order && expected_next == i && v == i;
        expected_next = i + 1;
        return v + 1;
      });
    }
    RunOn(setter_in_fiber, [&] { promise.SetValue(0); });
    EXPECT_EQ(BlockingGet(std::move(future)), links);
    EXPECT_TRUE(in_order);
  }
}

// Promise set and Then attached at the same moment from two sides, 1e4 rounds: the
// continuation runs exactly once every time.
TEST_P(FutureTest, SetRacingThen) {
  ScopedRuntime runtime(GetParam());
  const int rounds = static_cast<int>(Scaled(10000));
  std::atomic<int> runs{0};
  for (int round = 0; round < rounds; ++round) {
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    Event done;
    Fiber setter([&] { promise.SetValue(round); });
    std::thread attacher([&] {
      std::move(future).Then([&, round](int v) {
        if (v == round) ++runs;
        done.Set();
      });
    });
    setter.join();
    attacher.join();
    ASSERT_TRUE(done.WaitFor(10s)) << "round " << round;
  }
  EXPECT_EQ(runs.load(), rounds);
}

// WhenAny: the first to arrive decides (a value with its index, or an exception); the
// others' outcomes are dropped; an empty list is an error naming the count; the losers'
// stop is requested before the result is set.
TEST_P(FutureTest, WhenAnyTakesTheFirstToArrive) {
  ScopedRuntime runtime(GetParam());
  {
    std::vector<Promise<int>> promises(3);
    std::vector<Future<int>> futures;
    for (auto& p : promises) futures.push_back(p.GetFuture());
    StopSource losers;
    StopToken token = losers.token();
    bool stopped_before_result = false;
    auto first = WhenAny(std::move(futures), losers).Then([&](WhenAnyResult<int> r) {
      stopped_before_result = token.stop_requested();
      return r;
    });
    EXPECT_FALSE(first.is_ready());
    promises[1].SetValue(11);
    promises[0].SetValue(10);
    promises[2].SetException(std::make_exception_ptr(std::runtime_error("late")));
    WhenAnyResult<int> r = BlockingGet(std::move(first));
    EXPECT_EQ(r.index, 1u);
    EXPECT_EQ(r.value, 11);
    EXPECT_TRUE(stopped_before_result);
  }
  {
    std::vector<Promise<void>> promises(2);
    std::vector<Future<void>> futures;
    for (auto& p : promises) futures.push_back(p.GetFuture());
    auto first = WhenAny(std::move(futures));
    promises[0].SetException(std::make_exception_ptr(std::runtime_error("first")));
    promises[1].SetValue();
    EXPECT_THROW(BlockingGet(std::move(first)), std::runtime_error);
  }
  try {
    BlockingGet(WhenAny(std::vector<Future<int>>()));
    ADD_FAILURE() << "WhenAny of no futures succeeded";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("0 futures"), std::string::npos) << e.what();
  }
}

// Fulfilled from several fibers and threads at once: exactly one outcome wins, every
// promise's continuation ran (the race state is freed: ASan), the winner is one of them.
TEST_P(FutureTest, WhenAnyRacingFulfilmentsHasOneWinner) {
  ScopedRuntime runtime(GetParam());
  const int rounds = static_cast<int>(Scaled(2000));
  for (int round = 0; round < rounds; ++round) {
    constexpr int kN = 4;
    std::vector<Promise<int>> promises(kN);
    std::vector<Future<int>> futures;
    for (auto& p : promises) futures.push_back(p.GetFuture());
    auto first = WhenAny(std::move(futures));
    std::vector<Fiber> fibers;
    std::thread thread([&] { promises[0].SetValue(0); });
    for (int i = 1; i < kN; ++i) fibers.emplace_back([&, i] { promises[i].SetValue(i); });
    for (Fiber& f : fibers) f.join();
    thread.join();
    WhenAnyResult<int> r = BlockingGet(std::move(first));
    ASSERT_LT(r.index, static_cast<std::size_t>(kN));
    ASSERT_EQ(r.value, static_cast<int>(r.index)) << "round " << round;
  }
}

// "Reply, hedge or timeout": the wait on WhenAny's result times out, and is cancelled
// with its context, as any future's.
TEST_P(FutureTest, WhenAnyWithATimeoutAndACancellation) {
  ScopedRuntime runtime(GetParam());
  std::vector<Promise<int>> promises(2);
  std::vector<Future<int>> futures;
  for (auto& p : promises) futures.push_back(p.GetFuture());
  EXPECT_FALSE(BlockingTryGet(WhenAny(std::move(futures)), 5ms).has_value());
  std::vector<Promise<int>> more(2);
  std::vector<Future<int>> more_futures;
  for (auto& p : more) more_futures.push_back(p.GetFuture());
  auto context = ExecutionContext::Create();
  context->Cancel();
  ScopedExecutionContext scope(context);
  EXPECT_FALSE(BlockingTryGet(WhenAny(std::move(more_futures)), 1h).has_value());
}

TEST(FutureDeathTest, MisuseIsReported) {
  EXPECT_DEATH(
      {
        Promise<int> promise;
        auto future = promise.GetFuture();
        promise.SetValue(1);
        promise.SetValue(2);
      },
      "set twice");
  EXPECT_DEATH(
      {
        Promise<int> promise;
        auto a = promise.GetFuture();
        auto b = promise.GetFuture();
      },
      "GetFuture\\(\\) called twice");
}

}  // namespace
}  // namespace spindle
