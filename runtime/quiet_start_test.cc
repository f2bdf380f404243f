// Copyright 2026 The Spindle Authors.
//
// A library does not write to its host's stderr: a program that never initialized glog
// starts and stops the runtime, runs fibers, sleeps and spawns, and stderr stays empty
// (before, every start printed glog's "Logging before InitGoogleLogging()" warning and
// an INFO line). --fiber_log_layout prints the layout line, once per process and layout.
//
// The tests share one process and glog's once-only warning: they run in this order.

#include <algorithm>
#include <string>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

void StartRunAndStop() {
  StartRuntime();
  const int sum = RunAsFiber([] {
    int total = 0;
    Fiber child([&] {
      this_fiber::SleepFor(std::chrono::milliseconds(1));
      total += 1;
    });
    this_fiber::Yield();
    child.join();
    return total;
  });
  TerminateRuntime();
  EXPECT_EQ(sum, 1);
}

TEST(QuietStartTest, StartingAndStoppingPrintsNothingOnStderr) {
  ::testing::internal::CaptureStderr();
  StartRunAndStop();
  StartRunAndStop();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

TEST(QuietStartTest, LogLayoutPrintsTheLayoutLineOncePerLayout) {
  gflags::FlagSaver saver;
  internal::ForgetPrintedLayoutLinesForTesting();  // an earlier --gtest_repeat round's
  FLAGS_fiber_log_layout = true;
  FLAGS_fiber_concurrency = 2;
  ::testing::internal::CaptureStderr();
  StartRunAndStop();
  StartRunAndStop();  // the same layout: not printed again
  FLAGS_fiber_concurrency = 1;
  StartRunAndStop();  // another layout: printed
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::string first = "Spindle runtime: 1 group, 2 workers,";
  const std::string second = "Spindle runtime: 1 group, 1 worker,";
  EXPECT_EQ(err.find(first), 0u) << err;
  EXPECT_EQ(err.find(first, 1), std::string::npos) << "printed twice:\n" << err;
  EXPECT_NE(err.find("\n" + second), std::string::npos) << err;
  EXPECT_EQ(err.find("InitGoogleLogging"), std::string::npos) << err;
  // Two lines, nothing else.
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
}

}  // namespace
}  // namespace spindle
