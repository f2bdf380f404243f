// Copyright 2026 The Spindle Authors.
//
// Running a model: a Relacy test suite over the real protocol code (built against
// Relacy through atomic.h), explored with the search that the flags choose.
//
//   --model_search=random (default): --model_iterations random interleavings, the same
//       ones on every run (Relacy's scheduler is seeded by the iteration number);
//   --model_search=bound: every interleaving with at most --model_context_bound
//       preemptions (a thread switched away from while it could have gone on);
//   --model_search=full: every interleaving (small models only).
//
// A model is a Relacy test_suite: before() builds the protocol's objects (or a
// constructor does), thread(i) runs thread i's part, after() checks what must hold
// at the end (every queued item taken exactly once, and so on). A lost wake-up is a
// thread parked forever, which Relacy reports as a deadlock, with the trace of the
// interleaving that led to it. Relacy's assertion inside a model: RL_ASSERT.
//
// Thread-safety: models run one at a time, on the calling thread (Relacy switches
// between the model's threads as fibers).

#ifndef SPINDLE_FIBER_INTERNAL_MODEL_TESTING_H_
#define SPINDLE_FIBER_INTERNAL_MODEL_TESTING_H_

#include <string>

#include "fiber/internal/atomic.h"
#include "gtest/gtest.h"

namespace spindle::internal::testing {

// The search the flags choose, with `default_iterations` for the random search when
// --model_iterations is 0 (its default): each model sizes its own CI run.
rl::test_params ModelParams(rl::iteration_t default_iterations);

// What a run found, for the test's message: Relacy's verdict and the iteration.
std::string DescribeModelRun(const rl::test_params& params);

// Runs `simulate` in a child process and returns what it returned, with the child's
// verdict and iteration copied into `params`. A model that fails is abandoned by
// Relacy mid-run, with its threads' objects neither destroyed nor freed, which leaves
// the process unfit for the next model: so each model runs in a process of its own.
bool RunInChild(rl::test_params& params, bool (*simulate)(rl::test_params&));

// Runs model `Suite` and returns whether every explored interleaving passed (Relacy has
// printed the failing one's trace otherwise).
template <class Suite>
bool RunModel(rl::test_params& params) {
  return RunInChild(params, [](rl::test_params& p) {
    ModelClockNs() = 1;
    return rl::simulate<Suite>(p);
  });
}

// Runs model `Model` with the flags' search (`default_iterations` for the random one,
// as in ModelParams()) and fails the calling test, with Relacy's verdict, unless every
// explored interleaving passed.
template <class Model>
void ExpectModelHolds(rl::iteration_t default_iterations) {
  rl::test_params params = ModelParams(default_iterations);
  EXPECT_TRUE(RunModel<Model>(params)) << DescribeModelRun(params);
}

}  // namespace spindle::internal::testing

#endif  // SPINDLE_FIBER_INTERNAL_MODEL_TESTING_H_
