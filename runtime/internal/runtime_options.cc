// Copyright 2026 The Spindle Authors.

#include "runtime/internal/runtime_options.h"

#include <sched.h>
#include <sys/stat.h>
#include <signal.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fiber/internal/trace.h"
#include "gflags/gflags.h"
#include "runtime/internal/queues/run_queue.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/internal/strategies/scheduling_strategy.h"
#include "runtime/internal/strategies/strategy_registry.h"

DEFINE_uint64(fiber_concurrency, 0,
              "Fiber worker threads in all (default 0 = the CPUs in the process's "
              "affinity mask, capped by the cgroup CPU quota: v2 cpu.max or v1 "
              "cpu.cfs_quota_us, rounded up). Range [0, 1024]. More "
              "workers than CPUs only adds context switches.");
DEFINE_uint64(fiber_scheduling_group_size, 0,
              "Workers per scheduling group (default 0 = automatic: one group of all "
              "workers below 8, else groups of 8 to 15). Range [0, 64]. Workers of a "
              "group share one run queue; smaller groups contend less but balance "
              "load only through stealing.");
DEFINE_uint64(fiber_run_queue_size, 65536,
              "Capacity of each scheduling group's run queue, in ready fibers (default "
              "65536). A power of two in [2, 2^30]. When a queue is full, plain threads "
              "wait for room and the runtime's threads spill to an overflow list, both "
              "counted (metrics run_queue_full_waits, run_queue_spills): raise it if "
              "they keep growing.");
DEFINE_string(fiber_scheduling_strategy, "v2",
              "How workers share and wait for work (default v2). Accepted: v1 (one "
              "shared queue per group, at most two spinning workers), v2 (a local queue "
              "and a runnext slot per worker, a global queue per group, stealing half "
              "of a sibling's queue, a notifier that wakes a sleeper only when nobody "
              "searches), relaxed (seed 001's relaxed-FIFO queue: small FIFO lists, "
              "push to a random one, pop the older of two heads, the same notifier), "
              "globalfifo (seed 000's baseline: one queue per group under a mutex; for "
              "comparison, not production).");
DEFINE_uint64(fiber_worker_spin_time_us, 20,
              "Microseconds an idle worker polls its run queue before sleeping "
              "(default 20). Range [0, 10000]. Longer spins cut wake-up latency (a "
              "futex wake costs ~25-30 us on small VMs) at the price of idle CPU.");

DEFINE_string(fiber_numa_aware, "auto",
              "Place scheduling groups on NUMA nodes (default auto = yes when the "
              "accessible CPUs span more than one node). Accepted: auto, true, false. "
              "false really disables it: groups may then run on every accessible CPU.");
DEFINE_string(fiber_worker_accessible_cpus, "",
              "CPUs the workers may run on, as a list such as 0-4,6 (default \"\" = the "
              "process's affinity mask). Every CPU must be in the affinity mask (or in "
              "--fiber_numa_topology_override when that is set).");
DEFINE_bool(fiber_worker_disallow_cpu_migration, false,
            "Pin each worker to one CPU of its group's CPUs, in turn (default false: a "
            "worker may run on any CPU of its group).");
DEFINE_string(fiber_numa_topology_override, "",
              "A fake NUMA topology for tests and experiments, NODE:CPULIST[;...] such "
              "as 0:0-3;1:4-7 (default \"\" = the real machine from libnuma). Affinity "
              "is applied only to the CPUs this machine really has; memory is not bound.");
DEFINE_uint64(fiber_work_stealing_ratio, 16,
              "An idle worker tries to steal from each other group on its NUMA node "
              "once every this many idle rounds (default 16; 0 = never steal between "
              "groups of a node, as seed 003's steal_every_n). Range [0, 1048576].");
DEFINE_uint64(fiber_cross_numa_work_stealing_ratio, 0,
              "Like --fiber_work_stealing_ratio, for groups on other NUMA nodes "
              "(default 0 = never steal across nodes). Range [0, 1048576].");

DEFINE_uint64(fiber_terminate_grace_ms, 10000,
              "Milliseconds TerminateRuntime() waits for the remaining fibers before it "
              "logs how many are left and dumps them (then again at each further such "
              "interval until they finish). Default 10000; range [0, 86400000], 0 = "
              "never log.");
