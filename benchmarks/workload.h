// Copyright 2026 The Spindle Authors.
//
// The workloads of spindle_bench: each is a name, a one-line description, the runtime
// shape it needs, and a function that runs it once at a given scale, checks its own
// result and returns its measurements.
#ifndef SPINDLE_BENCHMARKS_WORKLOAD_H_
#define SPINDLE_BENCHMARKS_WORKLOAD_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace spindle {
namespace bench {

// One measurement of one run of a workload.
struct Metric {
  std::string name;  // "per_fiber", "wall", ...
  double value;
  std::string unit;  // "ns", "us", "ms", "s", "KiB", ...
};

// What a workload needs of the runtime. 0 keeps the value of the command line's
// --fiber_concurrency / --fiber_scheduling_group_size; other values replace it while
// the workload runs (the ping-pong needs two groups of one worker each, for example).
struct RuntimeShape {
  std::uint64_t concurrency = 0;
  std::uint64_t scheduling_group_size = 0;
};

// Runs the workload once, with its sizes multiplied by `scale`, inside a started
// runtime and on a plain thread. A wrong result calls Fail() and does not return.
using RunFunction = std::vector<Metric> (*)(double scale);

struct Workload {
  const char* name;
  const char* description;  // one line, for --help and docs/performance.md
  RuntimeShape shape;
  RunFunction run;
  // Run each repetition in a forked child with a runtime of its own. For a workload
  // that measures memory: the stack pool never gives memory back, so in one process
  // every repetition after the first would reuse the stacks the earlier ones touched.
  bool own_process = false;
};

// Every workload, in the order spindle_bench runs them. parked_memory comes first: its
// forked children must start from a process whose stack pool is still empty.
const std::vector<Workload>& AllWorkloads();

// Reports that `workload` computed a wrong result, as "spindle_bench: workload
// <workload> failed: <message>" on stderr, and exits the process with status 1.
[[noreturn]] void Fail(const std::string& workload, const std::string& message);

// `base` times `scale`, rounded, and at least `min`.
std::int64_t Scaled(std::int64_t base, double scale, std::int64_t min = 1);

// A wall-clock stopwatch started at construction.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

// CPU time of the whole process (every thread), in seconds.
double ProcessCpuSeconds();

// The process's resident set size, in bytes (from /proc/self/statm; 0 if unreadable).
std::int64_t ResidentBytes();

// The run functions, one per workload (scheduler_workloads.cc, fairness_workloads.cc,
// sync_workloads.cc, app_workloads.cc, channel_workloads.cc).
std::vector<Metric> RunSpawnJoin(double scale);
std::vector<Metric> RunYield(double scale);
std::vector<Metric> RunPingPong(double scale);
std::vector<Metric> RunSkynet(double scale);
std::vector<Metric> RunFib(double scale);
std::vector<Metric> RunMutex(double scale);
std::vector<Metric> RunSleep(double scale);
std::vector<Metric> RunTimerChurn(double scale);
std::vector<Metric> RunDeadlineWait(double scale);
std::vector<Metric> RunParkedMemory(double scale);
std::vector<Metric> RunMergeSort(double scale);
std::vector<Metric> RunSingleSpawner(double scale);
std::vector<Metric> RunSlowThread(double scale);
std::vector<Metric> RunDifferentSpawners(double scale);
std::vector<Metric> RunFairness(double scale);
std::vector<Metric> RunLocality(double scale);
std::vector<Metric> RunPhoneFactory(double scale);
std::vector<Metric> RunChanPingPong(double scale);
std::vector<Metric> RunChanFanIn(double scale);
std::vector<Metric> RunChanSelect(double scale);

}  // namespace bench
}  // namespace spindle

#endif  // SPINDLE_BENCHMARKS_WORKLOAD_H_
