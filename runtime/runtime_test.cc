// Copyright 2026 The Spindle Authors.

#include "runtime/runtime.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/internal/seams/test_seams.h"
#include "runtime/metrics.h"

namespace spindle {
namespace {

using internal::ComputeGroupSizes;
using testing::ScopedRuntime;

// Sets one flag to a bad value, expects TryStartRuntime() to refuse it with a message
// naming the flag and the value, and restores every flag.
void ExpectRejected(const char* flag, const char* value, const char* range_text) {
  gflags::FlagSaver saver;
  ASSERT_FALSE(gflags::SetCommandLineOption(flag, value).empty()) << flag;
  const std::string error = TryStartRuntime();
  ASSERT_FALSE(error.empty()) << "--" << flag << "=" << value << " was accepted";
  EXPECT_NE(error.find(std::string("--") + flag + "=" + value), std::string::npos)
      << error;
  EXPECT_NE(error.find(range_text), std::string::npos) << error;
}

TEST(RuntimeFlagsTest, EachOutOfRangeFlagIsRejectedByName) {
  ExpectRejected("fiber_concurrency", "5000", "[0, 1024]");
  ExpectRejected("fiber_scheduling_group_size", "65", "[0, 64]");
  ExpectRejected("fiber_run_queue_size", "1000", "power of two");
  ExpectRejected("fiber_run_queue_size", "1", "power of two");
  ExpectRejected("fiber_scheduling_strategy", "v9",
                 "expected one of: v1, v2, relaxed, globalfifo");
  ExpectRejected("fiber_v1_stage_size", "257", "accepted [0, 256]");
  ExpectRejected("fiber_v2_local_queue_size", "100", "power of two in [2, 65536]");
  ExpectRejected("fiber_v2_steal", "all", "expected one of: half, one");
  ExpectRejected("fiber_v2_spawn", "stack", "expected one of: lifo, fifo");
  ExpectRejected("fiber_v2_global_check_interval", "0", "[1, 1000000]");
  ExpectRejected("fiber_v2_global_take", "half", "expected one of: share, one, all");
  ExpectRejected("fiber_v2_overflow", "all", "expected one of: half, one");
  ExpectRejected("fiber_v2_stage_size", "300", "accepted [0, 256]");
  ExpectRejected("fiber_relaxed_lists_per_worker", "0", "lists per worker in [1, 64]");
  ExpectRejected("fiber_relaxed_lists_per_worker", "65", "lists per worker in [1, 64]");
  ExpectRejected("fiber_worker_spin_time_us", "20000", "[0, 10000]");
  ExpectRejected("fiber_stack_size", "5000", "multiple of the page size");
  ExpectRejected("fiber_stack_size", "4096", "[16384, 1073741824]");
  ExpectRejected("fiber_stack_mmap_limit", "9999999999", "[0, 4294967296]");
  ExpectRejected("fiber_work_stealing_ratio", "2000000", "[0, 1048576] (0 = never)");
  ExpectRejected("fiber_cross_numa_work_stealing_ratio", "2000000", "[0, 1048576]");
  ExpectRejected("fiber_numa_aware", "maybe", "expected one of: auto, true, false");
  ExpectRejected("fiber_numa_topology_override", "0-3", "is not NODE:CPULIST");
  ExpectRejected("fiber_numa_topology_override", "0:0-3;1:3-4", "CPU 3 is in two nodes");
  ExpectRejected("fiber_numa_topology_override", "0:0-3;0:4", "node 0 is listed twice");
  ExpectRejected("fiber_numa_topology_override", "0:", "the CPU list is empty");
  ExpectRejected("fiber_worker_accessible_cpus", "0-2,x", "not a CPU number");
  ExpectRejected("fiber_worker_accessible_cpus", "1023", "not in the process's affinity mask");
}

// Chaos scheduling is a test seam (runtime/internal/seams/test_seams.h): a build without the
// seams refuses a seed by name instead of running without the chaos it asked for; a
// build with them runs under it.
TEST(RuntimeFlagsTest, ChaosSeedNeedsTheTestSeams) {
  if (testing::UnderChaos()) GTEST_SKIP() << "the chaos twins set their own seed";
  if constexpr (internal::kTestSeams) {
    gflags::FlagSaver saver;
    gflags::SetCommandLineOption("fiber_chaos_seed", "5");
    EXPECT_EQ(TryStartRuntime(), "");
    TerminateRuntime();
  } else {
    ExpectRejected("fiber_chaos_seed", "5", "expected 0 (off)");
    ExpectRejected("fiber_chaos_seed", "5", "--config=seams");
  }
}

// A CPU list naming CPUs outside a fake topology is refused as well (the override
// stands in for the machine).
TEST(RuntimeFlagsTest, AccessibleCpusMustBeInTheOverride) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_numa_topology_override", "0:0-3;1:4-7");
  ExpectRejected("fiber_worker_accessible_cpus", "6-9",
                 "CPU 8 is not in --fiber_numa_topology_override (0-7)");
}

TEST(RuntimeFlagsDeathTest, StartRuntimeStopsOnABadFlag) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_run_queue_size", "3");
  EXPECT_DEATH(StartRuntime(), "--fiber_run_queue_size=3 is invalid");
  gflags::SetCommandLineOption("fiber_run_queue_size", "65536");
  gflags::SetCommandLineOption("fiber_v2_steal", "all");
  EXPECT_DEATH(StartRuntime(), "--fiber_v2_steal=all is invalid");
}

