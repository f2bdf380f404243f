// Copyright 2026 The Spindle Authors.

#include <atomic>
#include <cstring>
#include <new>
#include <mutex>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/latch.h"
#include "sync/semaphore.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

class SyncTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, SyncTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// 1e4 rounds of: waiters (fibers and a thread) wait on a fresh event, a setter (a
// fiber or a thread, alternating) sets it; every waiter must return.
TEST_P(SyncTest, EventHammer) {
  ScopedRuntime runtime(GetParam());
  const int rounds = static_cast<int>(Scaled(10000));
  for (int round = 0; round < rounds; ++round) {
    Event event;
    std::atomic<int> woke{0};
    Fiber a([&] {
      event.Wait();
      ++woke;
    });
    std::thread t([&] {
      event.Wait();
      ++woke;
    });
    if (round % 2 == 0) {
      Fiber setter([&] { event.Set(); });
      setter.join();
    } else {
      event.Set();
    }
    a.join();
    t.join();
    ASSERT_EQ(woke.load(), 2) << "round " << round;
    EXPECT_TRUE(event.IsSet());
    EXPECT_TRUE(event.WaitFor(0ms));
  }
}

// event.h: an Event may be destroyed as soon as Wait() has returned, even while the
// Set() that released the waiter is still inside the event. The event lives in a
// buffer that the waiter, right after its Wait() returns, destroys and then fills
// with a pattern; if Set() wrote to the event after that (its lock's release, say), the
// pattern shows it once both are done. The waiter spins on IsSet() first in most rounds
// (Wait() then returns on its fast path, in the middle of Set()) and parks in the rest;
// the setter is a plain thread or a fiber, the waiter a thread or a fiber (which spins
// only with a second worker to run a fiber setter).
TEST_P(SyncTest, AnEventMayBeDestroyedAsSoonAsWaitReturns) {
  ScopedRuntime runtime(GetParam());
  constexpr unsigned char kPattern = 0xa5;
  alignas(Event) unsigned char storage[sizeof(Event)];
  const int rounds = static_cast<int>(Scaled(2000));
  for (int round = 0; round < rounds; ++round) {
    Event* event = new (storage) Event;
    const bool thread_waits = round % 2 == 0;
    // A fiber that spins holds its worker: with one worker, a fiber setter could never run.
    const bool spin_first = round % 4 != 3 && (thread_waits || GetParam() > 1);
    std::atomic<bool> waiting{false};
    auto wait_then_destroy = [&] {
      waiting.store(true);
      if (spin_first) {
        while (!event->IsSet()) {
        }
      }
      event->Wait();
      event->~Event();
      std::memset(storage, kPattern, sizeof(storage));
    };
    std::thread waiter_thread;
    Fiber waiter_fiber;
    if (thread_waits) {
      waiter_thread = std::thread(wait_then_destroy);
    } else {
      waiter_fiber = Fiber(wait_then_destroy);
    }
    while (!waiting.load()) std::this_thread::yield();
    if (round % 3 == 0) {
      Fiber setter([event] { event->Set(); });
      setter.join();
    } else {
      event->Set();
    }
    if (waiter_thread.joinable()) waiter_thread.join(); else waiter_fiber.join();
    for (std::size_t i = 0; i < sizeof(storage); ++i) {
      ASSERT_EQ(storage[i], kPattern)
          << "round " << round << ": Set() wrote byte " << i
          << " of the event after the waiter destroyed it";
    }
  }
}

TEST_P(SyncTest, EventWaitForTimesOut) {
  ScopedRuntime runtime(GetParam());
  Event event;
  EXPECT_FALSE(event.WaitFor(1ms));
  EXPECT_FALSE(RunAsFiber([&] { return event.WaitFor(1ms); }));
  event.Set();
  EXPECT_TRUE(RunAsFiber([&] { return event.WaitFor(1h); }));
}