DEFINE_int32(fiber_dump_signal, 0,
             "A signal number that makes the runtime write the fiber dump (DumpFibers()) "
             "to stderr, e.g. 12 for SIGUSR2 (default 0 = none). Range [0, 64]; "
             "SIGKILL, SIGSTOP and the synchronous fault signals (SIGSEGV, SIGBUS, "
             "SIGFPE, SIGILL) are refused, and SIGURG (23) while --fiber_hog_report_ms "
             "is on (it reads a hog's stack). The dump runs on a runtime thread, not in "
             "the handler.");

DEFINE_uint64(fiber_hog_report_ms, 1000,
              "A fiber that runs this many milliseconds without switching (it computes, "
              "or blocks its thread in a system call) is reported once as a warning with "
              "its id, worker and stack, read by a SIGURG sent to that worker's thread, "
              "and counted in spindle_hogs_total. Spindle does not preempt fibers. "
              "Default 1000; range [0, 3600000], 0 = never report.");
DEFINE_uint64(fiber_deadlock_report_s, 0,
              "When fibers have waited this many seconds on Spindle Mutexes or "
              "SharedMutexes (exclusive) that they hold in a cycle (fiber 12 waits for a "
              "lock fiber 15 holds, which waits for one fiber 12 holds), the cycle is "
              "reported once as an error with each fiber's stack, and counted in "
              "spindle_deadlocks_total. A thread scans the parked fibers every 0.5 s "
              "while it is on. Default 0 (off); range [0, 86400].");
DEFINE_string(fiber_trace_file, "",
              "Record the scheduling trace (runtime/trace.h) into this file as Chrome "
              "trace-event JSON (Perfetto, chrome://tracing; "
              "tools/trace/trace_timeline.py draws it): --fiber_trace_for_s seconds, "
              "starting --fiber_trace_after_s after the runtime starts. Empty (the "
              "default): no trace; else a writable file path.");
DEFINE_uint64(fiber_trace_after_s, 0,
              "With --fiber_trace_file: seconds from the runtime's start to the trace's. "
              "Default 0; range [0, 86400].");
DEFINE_uint64(fiber_trace_for_s, 5,
              "With --fiber_trace_file: seconds to record (less if the runtime stops "
              "first). Default 5; range [1, 3600].");
DEFINE_uint64(fiber_trace_records_per_thread, 65536,
              "The scheduling trace's buffer per thread, in 32-byte records; the trace "
              "ends where the first buffer fills. Default 65536 (2 MiB); range "
              "[1024, 16777216].");
DEFINE_uint64(fiber_hog_rescue_ms, 10,
              "When a fiber has run this many milliseconds without switching, the "
              "fibers queued behind it on its worker (v2: its runnext slot and local "
              "queue) move to its group's shared queue, where its sibling workers take "
              "them. Default 10; range [0, 60000], 0 = never (then only idle siblings "
              "steal them).");

DEFINE_uint64(fiber_ready_latency_sample_period, 64,
              "The ready-to-run latency (GetRuntimeMetrics()) times one fiber readiness "
              "in this many, with two cycle-clock reads (default 64; 1 times every "
              "readiness, for a diagnosis: yield then costs ~35% more). A power of two "
              "in [1, 65536].");
DEFINE_uint64(fiber_chaos_seed, 0,
              "Chaos scheduling, for tests: with a nonzero seed the scheduler runs a "
              "random one of the ready fibers, moves woken and yielding fibers between "
              "workers and groups of a NUMA node, makes fibers yield after parks, and "
              "pauses threads at random inside the wake-up and park protocols, "
              "reproducibly from the seed (the same seed gives the same order on one "
              "worker). Several times slower: never in production. Compiled in only in "
              "test builds with --config=seams (--define=spindle_test_seams=1); other "
              "builds accept only 0. Default 0 = off; any other value, in "
              "[1, 2^64-1], is a seed.");

DEFINE_bool(fiber_log_layout, false,
            "Write the runtime's layout (groups, workers, CPUs, strategy, stacks) as one "
            "line to stderr when it starts, once per process while the layout stays the "
            "same (default false: the runtime prints nothing unless something is wrong; "
            "spindle_bench and the examples turn it on). The line also goes to VLOG(1).");