// The --fiber_stack_* flags are read once per process: a later start that asks for
// other stacks is refused, naming the flag and both values, and starts again once the
// flag is put back.
TEST(RuntimeFlagsTest, AStackFlagChangedAfterStacksExistIsRefusedByName) {
  {
    ScopedRuntime runtime(1);
    RunAsFiber([] {});  // the stacks exist from here on
  }
  gflags::FlagSaver saver;
  const std::uint64_t was = FLAGS_fiber_stack_size;
  FLAGS_fiber_stack_size = was * 2;
  std::string error = TryStartRuntime();
  EXPECT_NE(error.find("--fiber_stack_size=" + std::to_string(was * 2) +
                       " cannot take effect"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("set up with " + std::to_string(was)), std::string::npos) << error;
  FLAGS_fiber_stack_size = was;
  FLAGS_fiber_stack_thread_cache_size = FLAGS_fiber_stack_thread_cache_size + 2;
  error = TryStartRuntime();
  EXPECT_NE(error.find("--fiber_stack_thread_cache_size="), std::string::npos) << error;
  FLAGS_fiber_stack_thread_cache_size = FLAGS_fiber_stack_thread_cache_size - 2;
  ASSERT_EQ(TryStartRuntime(), "");
  TerminateRuntime();
}

// Starts 2000 short fibers in group 0 and joins them: work that group 1 (started with
// none) can only steal.
void RunShortFibersInGroupZero() {
  Fiber::Attributes in_group0;
  in_group0.scheduling_group = 0;
  std::vector<Fiber> fibers;
  for (int i = 0; i < 2000; ++i) {
    fibers.emplace_back(in_group0, [] {
      volatile int spin = 0;
      for (int k = 0; k < 2000; ++k) spin = spin + k;
    });
  }
  for (auto& f : fibers) f.join();
}

// --fiber_work_stealing_ratio=0 turns stealing within a node off (seed 003's
// steal_every_n = 0): two groups, all work started in one, none of it stolen.
TEST(RuntimeFlagsTest, AStealingRatioOfZeroMeansNever) {
  gflags::FlagSaver saver;
  FLAGS_fiber_work_stealing_ratio = 0;
  ScopedRuntime runtime(2, 1);
  const RuntimeMetrics before = GetRuntimeMetrics();
  RunShortFibersInGroupZero();
  const GroupMetrics all = GetRuntimeMetrics().Since(before).Total();
  EXPECT_EQ(all.steals_in_same_node, 0u);
  EXPECT_EQ(all.steals_in_cross_node, 0u);
  EXPECT_EQ(all.steals_out, 0u);
}

// A larger ratio steals less often: a victim with ratio N gets one attempt every N idle
// rounds of each thief, counted exactly (not timed): over any window, a group's
// attempts are at most its rounds / N + 1 (its one worker has one victim), plus one for
// a round counted between the two reads of a snapshot. Group 0 gets the work, group 1
// steals it.
TEST(RuntimeFlagsTest, AStealingRatioOfNMeansOneAttemptEveryNRounds) {
  for (const std::uint64_t ratio : {1u, 4u, 64u}) {
    SCOPED_TRACE(ratio);
    gflags::FlagSaver saver;
    FLAGS_fiber_work_stealing_ratio = ratio;
    ScopedRuntime runtime(2, 1);
    const RuntimeMetrics before = GetRuntimeMetrics();
    RuntimeMetrics since;
    // Group 1's worker runs one empty fiber per pass and then searches: at least one
    // idle round with a victim, counted by the time a later pass looks (until then,
    // again; group 0 may have finished before its worker woke).
    ASSERT_TRUE(spindle::testing::WaitFor([&] {
      RunShortFibersInGroupZero();
      Fiber::Attributes in_group1;
      in_group1.scheduling_group = 1;
      Fiber(in_group1, [] {}).join();
      since = GetRuntimeMetrics().Since(before);
      return since.groups.size() == 2 && since.groups[1].steal_rounds > 0;
    }, std::chrono::seconds(60)));
    const GroupMetrics& thief = since.groups[1];
    EXPECT_LE(thief.steal_attempts, thief.steal_rounds / ratio + 2);
    if (ratio == 1) {
      EXPECT_GE(thief.steal_attempts + 1, thief.steal_rounds);
    }
    for (const GroupMetrics& group : since.groups) {
      EXPECT_LE(group.steal_attempts, group.steal_rounds / ratio + 2) << group.index;
    }
  }
}

TEST(RuntimeLayoutTest, GroupSizes) {
  using V = std::vector<std::size_t>;
  EXPECT_EQ(ComputeGroupSizes(1, 0), V({1}));
  EXPECT_EQ(ComputeGroupSizes(7, 0), V({7}));
  EXPECT_EQ(ComputeGroupSizes(8, 0), V({8}));
  EXPECT_EQ(ComputeGroupSizes(15, 0), V({15}));
  EXPECT_EQ(ComputeGroupSizes(16, 0), V({8, 8}));
  EXPECT_EQ(ComputeGroupSizes(31, 0), V({11, 10, 10}));
  EXPECT_EQ(ComputeGroupSizes(64, 0), V({13, 13, 13, 13, 12}));
  for (std::size_t n = 8; n <= 300; ++n) {
    for (std::size_t size : ComputeGroupSizes(n, 0)) {
      EXPECT_GE(size, 8u) << n;
      EXPECT_LE(size, 15u) << n;
    }
  }
  EXPECT_EQ(ComputeGroupSizes(5, 2), V({2, 2, 1}));
  EXPECT_EQ(ComputeGroupSizes(4, 64), V({4}));
  EXPECT_EQ(ComputeGroupSizes(128, 64), V({64, 64}));
}

TEST(RuntimeLayoutTest, IntrospectionMatchesTheFlags) {
  {
    ScopedRuntime runtime(4, 2);
    EXPECT_EQ(GetSchedulingGroupCount(), 2u);
    EXPECT_EQ(GetSchedulingGroupSize(), 2u);
  }
  {
    ScopedRuntime runtime(3);
    EXPECT_EQ(GetSchedulingGroupCount(), 1u);
    EXPECT_EQ(GetSchedulingGroupSize(), 3u);
    EXPECT_EQ(GetFiberCount(), 0u);
  }
}

// The CPU quota of this process's cgroup (v2), rounded up; 0 if none. Read here
// independently of the runtime's own reader.
std::size_t CgroupQuotaForTest() {
  std::ifstream in("/sys/fs/cgroup/cpu.max");
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  return static_cast<std::size_t>((std::stoll(quota) + period - 1) / period);
}

// DefaultConcurrency() counts the CPUs the calling thread may run on, capped by the
// cgroup quota: checked on threads restricted to one CPU and to two.
TEST(RuntimeLayoutTest, DefaultConcurrencyFollowsTheAffinityMaskAndQuota) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) cpus.push_back(cpu);
  }
  ASSERT_FALSE(cpus.empty());
  const std::size_t quota = CgroupQuotaForTest();
  for (std::size_t k : {std::size_t{1}, std::size_t{2}}) {
    if (k > cpus.size()) break;
    std::size_t seen = 0;
    std::thread([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (std::size_t i = 0; i < k; ++i) CPU_SET(cpus[i], &set);
      ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);
      seen = internal::DefaultConcurrency();
    }).join();
    const std::size_t expected = quota != 0 && quota < k ? quota : k;
    EXPECT_EQ(seen, expected) << "on a thread allowed " << k << " CPUs, quota " << quota;
  }
}

