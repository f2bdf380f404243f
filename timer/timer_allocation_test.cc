// Copyright 2026 The Spindle Authors.
//
// Arming a deadline allocates nothing: a sleep, a deadline wait (notified, or timed out)
// and a SetTimer/KillTimer pair from a fiber each carry their timer inside themselves
// or take it from a per-thread pool. The test counts the allocations (malloc replaced
// for the process: allocation_counter.h) made while a million such operations run,
// after a warm-up that lets the pools, the timer queues and the run queues reach their
// size (a structure that grows past its largest size so far allocates once, amortized,
// as any would).

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/allocation_counter.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "sync/event.h"
#include "sync/latch.h"
#include "sync/semaphore.h"
#include "timer/timer.h"

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::ScopedRuntime;

// Runs `rounds` rounds on `kPairs` pairs of fibers, and returns the allocations made
// while they ran (from the moment all had started until all were done). Each round of
// a pair: both sleep 1 us; one arms a timer an hour away and kills it; they hand a
// ball back and forth through two semaphores waited on with a 1 s deadline (notified
// deadline waits); and one waits 1 us on an Event nobody sets (a deadline that fires).
std::int64_t CountAllocations(int rounds) {
  constexpr int kPairs = 8;
  // The counted window: from the moment the last fiber entered its loop until the
  // first one left it, so that what the harness does around the loops (starting and
  // ending fibers, the main thread's Set()) is not counted; every fiber runs its
  // rounds in the window but for the first few and the last few.
  struct Window {
    std::atomic<int> inside{0};
    std::atomic<bool> closed{false};
    void Enter() {
      if (inside.fetch_add(1) + 1 == 2 * kPairs) testing::StartCountingAllocations();
    }
    void Leave() {
      if (!closed.exchange(true)) testing::StopCountingAllocations();
    }
  } window;
  std::atomic<int> failures{0};
  std::atomic<int> fired{0};
  std::vector<std::unique_ptr<BinarySemaphore>> pings, pongs;
  for (int p = 0; p < kPairs; ++p) {
    pings.push_back(std::make_unique<BinarySemaphore>(0));
    pongs.push_back(std::make_unique<BinarySemaphore>(0));
  }
  Event start;
  Event never;
  Latch started(2 * kPairs);
  Latch done(2 * kPairs);
  for (int p = 0; p < kPairs; ++p) {
    BinarySemaphore& ping = *pings[p];
    BinarySemaphore& pong = *pongs[p];
    StartFiberDetached([&, rounds] {
      started.count_down();
      start.Wait();
      window.Enter();
      for (int r = 0; r < rounds; ++r) {
        this_fiber::SleepFor(1us);
        const std::uint64_t id =
            SetTimer(std::chrono::steady_clock::now() + 1h,
                     [&fired] { fired.fetch_add(1, std::memory_order_relaxed); });
        if (!KillTimer(id)) failures.fetch_add(1, std::memory_order_relaxed);
        ping.release();
        if (!pong.try_acquire_for(1s)) failures.fetch_add(1, std::memory_order_relaxed);
      }
      window.Leave();
      done.count_down();
    });
    StartFiberDetached([&, rounds] {
      started.count_down();
      start.Wait();
      window.Enter();
      for (int r = 0; r < rounds; ++r) {
        this_fiber::SleepFor(1us);
        if (!ping.try_acquire_for(1s)) failures.fetch_add(1, std::memory_order_relaxed);
        pong.release();
        if (never.WaitFor(1us)) failures.fetch_add(1, std::memory_order_relaxed);
      }
      window.Leave();
      done.count_down();
    });
  }
  started.wait();
  start.Set();
  done.wait();
  EXPECT_EQ(failures.load(), 0) << "a deadline wait timed out although notified, or a "
                                   "KillTimer found its timer started";
  EXPECT_EQ(fired.load(), 0);
  return testing::CountedAllocations();
}

TEST(TimerAllocationTest, DeadlinesSleepsAndTimersAllocateNothing) {
  if (!testing::CountsAllocations()) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  if (::spindle::testing::TestStrategy() == "globalfifo") {
    GTEST_SKIP() << "globalfifo's queue is an unbounded std::deque (a baseline, not for "
                    "production): its pushes allocate";
  }
  ScopedRuntime runtime(2);
  // The warm-up: the per-thread pools, the timer queues' arrays, the fibers' stacks and
  // every lazily built structure reach their size.
  CountAllocations(2000);
  // Each round: 2 sleeps, 1 timer armed and killed, 2 notified deadline waits, 1 that
  // times out; 8 pairs x 20k rounds = 960k deadlines armed.
  const std::int64_t allocations = CountAllocations(20000);
  EXPECT_EQ(allocations, 0) << allocations << " allocations during 960k deadlines armed";
}

// The counter counts: a malloc() made while counting is seen (with the replacement not
// linked in, the test above would pass whatever the runtime allocated).
TEST(TimerAllocationTest, TheCounterSeesAnAllocation) {
  if (!testing::CountsAllocations()) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  testing::StartCountingAllocations();
  void* volatile pointer = std::malloc(24);
  testing::StopCountingAllocations();
  std::free(pointer);
  EXPECT_GE(testing::CountedAllocations(), 1);  // ours (another thread may add its own)
}

}  // namespace
}  // namespace spindle
