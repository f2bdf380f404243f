// Copyright 2026 The Spindle Authors.

#include "fiber/internal/spinlock.h"

#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

TEST(SpinlockTest, TryLock) {
  Spinlock lock;
  EXPECT_FALSE(lock.IsLocked());
  EXPECT_TRUE(lock.try_lock());
  EXPECT_TRUE(lock.IsLocked());
  EXPECT_FALSE(lock.try_lock());
  lock.unlock();
  EXPECT_FALSE(lock.IsLocked());
}

TEST(SpinlockTest, MutualExclusion) {
  // A non-atomic counter stays exact only if the critical sections never overlap (and
  // TSan checks the acquire/release pairing).
  Spinlock lock;
  long counter = 0;
  constexpr int kThreads = 4;
  constexpr int kIterations = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kIterations; ++i) {
        std::lock_guard<Spinlock> guard(lock);
        ++counter;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(counter, long{kThreads} * kIterations);
}

}  // namespace
}  // namespace spindle::internal