// A fake two-node machine: groups per node, their nodes and CPUs, and the accessible
// CPU list cutting into it.
TEST(RuntimeLayoutTest, FakeTopologyShapesTheGroups) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_numa_topology_override", "0:0-3;1:4-7");
  {
    ScopedRuntime runtime(8, 2);
    const auto stats = GetSchedulingGroupStats();
    ASSERT_EQ(stats.size(), 4u);
    const int nodes[] = {0, 0, 1, 1};
    const char* cpus[] = {"0-3", "0-3", "4-7", "4-7"};
    for (std::size_t g = 0; g < 4; ++g) {
      EXPECT_EQ(stats[g].index, g);
      EXPECT_EQ(stats[g].numa_node, nodes[g]);
      EXPECT_EQ(stats[g].workers, 2u);
      EXPECT_EQ(stats[g].cpus, cpus[g]);
    }
  }
  gflags::SetCommandLineOption("fiber_worker_accessible_cpus", "2-5");
  gflags::SetCommandLineOption("fiber_numa_aware", "false");
  {
    ScopedRuntime runtime(4, 2);  // not NUMA-aware: one pool of CPUs 2-5
    const auto stats = GetSchedulingGroupStats();
    ASSERT_EQ(stats.size(), 2u);
    EXPECT_EQ(stats[0].numa_node, -1);
    EXPECT_EQ(stats[1].cpus, "2-5");
  }
  gflags::SetCommandLineOption("fiber_numa_aware", "auto");
  {
    ScopedRuntime runtime(0, 0);  // automatic: one worker per accessible CPU, per node
    const auto stats = GetSchedulingGroupStats();
    ASSERT_EQ(stats.size(), 2u);
    EXPECT_EQ(stats[0].cpus, "2-3");
    EXPECT_EQ(stats[1].cpus, "4-5");
    EXPECT_EQ(stats[1].numa_node, 1);
  }
}