namespace spindle::internal {
namespace {

constexpr std::uint64_t kMaxTerminateGraceMs = 86400000;
constexpr std::uint64_t kMaxHogReportMs = 3600000;
constexpr std::uint64_t kMaxDeadlockReportS = 86400;
constexpr std::uint64_t kMaxHogRescueMs = 60000;
constexpr int kMaxSignal = 64;
constexpr std::uint64_t kMaxReadySamplePeriod = 65536;
constexpr std::size_t kMaxSpinTimeUs = 10000;
constexpr std::size_t kMaxStealingRatio = std::size_t{1} << 20;

// The first line of `file`, or "" if it cannot be read.
std::string ReadFirstLine(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  return line;
}

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// Whole CPUs for a quota of `quota` per `period` (rounded up); 0 for none.
std::size_t WholeCpus(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<std::size_t>((quota + period - 1) / period);
}

// The tighter of two CPU limits, where 0 is none.
std::size_t TighterLimit(std::size_t a, std::size_t b) {
  return a == 0 ? b : b == 0 ? a : std::min(a, b);
}

// The tightest `limit(dir)` over `dir` and its ancestors up to `root` (a limit on a
// parent cgroup binds its children); 0 if none has one.
template <class Limit>
std::size_t SmallestLimitUpTo(const std::string& root, std::string relative, Limit limit) {
  std::size_t smallest = 0;
  for (;;) {
    smallest = TighterLimit(smallest, limit(root + relative));
    if (relative.empty() || relative == "/") break;
    const std::size_t slash = relative.find_last_of('/');
    relative = slash == std::string::npos || slash == 0 ? "/" : relative.substr(0, slash);
  }
  return smallest;
}

// v2: "max 100000" or "200000 100000" in cpu.max.
std::size_t CgroupV2Limit(const std::string& dir) {
  std::istringstream line(ReadFirstLine(dir + "/cpu.max"));
  std::string quota;
  long long period = 0;
  if (!(line >> quota >> period) || quota == "max") return 0;
  return WholeCpus(std::atoll(quota.c_str()), period);
}

// v1: cpu.cfs_quota_us (-1 = none) over cpu.cfs_period_us.
std::size_t CgroupV1Limit(const std::string& dir) {
  const std::string quota = ReadFirstLine(dir + "/cpu.cfs_quota_us");
  const std::string period = ReadFirstLine(dir + "/cpu.cfs_period_us");
  if (quota.empty() || period.empty()) return 0;
  return WholeCpus(std::atoll(quota.c_str()), std::atoll(period.c_str()));
}

}  // namespace

std::size_t CgroupCpuQuota(const std::string& cgroup_root, const std::string& proc_self_cgroup) {
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  std::size_t smallest = 0;
  // Lines are ID:CONTROLLERS:PATH; v2's is 0::PATH, v1's name their controllers.
  while (std::getline(lines, line)) {
    const std::size_t first = line.find(':');
    const std::size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      // v2. Inside a cgroup namespace the path is "/" and the root is our own cgroup;
      // outside one it names our cgroup under the root. Either way look up the tree.
      if (!IsDirectory(cgroup_root + path)) path = "/";
      smallest = TighterLimit(smallest, SmallestLimitUpTo(cgroup_root, path, &CgroupV2Limit));
      continue;
    }
    bool has_cpu = false;
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) has_cpu |= name == "cpu";
    if (!has_cpu) continue;
    // v1: the cpu hierarchy is mounted as cpu,cpuacct (or cpu; or cpuacct,cpu). A
    // container without a cgroup namespace sees the host's path but has its own
    // cgroup mounted at the hierarchy's root: fall back to that.
    for (const char* mount : {"/cpu,cpuacct", "/cpu", "/cpuacct,cpu"}) {
      const std::string hierarchy = cgroup_root + mount;
      if (!IsDirectory(hierarchy)) continue;
      smallest = TighterLimit(
          smallest, SmallestLimitUpTo(hierarchy, IsDirectory(hierarchy + path) ? path : "/",
                                      &CgroupV1Limit));
      break;
    }
  }
  return smallest;
}

std::size_t CgroupCpuQuota() {
  std::ifstream in("/proc/self/cgroup");
  std::stringstream text;
  text << in.rdbuf();
  return CgroupCpuQuota("/sys/fs/cgroup", text.str());
}

