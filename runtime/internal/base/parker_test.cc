// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/parker.h"

#include <atomic>
#include <cstdlib>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace spindle::internal {
namespace {

using namespace std::chrono_literals;

TEST(ParkerTest, APassedDeadlineReturnsFalseWithoutSleeping) {
  Parker parker;
  EXPECT_FALSE(parker.ParkWhile(0, MonotonicDeadline::Expired()));
  EXPECT_FALSE(parker.ParkWhile(0, MonotonicDeadline::AtNs(MonotonicNowNs() - 1)));
}

TEST(ParkerTest, AWordThatChangedIsNotSleptOn) {
  Parker parker(7);
  EXPECT_TRUE(parker.ParkWhile(6, MonotonicDeadline::None()));  // returns at once: 7 != 6
}

// A bounded park ends by itself: the loop below stops once ParkWhile reports the
// deadline passed, however the sleeps were cut. It must have parked at least once
// (ParkWhile true) on the way; a thread preempted past the whole bound before its first
// park sees the deadline passed at once, so that try is repeated with a longer bound
// (x4, up to 20 s) instead of counting against the parker.
TEST(ParkerTest, ABoundedParkEndsAtItsDeadline) {
  Parker parker;
  int parks = 0;
  int tries = 0;
  for (std::chrono::milliseconds bound = 20ms; parks == 0 && bound <= 20s; bound *= 4) {
    ++tries;
    const MonotonicDeadline deadline = MonotonicDeadline::In(bound);
    while (parker.ParkWhile(0, deadline)) ++parks;
    EXPECT_TRUE(deadline.Passed());
  }
  EXPECT_GE(parks, 1) << "no park in " << tries << " tries, the last bounded by 20 s";
}

// The protocol every user follows: change the word, then unpark. A change made before
// the waiter parks is seen (the kernel compares the word); one made after wakes it.
TEST(ParkerTest, ChangeThenUnparkIsNeverSleptThrough) {
  for (int round = 0; round < 2000; ++round) {
    Parker parker;
    std::thread waker([&] {
      parker.word().store(1, std::memory_order_release);
      parker.Unpark();
    });
    while (parker.word().load(std::memory_order_acquire) == 0) {
      parker.ParkWhile(0, MonotonicDeadline::None());
    }
    waker.join();
  }
}

// A OneShotSignal's Wait() returns once another thread has Set() it, and sees what that
// thread wrote before; a Wait() after the Set() returns at once.
TEST(OneShotSignalTest, WaitReturnsOnceSetAndSeesWhatCameBefore) {
  OneShotSignal signal;
  int written = 0;
  std::thread setter([&] {
    written = 42;  // plain: published by Set()'s release, read after Wait()'s acquire
    signal.Set();
  });
  signal.Wait();
  EXPECT_EQ(written, 42);
  signal.Wait();  // already set: at once
  setter.join();
}

}  // namespace
}  // namespace spindle::internal
