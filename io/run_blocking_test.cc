// Copyright 2026 The Spindle Authors.
//
// RunBlocking's bounds: a deadline that passes in the queue (the call never runs), a
// started call that runs to its end past its deadline, a full queue refused at once,
// and TerminateRuntime() naming a hung call. The pool is the process's: each test
// first occupies every pool thread with calls it releases itself, and reads counters
// as differences, so the tests hold in any order and under --gtest_repeat.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/run_blocking.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/latch.h"

DECLARE_uint64(io_blocking_threads);
DECLARE_uint64(io_blocking_queue_limit);
DECLARE_uint64(fiber_terminate_grace_ms);
DECLARE_uint64(fiber_concurrency);
DECLARE_string(fiber_scheduling_strategy);

namespace spindle::io {
namespace {

using spindle::testing::ScopedRuntime;
using std::chrono::milliseconds;

constexpr auto kTestDeadline = std::chrono::seconds(60);

// Keeps every pool thread busy with a call that waits for Release() (2 threads, or
// more if an earlier test started more: threads are never stopped).
class OccupiedPool {
 public:
  OccupiedPool() {
    FLAGS_io_blocking_threads = 2;
    count_ = std::max<std::uint64_t>(2, GetBlockingPoolStats().threads);
    FLAGS_io_blocking_threads = count_;
    for (std::uint64_t i = 0; i < count_; ++i) {
      fibers_.emplace_back([this] {
        RunBlocking([this] { release_.WaitFor(kTestDeadline); });
      });
    }
    CHECK(spindle::testing::WaitFor([&] { return GetBlockingPoolStats().running == count_; }))
        << "the pool's threads did not all take a call";
  }
  ~OccupiedPool() {
    Release();
    for (Fiber& fiber : fibers_) fiber.join();
    FLAGS_io_blocking_threads = 64;
  }
  void Release() { release_.Set(); }

 private:
  std::uint64_t count_ = 0;
  Event release_;
  std::vector<Fiber> fibers_;
};

// A call waiting in the queue when its caller's context is cancelled leaves it with
// Cancelled and never runs; RunBlocking() without a deadline is not interruptible.
TEST(RunBlockingTest, ACallCancelledInTheQueueNeverRuns) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    const std::uint64_t cancelled_before = GetBlockingPoolStats().cancelled;
    std::atomic<bool> ran{false};
    absl::Status status;
    {
      OccupiedPool pool;
      auto context = ExecutionContext::Create();
      Fiber caller([&] {
        ScopedExecutionContext scope(context);
        status = RunBlocking([&] { ran.store(true); }, Clock::now() + std::chrono::hours(1));
      });
      ASSERT_TRUE(spindle::testing::WaitFor([] { return GetBlockingPoolStats().queued == 1; }));
      context->Cancel();
      caller.join();
      EXPECT_EQ(GetBlockingPoolStats().queued, 0u) << "the call stayed queued";
    }
    ASSERT_TRUE(spindle::testing::WaitFor([] { return GetBlockingPoolStats().running == 0; }));
    EXPECT_FALSE(ran.load());
    EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
    EXPECT_EQ(GetBlockingPoolStats().cancelled, cancelled_before + 1);
    // Without a deadline the call waits for its thread, cancelled or not.
    auto cancelled = ExecutionContext::Create();
    cancelled->Cancel();
    ScopedExecutionContext scope(cancelled);
    EXPECT_EQ(RunBlocking([] { return 7; }), 7);
  });
}

TEST(RunBlockingTest, ACallNoThreadTakesBeforeItsDeadlineNeverRuns) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    const std::uint64_t timed_out_before = GetBlockingPoolStats().timed_out;
    std::atomic<bool> ran{false};
    absl::StatusOr<int> result;
    {
      OccupiedPool pool;
      result = RunBlocking(
          [&] {
            ran.store(true);
            return 1;
          },
          Clock::now() + milliseconds(100));
      EXPECT_EQ(GetBlockingPoolStats().queued, 0u) << "the call stayed queued";
    }
    // Every thread is free again and has run whatever was queued: not our call.
    ASSERT_TRUE(spindle::testing::WaitFor([] { return GetBlockingPoolStats().running == 0; }));
    EXPECT_FALSE(ran.load());
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.status().code(), absl::StatusCode::kDeadlineExceeded) << result.status();
    EXPECT_NE(result.status().message().find("--io_blocking_threads"), std::string::npos);
    EXPECT_EQ(GetBlockingPoolStats().timed_out, timed_out_before + 1);
    // A void call times out the same way.
    OccupiedPool again;
    absl::Status status = RunBlocking([&] { ran.store(true); }, Clock::now() + milliseconds(20));
    EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  });
}