RuntimeOptions RuntimeOptionsFromFlags() {
  RuntimeOptions options;
  options.concurrency = FLAGS_fiber_concurrency;
  options.scheduling_group_size = FLAGS_fiber_scheduling_group_size;
  options.run_queue_size = FLAGS_fiber_run_queue_size;
  options.scheduling_strategy = FLAGS_fiber_scheduling_strategy;
  options.spin_time = std::chrono::microseconds(FLAGS_fiber_worker_spin_time_us);
  options.stacks = StackAllocatorOptionsFromFlags();
  options.numa_aware = FLAGS_fiber_numa_aware;
  options.accessible_cpus = FLAGS_fiber_worker_accessible_cpus;
  options.disallow_cpu_migration = FLAGS_fiber_worker_disallow_cpu_migration;
  options.numa_topology_override = FLAGS_fiber_numa_topology_override;
  options.work_stealing_ratio = FLAGS_fiber_work_stealing_ratio;
  options.cross_numa_work_stealing_ratio = FLAGS_fiber_cross_numa_work_stealing_ratio;
  options.terminate_grace = std::chrono::milliseconds(FLAGS_fiber_terminate_grace_ms);
  options.dump_signal = FLAGS_fiber_dump_signal;
  options.hog_report = std::chrono::milliseconds(FLAGS_fiber_hog_report_ms);
  options.hog_rescue = std::chrono::milliseconds(FLAGS_fiber_hog_rescue_ms);
  options.deadlock_report = std::chrono::seconds(FLAGS_fiber_deadlock_report_s);
  options.trace_file = FLAGS_fiber_trace_file;
  options.trace_after = std::chrono::seconds(FLAGS_fiber_trace_after_s);
  options.trace_for = std::chrono::seconds(FLAGS_fiber_trace_for_s);
  options.trace_records_per_thread = FLAGS_fiber_trace_records_per_thread;
  options.chaos_seed = FLAGS_fiber_chaos_seed;
  options.ready_latency_sample_period = FLAGS_fiber_ready_latency_sample_period;
  options.log_layout = FLAGS_fiber_log_layout;
  options.pools = FLAGS_fiber_pools;
  options.max_fibers = FLAGS_fiber_max_fibers;
  return options;
}