TEST(RuntimeLayoutTest, FibersStartedOnEveryGroupRun) {
  ScopedRuntime runtime(4, 1);  // four groups of one worker
  std::atomic<int> ran{0};
  std::vector<Fiber> fibers;
  for (std::size_t g = 0; g < GetSchedulingGroupCount(); ++g) {
    Fiber::Attributes attributes;
    attributes.scheduling_group = g;
    fibers.emplace_back(attributes, [&] { ++ran; });
  }
  for (auto& f : fibers) f.join();
  EXPECT_EQ(ran.load(), 4);
}

// CPU time used so far by the runtime's worker threads (named spindle-gGwW), from
// /proc/self/task: not the process's, which sanitizer and test threads add to.
double WorkerCpuSeconds() {
  const double ticks_per_second = static_cast<double>(sysconf(_SC_CLK_TCK));
  double seconds = 0;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  while (dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream stat(std::string("/proc/self/task/") + task->d_name + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;  // the thread has just exited
    const std::size_t open = line.find('(');
    const std::size_t close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    if (line.compare(open + 1, 9, "spindle-g") != 0) continue;
    // After the name: state (field 3) ... utime (14), stime (15).
    std::istringstream fields(line.substr(close + 2));
    std::string field;
    double ticks = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {
      if (i >= 14) ticks += std::stod(field);
    }
    seconds += ticks / ticks_per_second;
  }
  closedir(tasks);
  return seconds;
}

std::vector<std::uint64_t> SleepsPerWorker() {
  std::vector<std::uint64_t> sleeps;
  for (const GroupMetrics& group : GetRuntimeMetrics().groups) {
    for (const WorkerMetrics& worker : group.per_worker) sleeps.push_back(worker.sleeps);
  }
  return sleeps;
}

// Idle workers must sleep, not spin: once each has gone to sleep after some work, the
// workers use almost no CPU over one idle second (a sleeping thread uses none however
// slow or loaded the machine is; a spinning one would use most of the second). With one
// group, and with four groups of one worker that steal from each other at every idle
// round. Only the workers' own threads are counted.
class RuntimeIdleTest : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(GroupSizes, RuntimeIdleTest, ::testing::Values(0, 1),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("OneGroup")
                                                  : std::string("StealingGroups");
                         });

