// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_
#define SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "fiber/internal/stack_allocator.h"
#include "runtime/internal/group_layout.h"
#include "runtime/internal/base/topology.h"
#include "gflags/gflags_declare.h"

DECLARE_uint64(fiber_concurrency);
DECLARE_uint64(fiber_scheduling_group_size);
DECLARE_uint64(fiber_run_queue_size);
DECLARE_string(fiber_scheduling_strategy);
DECLARE_uint64(fiber_worker_spin_time_us);
DECLARE_string(fiber_numa_aware);
DECLARE_string(fiber_worker_accessible_cpus);
DECLARE_bool(fiber_worker_disallow_cpu_migration);
DECLARE_string(fiber_numa_topology_override);
DECLARE_uint64(fiber_work_stealing_ratio);
DECLARE_uint64(fiber_cross_numa_work_stealing_ratio);
DECLARE_uint64(fiber_terminate_grace_ms);
DECLARE_int32(fiber_dump_signal);
DECLARE_uint64(fiber_hog_report_ms);
DECLARE_uint64(fiber_deadlock_report_s);
DECLARE_uint64(fiber_hog_rescue_ms);
DECLARE_uint64(fiber_chaos_seed);
DECLARE_uint64(fiber_ready_latency_sample_period);
DECLARE_bool(fiber_log_layout);
DECLARE_string(fiber_pools);
DECLARE_uint64(fiber_max_fibers);

namespace spindle::internal {

// The most workers in all (--fiber_concurrency, and the pools' workers together).
inline constexpr std::size_t kMaxConcurrency = 1024;
// The most pools --fiber_pools may declare (the default pool included).
inline constexpr std::size_t kMaxFiberPools = 16;
// The largest live-fiber cap (max_fibers= in --fiber_pools, --fiber_max_fibers).
inline constexpr std::size_t kMaxFiberCap = std::size_t{1} << 32;

// One pool of --fiber_pools, as written (ParseFiberPools()). A plain value.
struct PoolOptions {
  std::string name;
  std::size_t workers = 0;  // 0: auto (the default pool only)
  std::string cpus;         // a CPU list; "": every accessible CPU
  std::size_t max_fibers = 0;  // live fibers admitted by the TryStart forms; 0: no cap
  std::string strategy;     // "": --fiber_scheduling_strategy
};

// Parses --fiber_pools's value `text` into `pools`, the default pool first (implied as
// default:auto with --fiber_max_fibers' cap when `text` does not declare it). Returns
// "" or the first problem, naming the flag, the pool and the accepted values. See the
// flag's help (runtime_options.cc) for the syntax.
std::string ParseFiberPools(const std::string& text, std::size_t default_max_fibers,
                            std::vector<PoolOptions>* pools);

// Everything StartRuntime() reads from flags, validated together.
struct RuntimeOptions {
  std::size_t concurrency = 0;          // 0: DefaultConcurrency()
  std::size_t scheduling_group_size = 0;  // 0: automatic
  std::size_t run_queue_size = 65536;
  std::string scheduling_strategy = "v1";
  std::chrono::microseconds spin_time{20};
  StackAllocatorOptions stacks;
  std::string numa_aware = "auto";     // auto | true | false
  std::string accessible_cpus;         // a CPU list; "": the affinity mask
  bool disallow_cpu_migration = false;
  std::string numa_topology_override;  // "": the real machine
  // Idle rounds per steal attempt, same node. 0 (no same-node stealing) is for
  // internal baselines only: the flag refuses it.
  std::size_t work_stealing_ratio = 16;
  std::size_t cross_numa_work_stealing_ratio = 0;  // across nodes; 0 = never
  // TerminateRuntime() logs and dumps the fibers it still waits for after this, and
  // again after each further such interval; 0 = never.
  std::chrono::milliseconds terminate_grace{10000};
  int dump_signal = 0;  // 0 = no signal dumps the fibers
  // The hog monitor (hog_monitor.h): a fiber that holds its worker this long without
  // switching is reported once; 0 = never.
  std::chrono::milliseconds hog_report{1000};
  // ... and after this long the fibers queued behind it move to its siblings; 0 = never.
  std::chrono::milliseconds hog_rescue{10};
  // The deadlock report (deadlock_report.h): cycles of fibers that have waited this
  // long on each other's locks; 0 = off.
  std::chrono::seconds deadlock_report{0};
  // The scheduling trace by flag (trace_export.h, TraceWindowThread): empty = none.
  std::string trace_file;
  std::chrono::seconds trace_after{0};
  std::chrono::seconds trace_for{5};
  std::uint64_t trace_records_per_thread = 65536;
  std::uint64_t chaos_seed = 0;  // chaos scheduling (chaos.h); 0 = off
  // One readiness in this many is timed (a power of two; SchedulingGroup).
  std::uint64_t ready_latency_sample_period = 64;
  // Write the layout line to stderr at start (once per process and layout).
  bool log_layout = false;
  // --fiber_pools, as written ("": only the default pool), and the default pool's cap
  // when that does not set one.
  std::string pools;
  std::size_t max_fibers = 0;
};

// One pool of the layout: its groups are RuntimeLayout::groups[first_group,
// first_group + group_count). A plain value.
struct PoolPlan {
  std::string name;
  std::size_t workers = 0;
  std::size_t max_fibers = 0;  // 0: no cap
  std::string strategy;        // resolved: never ""
  std::string cpus;            // as declared; "": every accessible CPU
  std::size_t first_group = 0;
  std::size_t group_count = 0;
};

// What the options resolve to on this machine: the topology the runtime uses and its
// groups. A plain value.
struct RuntimeLayout {
  Topology topology;               // accessible CPUs grouped by node (real or fake)
  std::vector<int> affinity_cpus;  // the process's real affinity mask at start
  bool numa_aware = false;
  std::vector<GroupPlan> groups;  // pool by pool, in pool order
  std::vector<PoolPlan> pools;    // the default pool first
};

RuntimeOptions RuntimeOptionsFromFlags();

// The first problem found, as a message naming the flag, the value and the accepted
// range; "" when every option is valid.
std::string ValidateRuntimeOptions(const RuntimeOptions& options);

// Resolves `options` against this machine (or the fake topology they name) into
// `layout`. Returns "" or the first problem, naming the flag, the value and what is
// accepted; `layout` is then unspecified.
std::string ComputeRuntimeLayout(const RuntimeOptions& options, RuntimeLayout* layout);

// CPUs this process may use: the affinity mask, capped by the cgroup CPU quota
// (CgroupCpuQuota()) when one is set. At least 1.
std::size_t DefaultConcurrency();

// The CPU limit of this process's cgroup in whole CPUs (rounded up), or 0 if none: the
// smallest quota over its cgroup and their ancestors, from cgroup v2's cpu.max or cgroup
// v1's cpu.cfs_quota_us / cpu.cfs_period_us (hybrid systems: both, the smaller wins).
std::size_t CgroupCpuQuota();
// The same, for cgroup file systems mounted at `cgroup_root` (/sys/fs/cgroup) and
// `proc_self_cgroup`, the text of /proc/self/cgroup. For tests.
std::size_t CgroupCpuQuota(const std::string& cgroup_root, const std::string& proc_self_cgroup);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RUNTIME_OPTIONS_H_