std::string ValidateRuntimeOptions(const RuntimeOptions& options) {
  if (options.concurrency > kMaxConcurrency) {
    return "--fiber_concurrency=" + std::to_string(options.concurrency) +
           " is invalid: expected a worker count in [0, " +
           std::to_string(kMaxConcurrency) + "] (0 = automatic)";
  }
  if (options.scheduling_group_size > kMaxWorkersPerGroup) {
    return "--fiber_scheduling_group_size=" +
           std::to_string(options.scheduling_group_size) +
           " is invalid: expected a size in [0, " +
           std::to_string(kMaxWorkersPerGroup) + "] (0 = automatic)";
  }
  std::string error = ValidateRunQueueCapacity(options.run_queue_size);
  if (!error.empty()) return error;
  error = ValidateSchedulingStrategy(options.scheduling_strategy);
  if (!error.empty()) return error;
  // Each strategy's own flags (strategy_registry.h), whichever strategy runs.
  error = ValidateStrategyFlags();
  if (!error.empty()) return error;
  if (static_cast<std::size_t>(options.spin_time.count()) > kMaxSpinTimeUs) {
    return "--fiber_worker_spin_time_us=" + std::to_string(options.spin_time.count()) +
           " is invalid: expected microseconds in [0, " + std::to_string(kMaxSpinTimeUs) +
           "]";
  }
  if (options.work_stealing_ratio > kMaxStealingRatio) {
    return "--fiber_work_stealing_ratio=" + std::to_string(options.work_stealing_ratio) +
           " is invalid: expected idle rounds per steal attempt in [0, " +
           std::to_string(kMaxStealingRatio) + "] (0 = never)";
  }
  if (options.cross_numa_work_stealing_ratio > kMaxStealingRatio) {
    return "--fiber_cross_numa_work_stealing_ratio=" +
           std::to_string(options.cross_numa_work_stealing_ratio) +
           " is invalid: expected idle rounds per steal attempt in [0, " +
           std::to_string(kMaxStealingRatio) + "] (0 = never)";
  }
  if (static_cast<std::uint64_t>(options.terminate_grace.count()) > kMaxTerminateGraceMs) {
    return "--fiber_terminate_grace_ms=" + std::to_string(options.terminate_grace.count()) +
           " is invalid: expected milliseconds in [0, " +
           std::to_string(kMaxTerminateGraceMs) + "] (0 = never log)";
  }
  if (options.dump_signal < 0 || options.dump_signal > kMaxSignal ||
      options.dump_signal == SIGKILL || options.dump_signal == SIGSTOP ||
      options.dump_signal == SIGSEGV || options.dump_signal == SIGBUS ||
      options.dump_signal == SIGFPE || options.dump_signal == SIGILL) {
    return "--fiber_dump_signal=" + std::to_string(options.dump_signal) +
           " is invalid: expected a signal number in [0, " + std::to_string(kMaxSignal) +
           "] (0 = none), not SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGFPE or SIGILL";
  }
  if (static_cast<std::uint64_t>(options.hog_report.count()) > kMaxHogReportMs) {
    return "--fiber_hog_report_ms=" + std::to_string(options.hog_report.count()) +
           " is invalid: expected milliseconds in [0, " + std::to_string(kMaxHogReportMs) +
           "] (0 = never report)";
  }
  if (static_cast<std::uint64_t>(options.hog_rescue.count()) > kMaxHogRescueMs) {
    return "--fiber_hog_rescue_ms=" + std::to_string(options.hog_rescue.count()) +
           " is invalid: expected milliseconds in [0, " + std::to_string(kMaxHogRescueMs) +
           "] (0 = never)";
  }
  if (static_cast<std::uint64_t>(options.deadlock_report.count()) > kMaxDeadlockReportS) {
    return "--fiber_deadlock_report_s=" + std::to_string(options.deadlock_report.count()) +
           " is invalid: expected seconds in [0, " + std::to_string(kMaxDeadlockReportS) +
           "] (0 = off)";
  }
  if (static_cast<std::uint64_t>(options.trace_after.count()) > 86400) {
    return "--fiber_trace_after_s=" + std::to_string(options.trace_after.count()) +
           " is invalid: expected seconds in [0, 86400]";
  }
  if (options.trace_for.count() < 1 || options.trace_for.count() > 3600) {
    return "--fiber_trace_for_s=" + std::to_string(options.trace_for.count()) +
           " is invalid: expected seconds in [1, 3600]";
  }
  if (options.trace_records_per_thread < kMinTraceRecordsPerThread ||
      options.trace_records_per_thread > kMaxTraceRecordsPerThread) {
    return "--fiber_trace_records_per_thread=" +
           std::to_string(options.trace_records_per_thread) + " is invalid: expected records in [" +
           std::to_string(kMinTraceRecordsPerThread) + ", " +
           std::to_string(kMaxTraceRecordsPerThread) + "]";
  }
  if (options.dump_signal == SIGURG && options.hog_report.count() > 0) {
    return "--fiber_dump_signal=" + std::to_string(options.dump_signal) +
           " is invalid with --fiber_hog_report_ms=" +
           std::to_string(options.hog_report.count()) +
           ": SIGURG reads a hog's stack; choose another signal (e.g. 12, SIGUSR2) or "
           "--fiber_hog_report_ms=0";
  }
  if (!kTestSeams && options.chaos_seed != 0) {
    return "--fiber_chaos_seed=" + std::to_string(options.chaos_seed) +
           " is invalid in this build: chaos scheduling is a test seam, compiled in only "
           "with --config=seams (--define=spindle_test_seams=1); expected 0 (off)";
  }
  if (options.ready_latency_sample_period < 1 ||
      options.ready_latency_sample_period > kMaxReadySamplePeriod ||
      (options.ready_latency_sample_period & (options.ready_latency_sample_period - 1)) != 0) {
    return "--fiber_ready_latency_sample_period=" +
           std::to_string(options.ready_latency_sample_period) +
           " is invalid: expected a power of two in [1, " +
           std::to_string(kMaxReadySamplePeriod) + "]";
  }
  if (options.max_fibers > kMaxFiberCap) {
    return "--fiber_max_fibers=" + std::to_string(options.max_fibers) +
           " is invalid: expected live fibers in [0, " + std::to_string(kMaxFiberCap) +
           "] (0 = no cap)";
  }
  error = ValidateStackAllocatorOptions(options.stacks);
  if (!error.empty()) return error;
  error = CheckStackOptionsUnchanged(options.stacks);
  if (!error.empty()) return error;
  RuntimeLayout layout;
  return ComputeRuntimeLayout(options, &layout);
}

