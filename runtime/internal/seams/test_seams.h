// Copyright 2026 The Spindle Authors.
//
// Test seams, compiled in only by a build setting. Chaos scheduling (chaos.h) and the
// scheduler's test points (scheduling_strategy.h: SchedulerTestPoint and
// DisableSleepRecheckForTesting; v1's stalled push; the TimerWorker's hooks) exist only
// in builds with --define=spindle_test_seams=1: `--config=seams` (.bazelrc), which the
// asan and tsan configs include. Every other build, `-c opt` among them, carries none of them: no
// load, no branch, no symbol (//benchmarks:test_seams_symbols_test checks
// spindle_bench's symbol table both ways).
//
// How a seam is written: its definitions sit under `#if SPINDLE_HAS_TEST_SEAMS`, its
// declarations stay, and every call site is inside `if constexpr (kTestSeams)`. A
// function named only in a discarded statement needs no definition (C++17
// [basic.def.odr]), so a build without seams links without them at every optimization
// level, and the compiler still type-checks the seam's call sites in every build.
//
// Tests that need a seam skip themselves (GTEST_SKIP) or are not built
// (spindle_cc_test's chaos twins, bazel/testing.bzl) without it; CI runs the whole
// suite with and without (.ci/run).

#ifndef SPINDLE_RUNTIME_INTERNAL_TEST_SEAMS_H_
#define SPINDLE_RUNTIME_INTERNAL_TEST_SEAMS_H_

#if defined(SPINDLE_TEST_SEAMS) && SPINDLE_TEST_SEAMS
#define SPINDLE_HAS_TEST_SEAMS 1
#else
#define SPINDLE_HAS_TEST_SEAMS 0
#endif

namespace spindle::internal {

// Whether this build carries the test seams (see above).
inline constexpr bool kTestSeams = SPINDLE_HAS_TEST_SEAMS != 0;

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_TEST_SEAMS_H_