TEST(RunBlockingTest, AStartedCallRunsToItsEndPastItsDeadline) {
  ScopedRuntime runtime(2);
  RunAsFiber([] {
    Event started;
    Event release;
    const Deadline deadline = Clock::now() + milliseconds(50);
    absl::StatusOr<std::string> result;
    Fiber caller([&] {
      result = RunBlocking(
          [&] {
            started.Set();
            release.WaitFor(kTestDeadline);
            return std::string("finished");
          },
          deadline);
    });
    ASSERT_TRUE(started.WaitFor(kTestDeadline));
    // Past the deadline while the call runs (an observation window, bounded).
    while (Clock::now() <= deadline) (void)Event().WaitUntil(deadline + milliseconds(1));
    release.Set();
    caller.join();
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(*result, "finished");
    // Exceptions still come back with a deadline.
    EXPECT_THROW((void)RunBlocking([]() -> int { throw std::runtime_error("boom"); },
                                   Clock::now() + kTestDeadline),
                 std::runtime_error);
  });
}

TEST(RunBlockingTest, AFullQueueIsRefusedAtOnceNamingTheFlag) {
  ScopedRuntime runtime(2);
  const std::uint64_t saved_limit = FLAGS_io_blocking_queue_limit;
  RunAsFiber([] {
    const std::uint64_t refused_before = GetBlockingPoolStats().refused;
    std::atomic<int> queued_ran{0};
    OccupiedPool pool;
    FLAGS_io_blocking_queue_limit = 2;
    std::vector<Fiber> queued;
    for (int i = 0; i < 2; ++i) {
      queued.emplace_back([&] { RunBlocking([&] { queued_ran.fetch_add(1); }); });
    }
    ASSERT_TRUE(spindle::testing::WaitFor([] { return GetBlockingPoolStats().queued == 2; }));
    // With a deadline far away: refused at once, not queued.
    absl::StatusOr<int> refused = RunBlocking([] { return 1; }, Clock::now() + kTestDeadline);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(refused.status().message().find("--io_blocking_queue_limit=2"),
              std::string::npos)
        << refused.status();
    // Without a deadline: thrown, with the same message.
    try {
      RunBlocking([] {});
      ADD_FAILURE() << "a call past the queue limit was accepted";
    } catch (const std::system_error& error) {
      EXPECT_EQ(error.code(), std::errc::resource_unavailable_try_again);
      EXPECT_NE(std::string(error.what()).find("--io_blocking_queue_limit=2"),
                std::string::npos)
          << error.what();
    }
    EXPECT_EQ(GetBlockingPoolStats().refused, refused_before + 2);
    // The queued calls were kept and run once threads free up.
    pool.Release();
    for (Fiber& fiber : queued) fiber.join();
    EXPECT_EQ(queued_ran.load(), 2);
  });
  FLAGS_io_blocking_queue_limit = saved_limit;
}

TEST(RunBlockingFlagTest, RejectsAnOutOfRangeQueueLimit) {
  EXPECT_TRUE(gflags::SetCommandLineOption("io_blocking_queue_limit", "0").empty());
  EXPECT_TRUE(gflags::SetCommandLineOption("io_blocking_queue_limit", "16777217").empty());
  EXPECT_FALSE(gflags::SetCommandLineOption("io_blocking_queue_limit", "16384").empty());
}

// A fiber parked behind a hung blocking call: TerminateRuntime() says so, with the
// call's age, instead of waiting in silence.
TEST(RunBlockingTest, TerminateRuntimeNamesAHungBlockingCall) {
  const spindle::testing::TestWatchdog watchdog(std::chrono::seconds(120),
                                                "TerminateRuntimeNamesAHungBlockingCall");
  FLAGS_fiber_concurrency = 2;
  FLAGS_fiber_scheduling_strategy = spindle::testing::TestStrategy();
  FLAGS_fiber_terminate_grace_ms = 50;
  StartRuntime();
  spindle::testing::LogCollector sink;
  Event started;
  auto release = std::make_shared<Event>();
  StartFiberDetached([&started, release] {
    RunBlocking([&] {
      started.Set();
      release->WaitFor(kTestDeadline);
    });
  });
  ASSERT_TRUE(started.WaitFor(kTestDeadline));
  std::thread terminator([] { TerminateRuntime(); });
  const bool named = spindle::testing::WaitFor(
      [&] { return sink.text().find("RunBlocking: 1 calls running (the longest for") !=
                   std::string::npos; },
      std::chrono::seconds(60));
  release->Set();
  terminator.join();
  FLAGS_fiber_terminate_grace_ms = 10000;
  FLAGS_fiber_concurrency = 0;
  EXPECT_TRUE(named) << sink.text();
  EXPECT_NE(sink.text().find("waiting on run_blocking"), std::string::npos) << sink.text();
}

}  // namespace
}  // namespace spindle::io
