// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_
#define SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "fiber/internal/stack_allocator.h"
#include "gflags/gflags_declare.h"

DECLARE_uint64(fiber_concurrency);
DECLARE_uint64(fiber_scheduling_group_size);
DECLARE_uint64(fiber_run_queue_size);
DECLARE_string(fiber_scheduling_strategy);
DECLARE_uint64(fiber_worker_spin_time_us);

namespace spindle::internal {

// Everything StartRuntime() reads from flags, validated together.
struct RuntimeOptions {
  std::size_t concurrency = 0;          // 0: DefaultConcurrency()
  std::size_t scheduling_group_size = 0;  // 0: automatic
  std::size_t run_queue_size = 65536;
  std::string scheduling_strategy = "v1";
  std::chrono::microseconds spin_time{20};
  StackAllocatorOptions stacks;
};

RuntimeOptions RuntimeOptionsFromFlags();

// The first problem found, as a message naming the flag, the value and the accepted
// range; "" when every option is valid.
std::string ValidateRuntimeOptions(const RuntimeOptions& options);

// CPUs this process may use: the affinity mask, capped by the cgroup CPU quota
// (cpu.max, rounded up) when one is set. At least 1.
std::size_t DefaultConcurrency();

// The number of workers in each scheduling group for `concurrency` workers.
// `group_size` 0 is automatic: one group of all workers when there are fewer than 8;
// otherwise as few groups as keep each at most 15 workers, sized evenly (so each has
// 8 to 15). An explicit size is honoured: groups of that size, the last one smaller.
std::vector<std::size_t> ComputeGroupSizes(std::size_t concurrency, std::size_t group_size);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_