TEST_P(RuntimeIdleTest, IdleWorkersUseNoCpu) {
  gflags::FlagSaver saver;
  gflags::SetCommandLineOption("fiber_work_stealing_ratio", "1");
  ScopedRuntime runtime(4, GetParam());
  // Some work first, so that workers have been awake; then they go to sleep again
  // (proof that the idle path ran to its end): the window starts once one has.
  const std::vector<std::uint64_t> before_work = SleepsPerWorker();
  ASSERT_EQ(before_work.size(), 4u);
  std::vector<Fiber> fibers;
  for (int i = 0; i < 100; ++i) fibers.emplace_back([] {});
  for (auto& f : fibers) f.join();
  ASSERT_TRUE(spindle::testing::WaitFor([&] {
    const std::vector<std::uint64_t> now = SleepsPerWorker();
    std::uint64_t slept = 0;
    for (std::size_t w = 0; w < now.size(); ++w) slept += now[w] - before_work[w];
    return slept != 0;
  })) << "no worker went to sleep after the work";
  const double before = WorkerCpuSeconds();
  ASSERT_GE(before, 0) << "no /proc/self/task";
  const std::vector<std::uint64_t> sleeps_before = SleepsPerWorker();
  struct timespec second = {1, 0};
  nanosleep(&second, nullptr);
  const double used = WorkerCpuSeconds() - before;
  const std::vector<std::uint64_t> sleeps_after = SleepsPerWorker();
  // The figure, for the record (the lanes run v1 and v2: see bazel/testing.bzl).
  std::printf("idle runtime (4 workers, strategy %s): %.4f CPU-seconds in 1 s\n",
              spindle::testing::TestStrategy().c_str(), used);
  EXPECT_LT(used, 0.05) << "idle workers used " << used << " s of CPU in 1 s";
  // No worker woke up and slept again on a timer of its own: a poll every 250 ms or
  // more often would show here (4 or more sleeps), however little CPU each costs. A
  // few are the work's tail: the window opens once one worker has slept, and a sibling
  // may still take a wake-up posted during the work (a thief's, or under chaos a push
  // sent to another group), find nothing and sleep again (3 seen under ASan + chaos).
  for (std::size_t w = 0; w < sleeps_after.size(); ++w) {
    EXPECT_LE(sleeps_after[w] - sleeps_before[w], 3u) << "worker " << w;
  }
}

}  // namespace
}  // namespace spindle
