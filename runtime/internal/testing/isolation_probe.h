// Copyright 2026 The Spindle Authors.
//
// The pool-isolation probe (issue: named pools keep a health check responsive while
// another pool is saturated): a fiber that sleeps 1 ms in a loop and records how late
// each wake-up runs, beside a load of CPU-bound fibers and one hog. Shared by
// runtime/pools_test.cc (a generous bound) and benchmarks/pool_isolation_bench.cc (the
// figures).

#ifndef SPINDLE_RUNTIME_INTERNAL_TESTING_ISOLATION_PROBE_H_
#define SPINDLE_RUNTIME_INTERNAL_TESTING_ISOLATION_PROBE_H_

#include <chrono>
#include <cstddef>
#include <string>

namespace spindle::testing {

struct IsolationLoad {
  // Where the probe runs and where the load runs (pool names; "default" for the
  // default pool). The same name for both shows what pools prevent.
  std::string probe_pool = "default";
  std::string load_pool = "default";
  bool load = true;                  // false: the idle baseline
  std::size_t cpu_fibers = 16;       // each spins `slice` between yields
  std::chrono::microseconds slice{2000};
  std::chrono::milliseconds hog{2000};  // one fiber that never yields for this long
  std::size_t samples = 1000;        // probe sleeps of 1 ms (during the hog)
};

// How late the probe's wake-ups ran: each sleep of 1 ms measured from before the sleep
// to the probe running again, minus 1 ms, in microseconds.
struct ProbeFigures {
  double p50_us = 0;
  double p99_us = 0;
  double max_us = 0;
  std::size_t samples = 0;
};

// Runs the probe under `load` in the running runtime (from a plain thread) and returns
// its figures once the probe, the load and the hog have ended.
ProbeFigures RunIsolationProbe(const IsolationLoad& load);

}  // namespace spindle::testing

#endif  // SPINDLE_RUNTIME_INTERNAL_TESTING_ISOLATION_PROBE_H_
