// Copyright 2026 The Spindle Authors.
//
// Cancellation and deadlines of execution contexts (fiber/execution_context.h) as the
// interruptible waits see them: every wait, parked, returns its cancelled result once
// the context is cancelled, from a fiber and from a plain thread; a wait made in a
// cancelled context does not park; a cancellation racing a notify and a timeout has
// exactly one outcome and loses no notification; children follow their parents; a
// token outlives its waiters harmlessly.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/condition_variable.h"
#include "sync/event.h"
#include "sync/future.h"
#include "sync/latch.h"
#include "sync/mutex.h"
#include "sync/semaphore.h"
#include "sync/stop_token.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::TestWatchdog;
using testing::WaitFor;

// Far enough that a wait that returns was ended by its cancellation, not its deadline.
constexpr auto kFar = 600s;

// One interruptible wait: the objects it waits on, its wait (which returns true when it
// gave the cancelled result: false, nullopt, timeout) and the wait kind the fiber dump
// shows while it is parked. Set up once per use; `release` ends a wait that was not
// cancelled (so nothing is destroyed with a waiter).
struct WaitCase {
  std::string name;
  internal::WaitKind kind;
  std::function<bool()> wait;
  std::function<void()> release;
};

// Builds a fresh case of kind `i` (kCaseCount of them); its objects live in `keep`.
constexpr int kCaseCount = 7;
WaitCase MakeCase(int i, std::vector<std::shared_ptr<void>>& keep) {
  switch (i) {
    case 0: {
      auto event = std::make_shared<Event>();
      keep.push_back(event);
      return {"Event::WaitUntil", internal::WaitKind::kEvent,
              [event] { return !event->WaitUntil(Clock::now() + kFar); },
              [event] { event->Set(); }};
    }
    case 1: {
      auto latch = std::make_shared<Latch>(1);
      keep.push_back(latch);
      return {"Latch::WaitUntil", internal::WaitKind::kLatch,
              [latch] { return !latch->WaitUntil(Clock::now() + kFar); },
              [latch] { latch->count_down(); }};
    }
    case 2: {
      auto semaphore = std::make_shared<CountingSemaphore<>>(0);
      keep.push_back(semaphore);
      return {"Semaphore::try_acquire_until", internal::WaitKind::kSemaphore,
              [semaphore] { return !semaphore->try_acquire_until(Clock::now() + kFar); },
              [semaphore] { semaphore->release(); }};
    }
    case 3: {
      struct Cv {
        Mutex mutex;
        ConditionVariable cv;
        bool ready = false;
      };
      auto cv = std::make_shared<Cv>();
      keep.push_back(cv);
      return {"ConditionVariable::wait_until", internal::WaitKind::kConditionVariable,
              [cv] {
                std::unique_lock<Mutex> lock(cv->mutex);
                const bool got = cv->cv.wait_until(lock, Clock::now() + kFar,
                                                   [&] { return cv->ready; });
                EXPECT_TRUE(lock.owns_lock());
                return !got;
              },
              [cv] {
                std::lock_guard<Mutex> lock(cv->mutex);
                cv->ready = true;
                cv->cv.notify_all();
              }};
    }
    case 4: {
      // The test holds the mutex from a fiber of its own until released.
      struct Held {
        Mutex mutex;
        Event locked;
        Event unlock;
        std::optional<Fiber> holder;
      };
      auto held = std::make_shared<Held>();
      keep.push_back(held);
      held->holder.emplace([held] {
        held->mutex.lock();
        held->locked.Set();
        held->unlock.Wait();
        held->mutex.unlock();
      });
      held->locked.Wait();
      return {"Mutex::try_lock_until", internal::WaitKind::kMutex,
              [held] {
                const bool got = held->mutex.try_lock_until(Clock::now() + kFar);
                if (got) held->mutex.unlock();
                return !got;
              },
              [held] {
                held->unlock.Set();
                held->holder->join();
              }};
    }
    case 5:
      return {"this_fiber::SleepUntil", internal::WaitKind::kSleep,
              [] { return !this_fiber::SleepUntil(Clock::now() + kFar); }, [] {}};
    default: {
      // A future per wait (a wait consumes its future); their promises are kept and
      // fulfilled by `release`.
      struct Promises {
        std::mutex mutex;
        std::vector<Promise<int>> promises;
      };
      auto promises = std::make_shared<Promises>();
      keep.push_back(promises);
      return {"BlockingTryGet", internal::WaitKind::kFuture,
              [promises] {
                Future<int> future = [&] {
                  std::lock_guard<std::mutex> lock(promises->mutex);
                  return promises->promises.emplace_back().GetFuture();
                }();
                return !BlockingTryGet(std::move(future), kFar).has_value();
              },
              [promises] {
                std::lock_guard<std::mutex> lock(promises->mutex);
                for (Promise<int>& promise : promises->promises) promise.SetValue(1);
              }};
    }
  }
}

class CancellationTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, CancellationTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// Runs case `i` in a fresh context, in a fiber or a plain thread; once it is parked (as
// the fiber dump sees it) or blocked in the kernel, cancels the context from the test
// thread: the wait must return its cancelled result. Prints how long the return took
// after Cancel() (not asserted).
void ExpectParkedWaitCancelled(int i, bool as_fiber) {
  std::vector<std::shared_ptr<void>> keep;
  WaitCase c = MakeCase(i, keep);
  auto context = ExecutionContext::Create();
  std::atomic<std::uint64_t> id{0};
  std::atomic<int> tid{0};
  std::atomic<bool> cancelled_result{false};
  Clock::time_point returned;
  auto body = [&] {
    ScopedExecutionContext scope(context);
    id = this_fiber::GetId();
    tid = testing::CurrentThreadId();
    cancelled_result = c.wait();
    returned = Clock::now();
  };
  std::optional<Fiber> fiber;
  std::optional<std::thread> thread;
  if (as_fiber) {
    fiber.emplace(body);
    ASSERT_TRUE(WaitFor([&] { return id.load() != 0; }));
    ASSERT_TRUE(testing::WaitUntilWaitingIn(id.load(), c.kind)) << c.name;
  } else {
    thread.emplace(body);
    ASSERT_TRUE(WaitFor([&] { return tid.load() != 0; }));
    ASSERT_TRUE(testing::WaitUntilThreadBlocked(tid.load())) << c.name;
  }
  const Clock::time_point cancel = Clock::now();
  context->Cancel();
  if (as_fiber) {
    fiber->join();
  } else {
    thread->join();
  }
  EXPECT_TRUE(cancelled_result.load()) << c.name;
  EXPECT_TRUE(context->cancelled());
  std::printf("%s (%s): returned %.1f us after Cancel()\n", c.name.c_str(),
              as_fiber ? "fiber" : "thread",
              std::chrono::duration<double, std::micro>(returned - cancel).count());
  c.release();
}

// Each wait parked in a fiber: Cancel() from the test thread returns it with its
// cancelled result.
TEST_P(CancellationTest, EachParkedFiberWaitReturnsCancelled) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(300s);
  for (int i = 0; i < kCaseCount; ++i) ExpectParkedWaitCancelled(i, /*as_fiber=*/true);
}

// The same waits in a plain thread that entered the context.
TEST_P(CancellationTest, EachBlockedThreadWaitReturnsCancelled) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(300s);
  for (int i = 0; i < kCaseCount; ++i) ExpectParkedWaitCancelled(i, /*as_fiber=*/false);
}

// In a context cancelled before the wait, each wait returns its cancelled result at
// once, without parking, from a fiber and from a thread; a second wait too.
TEST_P(CancellationTest, WaitsInACancelledContextDoNotPark) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(300s);
  auto context = ExecutionContext::Create();
  context->Cancel();
  EXPECT_TRUE(context->stop_token().stop_possible());
  for (int i = 0; i < kCaseCount; ++i) {
    std::vector<std::shared_ptr<void>> keep;
    WaitCase c = MakeCase(i, keep);
    Fiber fiber([&] {
      ScopedExecutionContext scope(context);
      EXPECT_TRUE(ExecutionContext::CurrentStopToken().stop_requested());
      EXPECT_TRUE(c.wait()) << c.name;
      EXPECT_TRUE(c.wait()) << c.name;
    });
    fiber.join();
    std::thread thread([&] {
      ScopedExecutionContext scope(context);
      EXPECT_TRUE(c.wait()) << c.name;
    });
    thread.join();
    c.release();
  }
}

// Waits outside any context, and the untimed waits inside one, are not interruptible:
// they end by their own notification only.
TEST_P(CancellationTest, UntimedWaitsAreNotInterrupted) {
  ScopedRuntime runtime(GetParam());
  auto context = ExecutionContext::Create();
  Event event;
  Latch latch(1);
  std::atomic<std::uint64_t> id{0};
  std::atomic<int> stage{0};
  Fiber waiter([&] {
    ScopedExecutionContext scope(context);
    id = this_fiber::GetId();
    event.Wait();
    stage = 1;
    latch.wait();
    stage = 2;
  });
  ASSERT_TRUE(WaitFor([&] { return id.load() != 0; }));
  ASSERT_TRUE(testing::WaitUntilWaitingIn(id.load(), internal::WaitKind::kEvent));
  context->Cancel();
  // Still parked in the same wait after the cancellation has run.
  ASSERT_TRUE(testing::WaitUntilWaitingIn(id.load(), internal::WaitKind::kEvent));
  EXPECT_EQ(stage.load(), 0);
  event.Set();
  ASSERT_TRUE(testing::WaitUntilWaitingIn(id.load(), internal::WaitKind::kLatch));
  EXPECT_EQ(stage.load(), 1);
  latch.count_down();
  waiter.join();
  EXPECT_EQ(stage.load(), 2);
}

