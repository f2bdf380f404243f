// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_options.h"

#include <sched.h>

#include <fstream>
#include <sstream>

#include "gflags/gflags.h"
#include "runtime/internal/run_queue.h"
#include "runtime/internal/scheduling_group.h"

DEFINE_uint64(fiber_concurrency, 0,
              "Fiber worker threads in all (default 0 = the CPUs in the process's "
              "affinity mask, capped by the cgroup CPU quota). Range [0, 1024]. More "
              "workers than CPUs only adds context switches.");
DEFINE_uint64(fiber_scheduling_group_size, 0,
              "Workers per scheduling group (default 0 = automatic: one group of all "
              "workers below 8, else groups of 8 to 15). Range [0, 64]. Workers of a "
              "group share one run queue; smaller groups contend less but balance "
              "load only through stealing.");
DEFINE_uint64(fiber_run_queue_size, 65536,
              "Capacity of each scheduling group's run queue, in ready fibers (default "
              "65536). A power of two in [2, 2^30]. When a queue is full, producers "
              "wait (with a warning): raise it if that happens.");
DEFINE_string(fiber_scheduling_strategy, "v1",
              "How workers share and wait for work (default v1: one shared queue per "
              "group, at most two spinning workers). Accepted: v1.");
DEFINE_uint64(fiber_worker_spin_time_us, 20,
              "Microseconds an idle worker polls its run queue before sleeping "
              "(default 20). Range [0, 10000]. Longer spins cut wake-up latency (a "
              "futex wake costs ~25-30 us on small VMs) at the price of idle CPU.");

namespace spindle::internal {
namespace {

constexpr std::size_t kMaxConcurrency = 1024;
constexpr std::size_t kMaxSpinTimeUs = 10000;
constexpr std::size_t kAutoGroupMin = 8;
constexpr std::size_t kAutoGroupMax = 15;

std::size_t CgroupCpuQuota() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  const long long limit = std::stoll(quota);
  if (limit <= 0) return 0;
  return static_cast<std::size_t>((limit + period - 1) / period);
}

}  // namespace

RuntimeOptions RuntimeOptionsFromFlags() {
  RuntimeOptions options;
  options.concurrency = FLAGS_fiber_concurrency;
  options.scheduling_group_size = FLAGS_fiber_scheduling_group_size;
  options.run_queue_size = FLAGS_fiber_run_queue_size;
  options.scheduling_strategy = FLAGS_fiber_scheduling_strategy;
  options.spin_time = std::chrono::microseconds(FLAGS_fiber_worker_spin_time_us);
  options.stacks = StackAllocatorOptionsFromFlags();
  return options;
}

std::string ValidateRuntimeOptions(const RuntimeOptions& options) {
  if (options.concurrency > kMaxConcurrency) {
    return "--fiber_concurrency=" + std::to_string(options.concurrency) +
           " is invalid: expected a worker count in [0, " +
           std::to_string(kMaxConcurrency) + "] (0 = automatic)";
  }
  if (options.scheduling_group_size > SchedulingGroup::kMaxWorkers) {
    return "--fiber_scheduling_group_size=" +
           std::to_string(options.scheduling_group_size) +
           " is invalid: expected a size in [0, " +
           std::to_string(SchedulingGroup::kMaxWorkers) + "] (0 = automatic)";
  }
  std::string error = ValidateRunQueueCapacity(options.run_queue_size);
  if (!error.empty()) return error;
  if (options.scheduling_strategy != "v1") {
    return "--fiber_scheduling_strategy=" + options.scheduling_strategy +
           " is invalid: expected one of: v1";
  }
  if (static_cast<std::size_t>(options.spin_time.count()) > kMaxSpinTimeUs) {
    return "--fiber_worker_spin_time_us=" + std::to_string(options.spin_time.count()) +
           " is invalid: expected microseconds in [0, " + std::to_string(kMaxSpinTimeUs) +
           "]";
  }
  return ValidateStackAllocatorOptions(options.stacks);
}

std::size_t DefaultConcurrency() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::size_t cpus = 0;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    cpus = static_cast<std::size_t>(CPU_COUNT(&set));
  }
  if (cpus == 0) cpus = 1;
  const std::size_t quota = CgroupCpuQuota();
  if (quota != 0 && quota < cpus) cpus = quota;
  return cpus;
}

std::vector<std::size_t> ComputeGroupSizes(std::size_t concurrency,
                                           std::size_t group_size) {
  std::vector<std::size_t> sizes;
  if (group_size == 0) {
    if (concurrency < kAutoGroupMin) return {concurrency};
    const std::size_t groups = (concurrency + kAutoGroupMax - 1) / kAutoGroupMax;
    for (std::size_t i = 0; i < groups; ++i) {
      sizes.push_back(concurrency / groups + (i < concurrency % groups ? 1 : 0));
    }
    return sizes;
  }
  for (std::size_t left = concurrency; left > 0;) {
    const std::size_t size = std::min(left, group_size);
    sizes.push_back(size);
    left -= size;
  }
  return sizes;
}

}  // namespace spindle::internal