TEST_P(SyncTest, LatchReleasesEveryWaiterAtZero) {
  ScopedRuntime runtime(GetParam());
  const int n = 100;
  Latch latch(n);
  std::atomic<int> passed{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < n; ++i) {
    fibers.emplace_back([&] {
      latch.arrive_and_wait();
      ++passed;
    });
  }
  std::thread waiter([&] {
    latch.wait();
    ++passed;
  });
  for (auto& f : fibers) f.join();
  waiter.join();
  EXPECT_EQ(passed.load(), n + 1);
  EXPECT_TRUE(latch.try_wait());
  Latch never(1);
  EXPECT_FALSE(never.wait_for(1ms));
  EXPECT_FALSE(RunAsFiber([&] { return never.wait_for(1ms); }));
}

TEST_P(SyncTest, SemaphoreBoundsConcurrency) {
  ScopedRuntime runtime(GetParam());
  CountingSemaphore<> semaphore(3);
  std::atomic<int> inside{0}, max_inside{0}, done{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < 50; ++i) {
    fibers.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        semaphore.acquire();
        const int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        this_fiber::Yield();
        --inside;
        semaphore.release();
      }
      ++done;
    });
  }
  for (auto& f : fibers) f.join();
  EXPECT_EQ(done.load(), 50);
  EXPECT_LE(max_inside.load(), 3);
  EXPECT_FALSE(BinarySemaphore(0).try_acquire_for(1ms));
}

// semaphore.h's promises: release() hands its permit to the oldest waiter (FIFO), and
// a try_acquire() that comes after cannot take it. Four waiters queue one at a time
// (each is seen parked before the next starts), then permits come one by one.
TEST_P(SyncTest, SemaphoreHandsPermitsToTheOldestWaiterFirst) {
  ScopedRuntime runtime(GetParam());
  CountingSemaphore<> semaphore(0);
  constexpr int kWaiters = 4;
  std::mutex order_lock;
  std::vector<int> order;
  std::atomic<int> acquired{0};
  std::vector<Fiber> fibers;
  for (int i = 0; i < kWaiters; ++i) {
    std::atomic<std::uint64_t> id{0};
    fibers.emplace_back([&, i] {
      id.store(this_fiber::GetId());
      semaphore.acquire();
      {
        std::lock_guard<std::mutex> guard(order_lock);
        order.push_back(i);
      }
      ++acquired;
    });
    ASSERT_TRUE(WaitFor([&] { return id.load() != 0; }));
    ASSERT_TRUE(testing::WaitUntilWaitingIn(id.load(), internal::WaitKind::kSemaphore))
        << "waiter " << i << " never parked";
  }
  for (int k = 1; k <= kWaiters; ++k) {
    semaphore.release();
    // Handed to a waiter, not left in the count for this later caller.
    EXPECT_FALSE(semaphore.try_acquire()) << "try_acquire() overtook a waiter";
    ASSERT_TRUE(WaitFor([&] { return acquired.load() == k; }));
  }
  for (auto& f : fibers) f.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
}

// A waiter whose deadline races a release() loses no permit: either it returns true
// (it has the permit) or the permit stays for someone else. Rounds of a timed waiter
// (a fiber or a thread) with a deadline of 0-50 us against a release() at about that
// time; every permit released is then held by a waiter or still in the count.
TEST_P(SyncTest, SemaphoreTimedOutWaiterLosesNoPermit) {
  ScopedRuntime runtime(GetParam());
  CountingSemaphore<> semaphore(0);
  const int rounds = static_cast<int>(Scaled(2000));
  int taken = 0, left = 0;
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> got{false};
    const auto timeout = std::chrono::microseconds(round % 51);
    auto wait = [&] { got.store(semaphore.try_acquire_for(timeout)); };
    Fiber releaser([&] { semaphore.release(); });
    if (round % 2 == 0) {
      Fiber waiter(wait);
      waiter.join();
    } else {
      wait();
    }
    releaser.join();
    if (got.load()) ++taken;
    while (semaphore.try_acquire()) ++left;  // each round starts from 0
  }
  EXPECT_EQ(taken + left, rounds) << taken << " taken by waiters, " << left << " left";
  RecordProperty("taken_by_waiters", taken);
}

TEST(SyncDeathTest, MisuseIsReported) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(Latch(-1), "negative count");
  EXPECT_DEATH(
      {
        Latch latch(1);
        latch.count_down(2);
      },
      "would go below zero");
  EXPECT_DEATH(
      {
        BinarySemaphore semaphore(1);
        semaphore.release();
      },
      "exceeds max");
}

}  // namespace
}  // namespace spindle