// A child context is cancelled with its parent (and with a linked token), also when it
// is made after the parent was cancelled; cancelling the child leaves the parent alone;
// the child's deadline is the earlier of its own and its parent's.
TEST_P(CancellationTest, ChildrenFollowTheirParents) {
  ScopedRuntime runtime(GetParam());
  auto parent = ExecutionContext::Create();
  ExecutionContext::Options options;
  options.parent = parent;
  auto child = ExecutionContext::Create(options);
  auto grandchild = ExecutionContext::Create({child, {}, Clock::time_point::max()});
  auto sibling = ExecutionContext::Create({parent, {}, Clock::time_point::max()});
  sibling->Cancel();
  EXPECT_FALSE(parent->cancelled());
  EXPECT_FALSE(child->cancelled());

  Event never;
  std::atomic<bool> child_returned{false};
  Fiber waiter([&] {
    ScopedExecutionContext scope(grandchild);
    child_returned = !never.WaitUntil(Clock::now() + kFar);
  });
  parent->Cancel();
  waiter.join();
  EXPECT_TRUE(child_returned.load());
  EXPECT_TRUE(child->cancelled());
  EXPECT_TRUE(grandchild->cancelled());

  auto late = ExecutionContext::Create({parent, {}, Clock::time_point::max()});
  EXPECT_TRUE(late->cancelled());

  StopSource source;
  auto linked = ExecutionContext::Create({nullptr, source.token(), Clock::time_point::max()});
  EXPECT_FALSE(linked->cancelled());
  source.RequestStop();
  EXPECT_TRUE(linked->cancelled());

  const Clock::time_point soon = Clock::now() + 1h;
  auto timed = ExecutionContext::Create({nullptr, {}, soon});
  auto later_child = ExecutionContext::Create({timed, {}, soon + 1h});
  auto earlier_child = ExecutionContext::Create({timed, {}, soon - 1min});
  EXPECT_EQ(timed->deadline(), soon);
  EXPECT_EQ(later_child->deadline(), soon);
  EXPECT_EQ(earlier_child->deadline(), soon - 1min);
  EXPECT_EQ(parent->deadline(), Clock::time_point::max());
}

// A context's deadline ends the interruptible waits made in it, even when their own
// deadline is later, with the timed-out result; the context is not cancelled by it.
TEST_P(CancellationTest, TheContextDeadlineEndsWaits) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(300s);
  auto context = ExecutionContext::Create({nullptr, {}, Clock::now() + 20ms});
  Event never;
  std::atomic<bool> fiber_done{false};
  Fiber fiber([&] {
    ScopedExecutionContext scope(context);
    EXPECT_FALSE(never.WaitUntil(Clock::now() + kFar));
    EXPECT_GE(Clock::now(), context->deadline());
    EXPECT_FALSE(this_fiber::SleepFor(kFar));  // ended early by the context's deadline
    fiber_done = true;
  });
  std::thread thread([&] {
    ScopedExecutionContext scope(context);
    EXPECT_FALSE(never.WaitUntil(Clock::now() + kFar));
    EXPECT_GE(Clock::now(), context->deadline());
  });
  fiber.join();
  thread.join();
  EXPECT_TRUE(fiber_done.load());
  EXPECT_FALSE(context->cancelled());
  // A sleep that ends before the context's deadline reports a full sleep.
  auto roomy = ExecutionContext::Create({nullptr, {}, Clock::now() + kFar});
  Fiber sleeper([&] {
    ScopedExecutionContext scope(roomy);
    EXPECT_TRUE(this_fiber::SleepFor(1ms));
  });
  sleeper.join();
}

