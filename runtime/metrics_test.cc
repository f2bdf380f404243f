// Copyright 2026 The Spindle Authors.

#include "runtime/metrics.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/group/group_stats.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/event.h"

namespace spindle {
namespace {

using ::spindle::testing::Scaled;
using ::spindle::testing::ScopedRuntime;
using ::spindle::testing::WaitFor;

class MetricsTest : public ::testing::TestWithParam<std::size_t> {};
INSTANTIATE_TEST_SUITE_P(Workers, MetricsTest, ::spindle::testing::WorkerCounts(),
                         ::spindle::testing::WorkerCountName);

// Every started fiber is accounted for once (given a stack, or run inline by
// its joiner), and every steal has a thief and a victim, summed over all groups
// and threads, whatever the interleaving.
TEST_P(MetricsTest, CountersAddUpAcrossThreads) {
  // Every readiness timed, so the sample count has a bound that does not depend on the
  // interleaving or on the loops' scale (at 1 in 64, TSan's 200 fibers left none).
  gflags::FlagSaver saver;
  FLAGS_fiber_ready_latency_sample_period = 1;
  ScopedRuntime runtime(GetParam());
  const RuntimeMetrics before = GetRuntimeMetrics();
  const std::size_t parents = Scaled(400);
  constexpr int kChildren = 4;
  std::atomic<std::size_t> children_ran{0};
  Event release;
  std::vector<Fiber> fibers;
  for (std::size_t i = 0; i < parents; ++i) {
    fibers.emplace_back([&] {
      std::vector<Fiber> children;
      for (int c = 0; c < kChildren; ++c) {
        children.emplace_back([&] {
          this_fiber::Yield();
          children_ran.fetch_add(1, std::memory_order_relaxed);
        });
      }
      release.Wait();  // parked: the children run elsewhere, or inline at join()
      for (Fiber& child : children) child.join();
    });
  }
  release.Set();
  for (Fiber& fiber : fibers) fiber.join();
  ASSERT_EQ(children_ran.load(), parents * kChildren);
  ASSERT_TRUE(WaitFor([] { return GetFiberCount() == 0; }));

  const RuntimeMetrics metrics = GetRuntimeMetrics().Since(before);
  const GroupMetrics total = metrics.Total();
  EXPECT_EQ(metrics.live_fibers, 0u);
  EXPECT_EQ(total.fibers_started, parents * (1 + kChildren));
  EXPECT_EQ(total.fibers_started, total.fibers_begun + total.fibers_run_inline);
  EXPECT_EQ(total.steals_in_same_node + total.steals_in_cross_node, total.steals_out);
  // Every begun fiber ran at least once (more if it parked or yielded to another: how
  // often depends on the interleaving).
  EXPECT_GE(total.fibers_run, total.fibers_begun);
  EXPECT_EQ(total.workers, GetParam());
  std::uint64_t per_worker_runs = 0;
  std::uint64_t per_worker_samples = 0;
  for (const GroupMetrics& group : metrics.groups) {
    ASSERT_EQ(group.per_worker.size(), group.workers);
    for (const WorkerMetrics& worker : group.per_worker) {
      per_worker_runs += worker.fibers_run;
      per_worker_samples += worker.ready_latency.count;
    }
  }
  EXPECT_EQ(per_worker_runs, total.fibers_run);
  EXPECT_EQ(per_worker_samples, total.ready_latency.count);
  // Every fiber given a stack was taken from a queue with its start timed (no fiber
  // here is dispatched), and wake-ups and yields add more.
  EXPECT_GE(total.ready_latency.count, total.fibers_begun);
  EXPECT_GT(total.ready_latency.count, 0u);
}

// The ready-to-run latency is the time a ready fiber waits for a worker: with
// the only worker held busy for 20 ms after fibers became ready, they waited at
// least that long.
TEST(ReadyLatencyTest, MovesWhenTheWorkerIsHeldBusy) {
  ScopedRuntime runtime(1);
  std::atomic<bool> busy_running{false};
  std::atomic<bool> others_started{false};
  Fiber busy([&] {
    busy_running.store(true, std::memory_order_release);
    while (!others_started.load(std::memory_order_acquire)) {
    }
    // Hold the worker (no yield, no park) for 20 ms of wall time.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
  });
  ASSERT_TRUE(WaitFor([&] { return busy_running.load(std::memory_order_acquire); }));
  const RuntimeMetrics before = GetRuntimeMetrics();
  // ReadySamplePeriod() consecutive new fibers: one of them is sampled (their ids are
  // consecutive, and an id that is a multiple of the period is). Eight periods' worth.
  const std::uint32_t kPeriod = internal::GroupStats::ReadySamplePeriod();
  std::vector<Fiber> waiting;
  for (std::uint32_t i = 0; i < 8 * kPeriod; ++i) waiting.emplace_back([] {});
  others_started.store(true, std::memory_order_release);
  busy.join();
  for (Fiber& fiber : waiting) fiber.join();
  const Histogram latency = GetRuntimeMetrics().Since(before).Total().ready_latency;
  // 8 periods of consecutive new fibers: 8 of their ids (7 across an id-block
  // boundary) are multiples of the period.
  ASSERT_GE(latency.count, 7u);
  EXPECT_GE(latency.Percentile(0.5), 15e6) << "p50 " << latency.Percentile(0.5) << " ns";
  EXPECT_GE(latency.Mean(), 10e6);
}

TEST(MetricsTest, IdleWorkersCountTheirSleeps) {
  ScopedRuntime runtime(2);
  Fiber([] {}).join();
  // Each worker goes to sleep once nothing is left to run.
  ASSERT_TRUE(WaitFor([] {
    const RuntimeMetrics metrics = GetRuntimeMetrics();  // outlives the loop
    for (const WorkerMetrics& worker : metrics.groups[0].per_worker) {
      if (worker.sleeps == 0) return false;
    }
    return true;
  }));
  const GroupMetrics group = GetRuntimeMetrics().groups[0];
  EXPECT_EQ(group.sleeps, group.per_worker[0].sleeps + group.per_worker[1].sleeps);
  EXPECT_LE(group.spurious_wakeups, group.sleeps);
  EXPECT_EQ(GetRuntimeMetrics().strategy, ::spindle::testing::TestStrategy());
}

// A burst bigger than the shared queue spills to its overflow list (v1, v2): counted,
// and every fiber still runs once.
TEST(MetricsTest, ABurstThatFillsTheSharedQueueIsCountedAsSpills) {
  constexpr std::size_t kQueue = 1024;
  ScopedRuntime runtime(1, 0, /*run_queue_size=*/kQueue);
  const RuntimeMetrics before = GetRuntimeMetrics();
  const std::size_t burst = 4 * kQueue;
  std::atomic<std::size_t> ran{0};
  // One worker, and its fiber does not yield while it starts them: they all wait queued.
  Fiber([&] {
    for (std::size_t i = 0; i < burst; ++i) {
      StartFiberDetached([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    }
  }).join();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == burst; }));
  const GroupMetrics spilled = GetRuntimeMetrics().Since(before).groups[0];
  const std::string strategy = ::spindle::testing::TestStrategy();
  if (strategy == "relaxed" || strategy == "globalfifo") {
    EXPECT_EQ(spilled.run_queue_spills, 0u) << strategy << "'s queue is unbounded: no spills";
  } else {
    // At least what did not fit in the ring (v2 keeps up to a local queue and its
    // runnext slot out of it).
    EXPECT_GE(spilled.run_queue_spills, burst - kQueue - 512) << "spills not counted";
    // Once per fiber at most, unless chaos mode queues fibers again (its decisions move
    // taken fibers back to the shared queue, where they may spill once more).
    if (!::spindle::testing::UnderChaos()) {
      EXPECT_LE(spilled.run_queue_spills, burst);
    }
  }
}

// A plain thread that starts more fibers than the shared queue holds while the only
// worker is busy waits for room (v1, v2: back-pressure, counted; relaxed's and
// globalfifo's queues are unbounded), and every fiber runs once the worker drains it.
TEST(MetricsTest, APlainThreadThatFindsTheSharedQueueFullWaitsAndIsCounted) {
  constexpr std::size_t kQueue = 1024;
  ScopedRuntime runtime(1, 0, /*run_queue_size=*/kQueue);
  const std::string strategy = ::spindle::testing::TestStrategy();
  const bool bounded = strategy != "relaxed" && strategy != "globalfifo";
  const RuntimeMetrics before = GetRuntimeMetrics();
  std::atomic<bool> hold{true};
  std::atomic<bool> holding{false};
  StartFiberDetached([&] {
    holding = true;
    while (hold.load()) {
    }  // keeps the only worker from draining the queue
  });
  ASSERT_TRUE(WaitFor([&] { return holding.load(); }));
  const std::size_t burst = kQueue + 64;
  std::atomic<std::size_t> ran{0};
  std::thread producer([&] {
    for (std::size_t i = 0; i < burst; ++i) {
      StartFiberDetached([&ran] { ran.fetch_add(1, std::memory_order_relaxed); });
    }
  });
  const bool waited = !bounded || WaitFor([&] {
    return GetRuntimeMetrics().Since(before).groups[0].run_queue_full_waits > 0;
  });
  hold = false;
  producer.join();
  ASSERT_TRUE(WaitFor([&] { return ran.load() == burst; }));
  EXPECT_TRUE(waited) << "the producer's wait for room was not counted";
  const GroupMetrics group = GetRuntimeMetrics().Since(before).groups[0];
  if (bounded) {
    EXPECT_GE(group.run_queue_full_waits, 1u);
    EXPECT_LE(group.run_queue_full_waits, burst);
  } else {
    EXPECT_EQ(group.run_queue_full_waits, 0u) << strategy << "'s queue does not fill";
  }
}

// The text parses as Prometheus exposition: HELP/TYPE before each family, one
// sample per group, cumulative buckets that never decrease and end at _count.
TEST(MetricsTest, PrometheusText) {
  ScopedRuntime runtime(4, 2);  // two groups of two
  for (int i = 0; i < 100; ++i) Fiber([] { this_fiber::Yield(); }).join();
  const RuntimeMetrics metrics = GetRuntimeMetrics();
  const std::string text = FormatPrometheus(metrics);
  std::istringstream lines(text);
  std::string line;
  std::map<std::string, std::string> types;
  std::map<std::string, double> samples;
  std::map<std::string, double> last_bucket;
  while (std::getline(lines, line)) {
    ASSERT_FALSE(line.empty());
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream fields(line.substr(7));
      std::string name, type;
      fields >> name >> type;
      types[name] = type;
      continue;
    }
    if (line[0] == '#') continue;
    const std::size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string series = line.substr(0, space);
    const double value = std::stod(line.substr(space + 1));
    const std::string name = series.substr(0, series.find('{'));
    std::string family = name;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (types.count(family) == 0 && family.size() > s.size() &&
          family.compare(family.size() - s.size(), s.size(), s) == 0) {
        family = family.substr(0, family.size() - s.size());
      }
    }
    ASSERT_EQ(types.count(family), 1u) << "no TYPE before " << line;
    samples[series] = value;
    if (name == "spindle_ready_latency_seconds_bucket") {
      const std::string group = series.substr(0, series.find(",le="));
      ASSERT_GE(value, last_bucket[group]) << line;
      last_bucket[group] = value;
    }
  }
  EXPECT_EQ(types["spindle_fibers_started_total"], "counter");
  EXPECT_EQ(types["spindle_run_queue_depth"], "gauge");
  EXPECT_EQ(types["spindle_run_queue_spills_total"], "counter");
  EXPECT_EQ(types["spindle_run_queue_full_waits_total"], "counter");
  EXPECT_EQ(types["spindle_ready_latency_seconds"], "histogram");
  for (const GroupMetrics& group : metrics.groups) {
    const std::string g = "{group=\"" + std::to_string(group.index) + "\"}";
    EXPECT_EQ(samples["spindle_fibers_started_total" + g],
              static_cast<double>(group.fibers_started));
    EXPECT_EQ(samples["spindle_wakeups_total" + g], static_cast<double>(group.wakeups));
    EXPECT_EQ(samples["spindle_ready_latency_seconds_count" + g],
              static_cast<double>(group.ready_latency.count));
    EXPECT_EQ(samples["spindle_ready_latency_seconds_bucket{group=\"" +
                      std::to_string(group.index) + "\",le=\"+Inf\"}"],
              static_cast<double>(group.ready_latency.count));
  }
  EXPECT_EQ(metrics.Total().fibers_started, 100u);
}

}  // namespace
}  // namespace spindle
