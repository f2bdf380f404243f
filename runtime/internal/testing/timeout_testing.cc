// Copyright 2026 The Spindle Authors.

#include "runtime/internal/testing/timeout_testing.h"

namespace spindle::testing {
namespace {

// Every test binary that links this library (every one that starts a runtime) dumps its
// fibers at 90% of Bazel's TEST_TIMEOUT rather than dying silently when Bazel kills it.
const bool kWatchdog =
    (::testing::AddGlobalTestEnvironment(new BazelTimeoutWatchdog), true);  // gtest owns it

}  // namespace
}  // namespace spindle::testing