// Cancellation racing notification and timeout, counted exactly. Each round: waiters
// (fibers and a thread, each in a context of its own) try to take a permit of a
// semaphore with a short deadline; a releaser hands out permits while a canceller
// cancels contexts. Every wait returns exactly once; a permit is taken by exactly one
// waiter or stays in the semaphore (a release whose waiter was cancelled or timed out
// meanwhile passes to the next waiter or to the count): permits taken plus permits left
// equal permits released.
TEST_P(CancellationTest, CancelRacingNotifyAndTimeoutIsExactlyOnce) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(600s);
  const int rounds = static_cast<int>(Scaled(300));
  constexpr int kFiberWaiters = 6;
  constexpr int kPermits = 4;
  std::mt19937 random(12345);
  std::int64_t cancelled_results = 0, timeouts = 0, taken_total = 0;
  for (int round = 0; round < rounds; ++round) {
    CountingSemaphore<> semaphore(0);
    std::vector<std::shared_ptr<ExecutionContext>> contexts;
    for (int i = 0; i <= kFiberWaiters; ++i) contexts.push_back(ExecutionContext::Create());
    std::atomic<int> taken{0}, returns{0}, cancels_seen{0};
    const auto wait_us = std::chrono::microseconds(random() % 300);
    auto wait = [&](int i) {
      ScopedExecutionContext scope(contexts[i]);
      if (semaphore.try_acquire_until(Clock::now() + wait_us)) {
        ++taken;
      } else if (contexts[i]->cancelled()) {
        ++cancels_seen;
      }
      ++returns;
    };
    std::vector<Fiber> waiters;
    for (int i = 0; i < kFiberWaiters; ++i) waiters.emplace_back([&, i] { wait(i); });
    std::thread thread_waiter([&] { wait(kFiberWaiters); });
    const int cancel_from = static_cast<int>(random() % (kFiberWaiters + 1));
    Fiber canceller([&] {
      for (int i = cancel_from; i <= kFiberWaiters; i += 2) contexts[i]->Cancel();
    });
    std::thread releaser([&] { semaphore.release(kPermits); });
    for (Fiber& f : waiters) f.join();
    thread_waiter.join();
    canceller.join();
    releaser.join();
    ASSERT_EQ(returns.load(), kFiberWaiters + 1) << "round " << round;
    int left = 0;
    while (semaphore.try_acquire()) ++left;
    ASSERT_EQ(taken.load() + left, kPermits) << "round " << round;
    taken_total += taken.load();
    cancelled_results += cancels_seen.load();
    timeouts += kFiberWaiters + 1 - taken.load() - cancels_seen.load();
  }
  std::printf("%d rounds: %lld permits taken, %lld cancelled, %lld timed out\n", rounds,
              static_cast<long long>(taken_total), static_cast<long long>(cancelled_results),
              static_cast<long long>(timeouts));
}

// Cancel() racing Set() on an event: every waiter returns, a waiter told "set" saw the
// event set, and a waiter told "not set" was cancelled (its deadline is far).
TEST_P(CancellationTest, CancelRacingSetWakesEveryWaiter) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(600s);
  const int rounds = static_cast<int>(Scaled(1000));
  for (int round = 0; round < rounds; ++round) {
    Event event;
    auto context = ExecutionContext::Create();
    std::atomic<int> set_seen{0}, cancelled_seen{0};
    auto wait = [&] {
      ScopedExecutionContext scope(context);
      if (event.WaitUntil(Clock::now() + kFar)) {
        ++set_seen;
      } else {
        EXPECT_TRUE(context->cancelled());
        ++cancelled_seen;
      }
    };
    Fiber a(wait), b(wait);
    std::thread t(wait);
    if (round % 2 == 0) {
      Fiber setter([&] { event.Set(); });
      context->Cancel();
      setter.join();
    } else {
      Fiber canceller([&] { context->Cancel(); });
      event.Set();
      canceller.join();
    }
    a.join();
    b.join();
    t.join();
    ASSERT_EQ(set_seen.load() + cancelled_seen.load(), 3) << "round " << round;
  }
}

// A token (and a context) outliving its waiters: the waiters' registrations are gone
// once their waits return, so a later cancellation touches none of their (freed) stack
// frames or objects (ASan would report it), and runs the callbacks still registered.
TEST_P(CancellationTest, ATokenOutlivingItsWaitersIsHarmless) {
  ScopedRuntime runtime(GetParam());
  auto context = ExecutionContext::Create();
  StopToken token = context->stop_token();
  {
    auto event = std::make_unique<Event>();
    std::vector<Fiber> fibers;
    for (int i = 0; i < 8; ++i) {
      fibers.emplace_back([&] {
        ScopedExecutionContext scope(context);
        EXPECT_TRUE(event->WaitUntil(Clock::now() + kFar));
        EXPECT_TRUE(this_fiber::SleepFor(10us));
      });
    }
    event->Set();
    for (Fiber& f : fibers) f.join();
    event.reset();
  }
  std::atomic<int> ran{0};
  {
    StopCallback gone(token, [&] { ran += 100; });  // unregistered before the stop
  }
  StopCallback stays(token, [&] { ++ran; });
  context->Cancel();  // no waiter is registered any more; `stays` is
  EXPECT_EQ(ran.load(), 1);
  context.reset();  // the token keeps the state
  EXPECT_TRUE(token.stop_requested());
  StopCallback late(token, [&] { ran += 10; });  // runs at once
  EXPECT_EQ(ran.load(), 11);
}

