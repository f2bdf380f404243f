// Copyright 2026 The Spindle Authors.

#include "fiber/serial_queue.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/metrics.h"
#include "sync/event.h"

namespace spindle {
namespace {

using testing::Scaled;
using testing::ScopedRuntime;
using testing::WaitFor;

SerialQueue::Options Named(std::string name, std::size_t max_batch = 256) {
  SerialQueue::Options options;
  options.name = std::move(name);
  options.max_batch = max_batch;
  return options;
}

class SerialQueueTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, SerialQueueTest, testing::WorkerCounts(),
                         testing::WorkerCountName);

// Submitters (fibers and plain threads) each submit numbered tasks: no two tasks ever
// run at once, each submitter's tasks run in the order it submitted them, and every
// task runs exactly once.
TEST_P(SerialQueueTest, TasksRunOneAtATimeInSubmissionOrder) {
  ScopedRuntime runtime(GetParam());
  constexpr int kFiberSubmitters = 6, kThreadSubmitters = 2;
  constexpr int kSubmitters = kFiberSubmitters + kThreadSubmitters;
  const int per = static_cast<int>(Scaled(5000));
  std::vector<int> next(kSubmitters, 0);  // touched by the tasks only: they never overlap
  std::atomic<int> inside{0}, overlaps{0}, disorders{0};
  {
    SerialQueue queue(Named("order", 16));
    auto submit_all = [&](int s) {
      for (int i = 0; i < per; ++i) {
        ASSERT_TRUE(queue
                        .Submit([&, s, i] {
                          if (inside.fetch_add(1) != 0) ++overlaps;
                          if (next[s] != i) ++disorders;
                          next[s] = i + 1;
                          inside.fetch_sub(1);
                        })
                        .ok());
      }
    };
    std::vector<Fiber> fibers;
    for (int s = 0; s < kFiberSubmitters; ++s) fibers.emplace_back([&, s] { submit_all(s); });
    std::vector<std::thread> threads;
    for (int s = kFiberSubmitters; s < kSubmitters; ++s) {
      threads.emplace_back([&, s] { submit_all(s); });
    }
    for (Fiber& f : fibers) f.join();
    for (std::thread& t : threads) t.join();
    queue.Join();
    EXPECT_EQ(queue.submitted(), std::uint64_t(kSubmitters) * per);
    EXPECT_EQ(queue.completed(), queue.submitted());
    EXPECT_EQ(queue.failed(), 0u);
    EXPECT_LE(queue.batches(), queue.completed());
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(disorders.load(), 0);
  for (int s = 0; s < kSubmitters; ++s) EXPECT_EQ(next[s], per) << "submitter " << s;
}

// Tasks that pile up while one runs are taken as one batch.
TEST(SerialQueueBatchTest, WaitingTasksRunAsABatch) {
  ScopedRuntime runtime(2);
  SerialQueue queue;
  Event release;
  std::atomic<int> ran{0};
  ASSERT_TRUE(queue.Submit([&] { release.Wait(); }).ok());
  ASSERT_TRUE(WaitFor([&] { return queue.batches() == 1; }));
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(queue.Submit([&] { ++ran; }).ok());
  release.Set();
  queue.Join();
  EXPECT_EQ(ran.load(), 100);
  EXPECT_EQ(queue.batches(), 2u) << "the 100 waiting tasks were not taken at once";
}

// A failed task (a non-OK Status, or a throw) is reported and counted; the tasks after
// it still run.
TEST(SerialQueueFailureTest, FailuresAreReportedNotSwallowed) {
  ScopedRuntime runtime(2);
  std::vector<std::string> reports;  // written by the queue's fiber only
  std::atomic<int> ran{0};
  {
    SerialQueue::Options options = Named("failing");
    options.on_failure = [&](const absl::Status& s) {
      reports.push_back(std::string(s.message()));
    };
    SerialQueue queue(std::move(options));
    ASSERT_TRUE(queue.Submit(SerialQueue::Task([] { return absl::DataLossError("bad"); })).ok());
    ASSERT_TRUE(queue.Submit([] { throw std::runtime_error("boom"); }).ok());
    ASSERT_TRUE(queue.Submit([&] { ++ran; }).ok());
    queue.Join();
    EXPECT_EQ(queue.failed(), 2u);
    EXPECT_EQ(queue.completed(), 3u);
  }
  EXPECT_EQ(ran.load(), 1);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0], "bad");
  EXPECT_NE(reports[1].find("boom"), std::string::npos) << reports[1];
}

// After Stop(), a submission is refused with a message naming the queue, and the task
// is not run; the tasks before it still run.
TEST(SerialQueueStopTest, AStoppedQueueRefusesAndDrains) {
  ScopedRuntime runtime(2);
  std::atomic<int> ran{0};
  SerialQueue queue(Named("conn-7 writes"));
  Event release;
  ASSERT_TRUE(queue.Submit([&] { release.Wait(); }).ok());
  ASSERT_TRUE(queue.Submit([&] { ++ran; }).ok());
  queue.Stop();
  const absl::Status refused = queue.Submit([&] { ran += 100; });
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.message().find("conn-7 writes"), std::string::npos) << refused;
  release.Set();
  queue.Join();
  EXPECT_EQ(ran.load(), 1);
}

// An idle queue holds no fiber: once its tasks have run, the runtime's live fibers are
// back to what they were.
TEST(SerialQueueIdleTest, AnIdleQueueKeepsNoFiber) {
  ScopedRuntime runtime(2);
  const std::uint64_t before = GetRuntimeMetrics().live_fibers;
  SerialQueue queue;
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(queue.Submit([&] { ++ran; }).ok());
  ASSERT_TRUE(WaitFor([&] { return ran.load() == 10; }));
  EXPECT_TRUE(WaitFor([&] { return GetRuntimeMetrics().live_fibers == before; }))
      << GetRuntimeMetrics().live_fibers << " live fibers, " << before << " before";
  // It starts again on the next task.
  ASSERT_TRUE(queue.Submit([&] { ++ran; }).ok());
  queue.Join();
  EXPECT_EQ(ran.load(), 11);
}

TEST(SerialQueueDeathTest, JoinFromItsOwnTaskIsAnError) {
  // Re-executes the binary: the test's process already has threads (TSan refuses a fork
  // of a threaded process, and it is unsafe anyway).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        ScopedRuntime runtime(1);
        SerialQueue queue(Named("self"));
        Event never;
        SerialQueue* q = &queue;
        ASSERT_TRUE(queue.Submit([q] { q->Join(); }).ok());
        never.Wait();
      },
      "would wait for itself");
}

}  // namespace
}  // namespace spindle
