// Copyright 2026 The Spindle Authors.

#include "sync/mutex.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
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

class MutexTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, MutexTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// 64 fibers and 2 plain threads increment one non-atomic counter under the mutex.
TEST_P(MutexTest, CounterUnderContentionIsExact) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  long counter = 0;
  const int per_party = static_cast<int>(Scaled(5000));
  std::vector<Fiber> fibers;
  for (int f = 0; f < 64; ++f) {
    fibers.emplace_back([&] {
      for (int i = 0; i < per_party; ++i) {
        std::lock_guard<Mutex> guard(mutex);
        ++counter;
        if (i % 64 == 0) this_fiber::Yield();  // holders sometimes switch while holding
      }
    });
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < per_party; ++i) {
        std::lock_guard<Mutex> guard(mutex);
        ++counter;
      }
    });
  }
  for (auto& f : fibers) f.join();
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 66L * per_party);
}

// Go's TestMutexFairness: a holder that re-locks in a loop must not keep another waiter
// from getting the lock 10 times within 10 s. Fibers are not preempted, so on a single
// worker the hog yields the worker between rounds (else the waiter could not even run
// to call lock()); with more workers it re-locks at once, as in Go's test.
TEST_P(MutexTest, RelockingHolderCannotStarveAWaiter) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  std::atomic<bool> stop{false};
  const bool single_worker = GetParam() == 1;
  Fiber hog([&] {
    while (!stop.load()) {
      mutex.lock();
      const auto until = std::chrono::steady_clock::now() + 100us;
      while (std::chrono::steady_clock::now() < until) {
      }
      mutex.unlock();
      if (single_worker) this_fiber::Yield();
    }
  });
  std::atomic<int> acquired{0};
  Fiber waiter([&] {
    for (int i = 0; i < 10; ++i) {
      mutex.lock();
      ++acquired;
      mutex.unlock();
      this_fiber::SleepFor(1ms);
    }
  });
  EXPECT_TRUE(WaitFor([&] { return acquired.load() == 10; }, 10s));
  stop = true;
  hog.join();
  waiter.join();
}

// A hog that releases and re-takes the lock back to back and yields only while holding
// it. A woken waiter then always finds it held again: with barging alone it would never
// get in (deterministically so on one worker). Hand-off mode, entered once the waiter
// has waited 1 ms, must pass it the lock.
TEST_P(MutexTest, HandOffModeEndsBarging) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  std::atomic<bool> stop{false};
  Fiber hog([&] {
    mutex.lock();
    while (!stop.load()) {
      this_fiber::Yield();  // while holding: the waiter runs, finds it held, waits
      mutex.unlock();
      mutex.lock();
    }
    mutex.unlock();
  });
  std::atomic<int> acquired{0};
  Fiber waiter([&] {
    for (int i = 0; i < 10; ++i) {
      mutex.lock();
      ++acquired;
      mutex.unlock();
    }
  });
  EXPECT_TRUE(WaitFor([&] { return acquired.load() == 10; }, 10s));
  stop = true;
  hog.join();
  waiter.join();
}

TEST_P(MutexTest, TimedLockTimesOutAndThenWorks) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  mutex.lock();
  RunAsFiber([&] {
    EXPECT_FALSE(mutex.try_lock());
    EXPECT_FALSE(mutex.try_lock_for(1ms));
  });
  EXPECT_FALSE(mutex.try_lock_for(1ms));  // from a plain thread
  std::atomic<bool> got{false};
  Fiber waiter([&] {
    got = mutex.try_lock_for(10s);
    mutex.unlock();
  });
  mutex.unlock();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_TRUE(mutex.try_lock());
  mutex.unlock();
}

// Timed lockers that give up, mixed into heavy contention from fibers and a thread:
// every successful lock is counted exactly, and afterwards the mutex is free and
// behaves normally (a waiter count left behind by a timed-out waiter would make the
// next unlock look for waiters that are gone, or the destructor report waiters).
TEST_P(MutexTest, TimedWaitersUnderContentionLeaveItConsistent) {
  ScopedRuntime runtime(GetParam());
  Mutex mutex;
  long counter = 0;
  std::atomic<long> successes{0}, timeouts{0};
  const int per_party = static_cast<int>(Scaled(3000));
  auto party = [&](int seed) {
    for (int i = 0; i < per_party; ++i) {
      const int kind = (i + seed) % 4;
      bool locked = true;
      if (kind == 0) {
        locked = mutex.try_lock_for(std::chrono::microseconds((i * 7 + seed) % 50));
      } else if (kind == 1) {
        locked = mutex.try_lock();
      } else {
        mutex.lock();
      }
      if (!locked) {
        ++timeouts;
        continue;
      }
      ++counter;
      ++successes;
      if (i % 32 == 0 && IsFiberContextPresent()) this_fiber::Yield();
      mutex.unlock();
    }
  };
  std::vector<Fiber> fibers;
  for (int f = 0; f < 32; ++f) fibers.emplace_back([&, f] { party(f); });
  std::thread thread([&] { party(1000); });
  for (auto& f : fibers) f.join();
  thread.join();
  EXPECT_EQ(counter, successes.load());
  EXPECT_EQ(successes.load() + timeouts.load(), 33L * per_party);
  ASSERT_TRUE(mutex.try_lock());
  mutex.unlock();
  std::atomic<bool> done{false};
  Fiber again([&] {
    std::lock_guard<Mutex> guard(mutex);
    done = true;
  });
  again.join();
  EXPECT_TRUE(done.load());
}

// The lifetime rule of std::mutex: whoever takes and releases the lock last may destroy
// it at once, even while an earlier unlock() is still finishing inside it. Here a timed
// waiter gives up while the holder unlocks, and the main thread, having seen the waiter
// leave, locks, unlocks and deletes the mutex without waiting for the holder's
// unlock() to return. Under ASan an unlocker touching the freed mutex is reported.
TEST_P(MutexTest, DestroyRightAfterTheLastUnlock) {
  ScopedRuntime runtime(GetParam());
  const int rounds = static_cast<int>(Scaled(2000));
  for (int round = 0; round < rounds; ++round) {
    auto* mutex = new Mutex;
    mutex->lock();
    Event waiter_queued;
    std::thread waiter([&] {
      waiter_queued.Set();
      if (mutex->try_lock_for(std::chrono::microseconds(round % 20))) mutex->unlock();
    });
    waiter_queued.Wait();
    Fiber holder([mutex] { mutex->unlock(); });
    waiter.join();
    mutex->lock();
    mutex->unlock();
    delete mutex;
    holder.join();
  }
}

TEST(MutexDeathTest, UnlockingAnUnlockedMutexStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        Mutex mutex;
        mutex.unlock();
      },
      "on a mutex that is not locked");
}

// On one worker the order is fixed: the holder starts the waiter, yields to it, and
// the waiter parks in lock() before the holder runs again and destroys the mutex.
TEST(MutexDeathTest, DestroyingAMutexWithWaitersStops) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        RunAsFiber([] {
          auto mutex = std::make_unique<Mutex>();
          mutex->lock();
          Fiber waiter([&] { mutex->lock(); });
          this_fiber::Yield();
          mutex.reset();
        });
      },
      "destroyed while fibers or threads were waiting");
}

}  // namespace
}  // namespace spindle