// A callback of a child's cancellation (run inside its parent's) that drops the last
// reference to the child: the child's destructor unlinks it from the parent on the
// fiber that runs the parent's cancellation, which must neither wait for itself nor
// touch the freed link afterwards (ASan). Likewise a StopCallback destroyed inside its
// own run.
TEST_P(CancellationTest, AContextOrCallbackDestroyedInsideItsOwnCancellation) {
  ScopedRuntime runtime(GetParam());
  TestWatchdog watchdog(120s);
  for (bool from_fiber : {true, false}) {
    auto body = [] {
      auto parent = ExecutionContext::Create();
      auto* holder = new std::shared_ptr<ExecutionContext>(
          ExecutionContext::Create({parent, {}, Clock::time_point::max()}));
      std::atomic<int> ran{0};
      StopCallback drop((*holder)->stop_token(), [&] {
        delete holder;  // the child's last reference
        ++ran;
      });
      StopSource source;
      auto* self_destroying = new std::optional<StopCallback<std::function<void()>>>();
      self_destroying->emplace(source.token(), std::function<void()>([&, self_destroying] {
                                 ++ran;
                                 delete self_destroying;
                               }));
      parent->Cancel();
      source.RequestStop();
      EXPECT_EQ(ran.load(), 2);
    };
    if (from_fiber) {
      RunAsFiber(body);
    } else {
      body();
    }
  }
}

// A StopCallback whose function parks (here on an event) while another fiber of the
// same single worker destroys it: the destroyer waits for the run to end, yielding its
// worker so that the parked run can resume there; with the thread yielded instead, the
// run could never resume and both would hang.
TEST(CancellationOneWorkerTest, ACallbackThatParksIsWaitedForWithoutBlockingItsWorker) {
  ScopedRuntime runtime(1);
  TestWatchdog watchdog(120s);
  StopSource source;
  Event inside, release, destroying;
  auto callback = std::make_unique<StopCallback<std::function<void()>>>(
      source.token(), std::function<void()>([&] {
        inside.Set();
        release.Wait();  // parks the cancelling fiber
      }));
  Fiber canceller([&] { source.RequestStop(); });
  inside.Wait();
  Fiber destroyer([&] {
    destroying.Set();
    callback.reset();  // waits for the run above, which needs this worker
  });
  destroying.Wait();
  release.Set();
  destroyer.join();
  canceller.join();
  EXPECT_EQ(callback, nullptr);
}

// StopSource/StopToken/StopCallback on their own: a callback made after the stop runs at
// once; RequestStop() reports the first request only; a default token is never stopped;
// a callback's destructor waits for its run in progress on another thread.
TEST(StopTokenTest, SourceTokenAndCallbacks) {
  StopToken none;
  EXPECT_FALSE(none.stop_possible());
  EXPECT_FALSE(none.stop_requested());
  StopSource source;
  StopToken token = source.token();
  StopToken copy = token;
  EXPECT_TRUE(copy.stop_possible());
  int ran = 0;
  StopCallback before(token, [&] { ++ran; });
  EXPECT_TRUE(source.RequestStop());
  EXPECT_FALSE(source.RequestStop());
  EXPECT_EQ(ran, 1);
  EXPECT_TRUE(copy.stop_requested());
  StopCallback after(token, [&] { ran += 10; });
  EXPECT_EQ(ran, 11);

  // The destructor of a callback running on another thread waits for it to return.
  for (int round = 0; round < 200; ++round) {
    StopSource s;
    std::atomic<bool> inside{false}, finished{false};
    auto callback = std::make_unique<StopCallback<std::function<void()>>>(
        s.token(), std::function<void()>([&] {
          inside = true;
          std::this_thread::sleep_for(50us);
          finished = true;
        }));
    std::thread stopper([&] { s.RequestStop(); });
    if (round % 2 == 0) WaitFor([&] { return inside.load(); });
    callback.reset();
    // Either it never started (and never will), or it has finished.
    EXPECT_EQ(inside.load(), finished.load()) << "round " << round;
    stopper.join();
    EXPECT_EQ(inside.load(), finished.load());
  }
}

}  // namespace
}  // namespace spindle