std::string ComputeRuntimeLayout(const RuntimeOptions& options, RuntimeLayout* layout) {
  layout->affinity_cpus = CurrentAffinityCpus();
  Topology machine;
  const bool fake = !options.numa_topology_override.empty();
  if (fake) {
    const std::string error = ParseTopology(options.numa_topology_override, &machine);
    if (!error.empty()) {
      return "--fiber_numa_topology_override=" + options.numa_topology_override +
             " is invalid: " + error + "; expected NODE:CPULIST[;NODE:CPULIST...] such as "
             "0:0-3;1:4-7";
    }
  } else {
    machine = DiscoverTopology(layout->affinity_cpus);
  }
  layout->topology = machine;
  if (!options.accessible_cpus.empty()) {
    std::vector<int> cpus;
    std::string error = ParseCpuList(options.accessible_cpus, &cpus);
    for (std::size_t i = 0; error.empty() && i < cpus.size(); ++i) {
      if (machine.NodeOfCpu(cpus[i]) == kNoNumaNode) {
        std::vector<int> known;
        for (const NumaNode& node : machine.nodes) {
          known.insert(known.end(), node.cpus.begin(), node.cpus.end());
        }
        std::sort(known.begin(), known.end());
        error = "CPU " + std::to_string(cpus[i]) + " is not in " +
                (fake ? "--fiber_numa_topology_override" : "the process's affinity mask") +
                " (" + FormatCpuList(known) + ")";
      }
    }
    if (!error.empty()) {
      return "--fiber_worker_accessible_cpus=" + options.accessible_cpus + " is invalid: " +
             error + "; expected a CPU list such as 0-4,6";
    }
    layout->topology = RestrictTopology(machine, cpus);
  }
  if (options.numa_aware != "auto" && options.numa_aware != "true" &&
      options.numa_aware != "false") {
    return "--fiber_numa_aware=" + options.numa_aware +
           " is invalid: expected one of: auto, true, false";
  }
  layout->numa_aware = options.numa_aware == "true" ||
                       (options.numa_aware == "auto" && layout->topology.nodes.size() > 1);
  std::size_t concurrency = options.concurrency;
  if (concurrency == 0) {
    concurrency = layout->topology.cpu_count();
    const std::size_t quota = fake ? 0 : CgroupCpuQuota();
    if (quota != 0 && quota < concurrency) concurrency = quota;
  }
  std::vector<PoolOptions> pools;
  std::string error = ParseFiberPools(options.pools, options.max_fibers, &pools);
  if (!error.empty()) return error;
  // The default pool's "auto": what the other pools leave of the concurrency.
  std::size_t others = 0;
  for (std::size_t p = 1; p < pools.size(); ++p) others += pools[p].workers;
  if (pools.front().workers == 0) {
    pools.front().workers = others < concurrency ? concurrency - others : 1;
  }
  if (others + pools.front().workers > kMaxConcurrency) {
    return "--fiber_pools=" + options.pools + " is invalid: its pools have " +
           std::to_string(others + pools.front().workers) +
           " workers in all; expected at most " + std::to_string(kMaxConcurrency);
  }
  layout->groups.clear();
  layout->pools.clear();
  for (std::size_t p = 0; p < pools.size(); ++p) {
    const PoolOptions& pool = pools[p];
    Topology topology = layout->topology;
    if (!pool.cpus.empty()) {
      std::vector<int> cpus;
      ParseCpuList(pool.cpus, &cpus);  // parsed by ParseFiberPools()
      for (int cpu : cpus) {
        if (layout->topology.NodeOfCpu(cpu) == kNoNumaNode) {
          return "--fiber_pools=" + options.pools + " is invalid: pool " + pool.name +
                 " has CPU " + std::to_string(cpu) +
                 ", which the workers may not use; expected CPUs of " +
                 FormatCpuList([&] {
                   std::vector<int> known;
                   for (const NumaNode& node : layout->topology.nodes) {
                     known.insert(known.end(), node.cpus.begin(), node.cpus.end());
                   }
                   std::sort(known.begin(), known.end());
                   return known;
                 }());
        }
      }
      topology = RestrictTopology(layout->topology, cpus);
    }
    LayoutOptions layout_options;
    layout_options.concurrency = pool.workers;
    layout_options.group_size = options.scheduling_group_size;
    layout_options.numa_aware = layout->numa_aware;
    layout_options.disallow_cpu_migration = options.disallow_cpu_migration;
    PoolPlan plan;
    plan.name = pool.name;
    plan.workers = pool.workers;
    plan.max_fibers = pool.max_fibers;
    plan.strategy = pool.strategy.empty() ? options.scheduling_strategy : pool.strategy;
    plan.cpus = pool.cpus;
    plan.first_group = layout->groups.size();
    for (GroupPlan& group : ComputeGroupLayout(topology, layout_options)) {
      group.pool = p;
      layout->groups.push_back(std::move(group));
    }
    plan.group_count = layout->groups.size() - plan.first_group;
    layout->pools.push_back(std::move(plan));
  }
  return "";
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

}  // namespace spindle::internal
