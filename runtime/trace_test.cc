// Copyright 2026 The Spindle Authors.
//
// runtime/trace.h's API: bad options and a second recording are refused with a message,
// a stop without a recording writes nothing, and the flags' ranges are checked. (A whole
// recorded workload is tools/trace:trace_test.)

#include "runtime/trace.h"

#include <chrono>
#include <sstream>
#include <string>

#include "fiber/fiber.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

TEST(TraceTest, BadOptionsAreRefusedNamingTheValueAndTheRange) {
  TraceOptions options;
  options.records_per_thread = 1023;
  EXPECT_EQ(StartTracing(options),
            "TraceOptions::records_per_thread=1023 is invalid: expected records in [1024, "
            "16777216]");
  options.records_per_thread = (std::size_t{1} << 24) + 1;
  EXPECT_NE(StartTracing(options).find("is invalid"), std::string::npos);
  std::ostringstream out;
  EXPECT_FALSE(StopTracing(out).recorded);  // nothing was started
  EXPECT_TRUE(out.str().empty());
}

TEST(TraceTest, OneRecordingAtATimeAndItsRunsAreCounted) {
  testing::ScopedRuntime runtime(2);
  ASSERT_EQ(StartTracing(), "");
  EXPECT_EQ(StartTracing(),
            "a scheduling trace is being recorded already (StopTracing() ends it)");
  Fiber([] {}).join();
  std::ostringstream out;
  const TraceSummary summary = StopTracing(out);
  EXPECT_TRUE(summary.recorded);
  EXPECT_GE(summary.spawns, 1u);
  EXPECT_GE(summary.runs, 1u);
  EXPECT_FALSE(summary.truncated);
  EXPECT_EQ(out.str().rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0), 0u);
  // Stopped: a new recording may start.
  ASSERT_EQ(StartTracing(), "");
  std::ostringstream again;
  EXPECT_TRUE(StopTracing(again).recorded);
}

TEST(TraceTest, TheFlagsAreRangeChecked) {
  internal::RuntimeOptions options;
  options.trace_file = "/tmp/x.json";
  options.trace_for = std::chrono::seconds(0);
  EXPECT_EQ(internal::ValidateRuntimeOptions(options),
            "--fiber_trace_for_s=0 is invalid: expected seconds in [1, 3600]");
  options.trace_for = std::chrono::seconds(5);
  options.trace_after = std::chrono::seconds(86401);
  EXPECT_EQ(internal::ValidateRuntimeOptions(options),
            "--fiber_trace_after_s=86401 is invalid: expected seconds in [0, 86400]");
  options.trace_after = std::chrono::seconds(0);
  options.trace_records_per_thread = 100;
  EXPECT_EQ(internal::ValidateRuntimeOptions(options),
            "--fiber_trace_records_per_thread=100 is invalid: expected records in [1024, "
            "16777216]");
  options.trace_records_per_thread = 65536;
  EXPECT_EQ(internal::ValidateRuntimeOptions(options), "");
}

}  // namespace
}  // namespace spindle
