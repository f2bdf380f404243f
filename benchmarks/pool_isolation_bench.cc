// Copyright 2026 The Spindle Authors.
//
// pool_isolation_bench [--repetitions=N] [--samples=N] [--hog_ms=N]
//
// What named pools (--fiber_pools) prevent, in figures: a probe fiber that sleeps 1 ms
// in a loop, and how late its wake-ups run (runtime/internal/testing/isolation_probe.h),
//   idle    pools a:1 and b:1 on two CPUs, nothing else running (the baseline);
//   pools   the same, pool b saturated by CPU-bound fibers (2 ms between yields) and a
//           2 s hog, the probe in pool a;
//   shared  one pool of 2 workers, the probe beside the same load.
// Each configuration runs --repetitions times; the medians of p50, p99 and max are
// printed, one line per configuration (microseconds late).

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "gflags/gflags.h"
#include "runtime/internal/testing/isolation_probe.h"
#include "runtime/runtime.h"

DEFINE_uint64(repetitions, 3, "Runs of each configuration (medians are printed)");
DEFINE_uint64(samples, 1000, "Probe sleeps per run");
DEFINE_uint64(hog_ms, 2000, "How long the hog holds its worker");

DECLARE_string(fiber_pools);
DECLARE_uint64(fiber_concurrency);

namespace {

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

void Run(const char* label, const std::string& pools, std::size_t concurrency,
         spindle::testing::IsolationLoad load) {
  std::vector<double> p50, p99, max;
  for (std::uint64_t r = 0; r < FLAGS_repetitions; ++r) {
    FLAGS_fiber_pools = pools;
    FLAGS_fiber_concurrency = concurrency;
    const std::string error = spindle::TryStartRuntime();
    if (!error.empty()) {
      std::fprintf(stderr, "pool_isolation_bench: %s\n", error.c_str());
      std::exit(2);
    }
    const spindle::testing::ProbeFigures figures = spindle::testing::RunIsolationProbe(load);
    spindle::TerminateRuntime();
    p50.push_back(figures.p50_us);
    p99.push_back(figures.p99_us);
    max.push_back(figures.max_us);
  }
  std::printf("%-7s probe wake-up late (us, median of %llu): p50 %8.0f  p99 %8.0f  max %8.0f\n",
              label, static_cast<unsigned long long>(FLAGS_repetitions), Median(p50),
              Median(p99), Median(max));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) {
    std::fprintf(stderr, "pool_isolation_bench: needs two CPUs\n");
    return 2;
  }
  const std::string pinned = "a:1:cpus=" + std::to_string(cpus[0]) +
                             ",b:1:cpus=" + std::to_string(cpus[1]);
  spindle::testing::IsolationLoad load;
  load.samples = FLAGS_samples;
  load.hog = std::chrono::milliseconds(FLAGS_hog_ms);
  load.probe_pool = "a";
  load.load_pool = "b";
  spindle::testing::IsolationLoad idle = load;
  idle.load = false;
  Run("idle", pinned, 3, idle);
  Run("pools", pinned, 3, load);
  spindle::testing::IsolationLoad shared = load;
  shared.probe_pool = "default";
  shared.load_pool = "default";
  Run("shared", "", 2, shared);
  return 0;
}
