// Copyright 2026 The Spindle Authors.
//
// Channels allocate nothing per operation: a value handed over a rendezvous, one through
// a buffer, a Select over two channels with a deadline, each with fibers parking and
// waking on both sides. The test counts the process's allocations (allocation_counter.h)
// while they run, after a warm-up that lets the pools, the stacks and the run queues
// reach their size.

#include <atomic>
#include <chrono>
#include <cstdint>

#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/allocation_counter.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "sync/channel.h"
#include "sync/event.h"
#include "sync/latch.h"

DECLARE_uint64(fiber_hog_rescue_ms);
DECLARE_uint64(fiber_hog_report_ms);

namespace spindle {
namespace {

using namespace std::chrono_literals;
using testing::ScopedRuntime;

// `rounds` rounds of: a ping over a rendezvous channel and a pong back over a buffered
// one, then a value received by a Select over two channels (one never ready) with a
// deadline, between two fibers. Returns the allocations counted while both were in their
// loops.
std::int64_t CountAllocations(int rounds) {
  Channel<std::uint64_t> ping, pong(4), feed(2), never;
  std::atomic<int> inside{0};
  std::atomic<bool> closed{false};
  std::atomic<int> failures{0};
  auto enter = [&] {
    if (inside.fetch_add(1) + 1 == 2) testing::StartCountingAllocations();
  };
  auto leave = [&] {
    if (!closed.exchange(true)) testing::StopCountingAllocations();
  };
  Event start;
  Latch done(2);
  StartFiberDetached([&] {
    start.Wait();
    enter();
    for (int r = 0; r < rounds; ++r) {
      if (ping.Send(std::uint64_t(r)) != ChannelStatus::kOk) ++failures;
      ReceiveResult<std::uint64_t> back = pong.Receive();
      if (!back || *back != std::uint64_t(r) + 1) ++failures;
      if (feed.Send(std::uint64_t(r)) != ChannelStatus::kOk) ++failures;
    }
    leave();
    done.count_down();
  });
  StartFiberDetached([&] {
    start.Wait();
    enter();
    for (int r = 0; r < rounds; ++r) {
      ReceiveResult<std::uint64_t> got = ping.Receive();
      if (!got || pong.Send(*got + 1) != ChannelStatus::kOk) ++failures;
      ReceiveResult<std::uint64_t> from_feed, from_never;
      const SelectResult s =
          SelectFor(1s, ReceiveCase(never, from_never), ReceiveCase(feed, from_feed));
      if (s.index != 1 || !from_feed || *from_feed != std::uint64_t(r)) ++failures;
    }
    leave();
    done.count_down();
  });
  start.Set();
  done.wait();
  EXPECT_EQ(failures.load(), 0);
  return testing::CountedAllocations();
}

TEST(ChannelAllocationTest, SendsReceivesAndSelectsAllocateNothing) {
  if (!testing::CountsAllocations()) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  if (testing::TestStrategy() == "globalfifo") {
    GTEST_SKIP() << "globalfifo's queue is an unbounded std::deque (a baseline, not for "
                    "production): its pushes allocate";
  }
  // The hog monitor off: on a starved machine (CI runs two tests on two cores) it
  // rescues the fibers of a worker descheduled for 10 ms and reports one stuck for a
  // second, and both allocate; this test measures the channels, not a starved runtime.
  gflags::FlagSaver flags;
  FLAGS_fiber_hog_rescue_ms = 0;
  FLAGS_fiber_hog_report_ms = 0;
  ScopedRuntime runtime(2);
  // The warm-up, until a round allocates nothing: the runtime's threads build their
  // per-thread structures on first use (a worker that ends its first fiber, a thread the
  // OS started late on a busy machine). At most 20 rounds: an operation that allocated
  // every time would never warm up, and the count below shows it.
  for (int round = 0; round < 20 && CountAllocations(2000) != 0; ++round) {
  }
  const std::int64_t allocations = CountAllocations(50000);
  EXPECT_EQ(allocations, 0) << allocations << " allocations during 150k channel operations";
}

// The counter counts: a Select of more cases than it keeps on the stack allocates its
// scratch, and the test sees it.
TEST(ChannelAllocationTest, TheCounterSeesAnAllocation) {
  if (!testing::CountsAllocations()) GTEST_SKIP() << "a sanitizer owns malloc in this build";
  Channel<int> c[8];
  Channel<int> ready(1);
  ReceiveResult<int> r[9];
  ASSERT_EQ(ready.TrySend(1), ChannelStatus::kOk);
  testing::StartCountingAllocations();
  const SelectResult s = TrySelect(ReceiveCase(c[0], r[0]), ReceiveCase(c[1], r[1]),
                                   ReceiveCase(c[2], r[2]), ReceiveCase(c[3], r[3]),
                                   ReceiveCase(c[4], r[4]), ReceiveCase(c[5], r[5]),
                                   ReceiveCase(c[6], r[6]), ReceiveCase(c[7], r[7]),
                                   ReceiveCase(ready, r[8]));
  testing::StopCountingAllocations();
  EXPECT_EQ(s.index, 8);
  EXPECT_GE(testing::CountedAllocations(), 1);
}

}  // namespace
}  // namespace spindle
