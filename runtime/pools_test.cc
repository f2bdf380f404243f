// Copyright 2026 The Spindle Authors.
//
// Named pools (--fiber_pools) and admission (max_fibers, the TryStart forms): fibers stay
// in their pool through yields, timer wake-ups, children and sync wake-ups; a capped
// pool refuses TryStart past its cap at every worker count, the waiting form starts
// when room appears or ends at its deadline or cancellation; a start with no stack to be
// had is refused (TryStart) or waits (a plain start); live counts return to zero.

#include <sched.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/internal/stack_allocator.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "gtest/gtest.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/isolation_probe.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "timer/timer.h"

namespace spindle {
namespace {

using testing::ScopedRuntime;
using testing::WaitFor;

// --fiber_pools (and --fiber_max_fibers) for one test, restored afterwards. Declare it
// before the ScopedRuntime, so that it outlives the runtime.
class ScopedPoolFlags {
 public:
  explicit ScopedPoolFlags(const std::string& pools, std::uint64_t default_cap = 0) {
    FLAGS_fiber_pools = pools;
    FLAGS_fiber_max_fibers = default_cap;
  }
  ~ScopedPoolFlags() {
    FLAGS_fiber_pools = "";
    FLAGS_fiber_max_fibers = 0;
  }
};

Fiber::Attributes InPool(const char* name) {
  Fiber::Attributes attributes;
  attributes.pool_name = name;
  return attributes;
}

const PoolMetrics& PoolNamed(const RuntimeMetrics& metrics, const std::string& name) {
  for (const PoolMetrics& pool : metrics.pools) {
    if (pool.name == name) return pool;
  }
  ADD_FAILURE() << "no pool " << name;
  return metrics.pools.front();
}

std::uint64_t LiveIn(const std::string& pool) {
  return PoolNamed(GetRuntimeMetrics(), pool).live_fibers;
}

class PoolsTest : public ::testing::TestWithParam<std::size_t> {};

// Fibers of pools a and b, and their children, run only on their own pool's workers,
// through yields, sleeps (timer wake-ups), event wake-ups from the other pool and from
// plain threads.
TEST_P(PoolsTest, FibersStayInTheirPool) {
  const std::size_t workers = GetParam();
  ScopedPoolFlags flags("a:1,b:" + std::to_string(std::max<std::size_t>(1, workers / 2)));
  ScopedRuntime runtime(workers + 1 + std::max<std::size_t>(1, workers / 2));
  const FiberPool a = *FiberPool::Find("a");
  const FiberPool b = *FiberPool::Find("b");
  EXPECT_EQ(a.name(), "a");
  EXPECT_NE(a, b);
  EXPECT_EQ(FiberPool::Current(), FiberPool::Default());
  EXPECT_EQ(FiberPool::Find("nope").status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(FiberPool::Find("nope").status().message().find("declared are default, a, b"),
            std::string::npos)
      << FiberPool::Find("nope").status();

  std::atomic<int> strays{0};
  const auto check = [&](FiberPool expected) {
    if (FiberPool::Current() != expected) strays.fetch_add(1, std::memory_order_relaxed);
  };
  const std::size_t per_pool = testing::Scaled(200);
  Event go;
  std::vector<Fiber> fibers;
  for (FiberPool pool : {a, b}) {
    for (std::size_t i = 0; i < per_pool; ++i) {
      Fiber::Attributes attributes;
      attributes.pool = pool;
      fibers.emplace_back(attributes, [&, pool, i] {
        check(pool);
        this_fiber::Yield();
        check(pool);
        this_fiber::SleepFor(std::chrono::microseconds(50 + i % 100));  // a timer wake-up
        check(pool);
        Fiber child([&, pool] { check(pool); });  // stays in the parent's pool
        child.join();
        go.Wait();  // woken by a plain thread below
        check(pool);
      });
    }
  }
  // Plain threads' starts go to the default pool.
  Fiber plain([&] { check(FiberPool::Default()); });
  plain.join();
  std::thread setter([&] { go.Set(); });
  setter.join();
  for (Fiber& fiber : fibers) fiber.join();
  EXPECT_EQ(strays.load(), 0);

  // A fiber of another pool is never run inline by its joiner: it still reports its pool.
  Fiber::Attributes in_b;
  in_b.pool = b;
  RunAsFiber([&] {
    Fiber in_other(in_b, [&] { check(b); });
    in_other.join();
  });
  EXPECT_EQ(strays.load(), 0);

  // A scheduling_group outside the named pool is refused by name.
  Fiber::Attributes wrong = InPool("a");
  wrong.scheduling_group = 0;  // the default pool's group
  const absl::Status refused = TryStartFiberDetached(wrong, [] {});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_NE(refused.message().find("scheduling_group=0 is not in pool a"), std::string::npos)
      << refused;
}

// TryStart past the cap fails with the pool's name, cap and live count; room comes back
// as fibers end; the plain start is never refused (it is counted past the cap).
TEST_P(PoolsTest, TryStartPastTheCapIsRefusedByName) {
  const std::size_t workers = GetParam();
  constexpr std::size_t kCap = 8;
  ScopedPoolFlags flags("capped:" + std::to_string(workers) +
                        ":max_fibers=" + std::to_string(kCap));
  ScopedRuntime runtime(workers + 1);
  Event release;
  std::vector<Fiber> held;
  for (std::size_t i = 0; i < kCap; ++i) {
    absl::StatusOr<Fiber> fiber = Fiber::TryStart(InPool("capped"), [&] { release.Wait(); });
    ASSERT_TRUE(fiber.ok()) << i << ": " << fiber.status();
    held.push_back(*std::move(fiber));
  }
  auto owned = std::make_shared<int>(0);  // its count shows the refused function is gone
  absl::StatusOr<Fiber> refused =
      Fiber::TryStart(InPool("capped"), [owned] { (void)owned; });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(
                "fiber pool \"capped\" is at its cap: 8 live fibers, max_fibers=8"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(owned.use_count(), 1);
  const absl::Status detached = TryStartFiberDetached(InPool("capped"), [owned] { (void)owned; });
  EXPECT_EQ(detached.code(), absl::StatusCode::kResourceExhausted) << detached;
  EXPECT_EQ(owned.use_count(), 1);

  // A plain start at the cap runs (past it, counted).
  std::atomic<bool> plain_ran{false};
  Fiber plain(InPool("capped"), [&] { plain_ran = true; });
  plain.join();
  EXPECT_TRUE(plain_ran.load());
  // (The plain one's place is given back once its stack is reclaimed.)
  ASSERT_TRUE(WaitFor([] { return LiveIn("capped") == kCap; }));
  RuntimeMetrics metrics = GetRuntimeMetrics();
  const PoolMetrics& capped = PoolNamed(metrics, "capped");
  EXPECT_EQ(capped.refused_at_cap, 2u);
  EXPECT_EQ(capped.started_past_cap, 1u);
  EXPECT_EQ(capped.max_fibers, kCap);
  EXPECT_EQ(capped.live_fibers, kCap);
  const std::string text = FormatPrometheus(metrics);
  EXPECT_NE(text.find("spindle_pool_refused_total{pool=\"capped\",cause=\"cap\"} 2"),
            std::string::npos);
  EXPECT_NE(text.find("spindle_pool_live_fibers{pool=\"capped\"} 8"), std::string::npos);
  EXPECT_NE(text.find("spindle_pool_ready_latency_seconds_count{pool=\"capped\"}"),
            std::string::npos);

  release.Set();
  for (Fiber& fiber : held) fiber.join();
  EXPECT_TRUE(WaitFor([] { return LiveIn("capped") == 0; }));
  // Room again: the whole cap at once.
  std::atomic<std::size_t> ran{0};
  for (std::size_t i = 0; i < kCap; ++i) {
    ASSERT_TRUE(TryStartFiberDetached(InPool("capped"), [&] { ran.fetch_add(1); }).ok());
  }
  EXPECT_TRUE(WaitFor([&] { return ran.load() == kCap && LiveIn("capped") == 0; }));
  EXPECT_TRUE(WaitFor([] { return LiveIn("default") == 0; }));
}

// The waiting form: ends at its deadline, starts when a fiber of the pool ends, and ends
// when the caller's execution context is cancelled.
TEST_P(PoolsTest, TheWaitingFormStartsWhenRoomAppearsOrEndsAtItsDeadlineOrCancellation) {
  const std::size_t workers = GetParam();
  ScopedPoolFlags flags("capped:" + std::to_string(workers) + ":max_fibers=2");
  ScopedRuntime runtime(workers + 1);
  Event release_first;
  Event release_second;
  Fiber first = *Fiber::TryStart(InPool("capped"), [&] { release_first.Wait(); });
  Fiber second = *Fiber::TryStart(InPool("capped"), [&] { release_second.Wait(); });

  // The deadline.
  const absl::Status late = TryStartFiberDetachedUntil(
      std::chrono::steady_clock::now() + std::chrono::milliseconds(20), InPool("capped"),
      [] {});
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_NE(late.message().find("fiber pool \"capped\" stayed at its cap (2 live fibers)"),
            std::string::npos)
      << late;

  // Room: a waiter (a plain thread) is admitted when `first` ends.
  std::atomic<bool> admitted{false};
  std::atomic<bool> third_ran{false};
  std::thread waiter([&] {
    absl::StatusOr<Fiber> third = Fiber::TryStartUntil(
        std::chrono::steady_clock::now() + std::chrono::minutes(2), InPool("capped"),
        [&] { third_ran = true; });
    EXPECT_TRUE(third.ok()) << third.status();
    admitted = true;
    if (third.ok()) third->join();
  });
  // Waiting or not yet: either way it is admitted only after the release.
  EXPECT_FALSE(admitted.load());
  release_first.Set();
  first.join();
  waiter.join();
  EXPECT_TRUE(third_ran.load());

  // Cancellation: a fiber of the default pool waits in its execution context. (A
  // fiber's place is given back when its stack is reclaimed, just after its joiner
  // returns: wait for third's.)
  ASSERT_TRUE(WaitFor([] { return LiveIn("capped") == 1; }));
  auto context = ExecutionContext::Create();
  Event release_blocker;
  Fiber blocker = *Fiber::TryStart(InPool("capped"), [&] { release_blocker.Wait(); });
  std::atomic<std::uint64_t> waiter_id{0};
  absl::Status cancelled;
  Fiber canceller([&] {
    ScopedExecutionContext scope(context);
    waiter_id = this_fiber::GetId();
    cancelled = TryStartFiberDetachedUntil(
        std::chrono::steady_clock::now() + std::chrono::minutes(2), InPool("capped"), [] {});
  });
  ASSERT_TRUE(WaitFor([&] { return waiter_id.load() != 0; }));
  ASSERT_TRUE(testing::WaitUntilWaitingIn(waiter_id.load(), internal::WaitKind::kOther));
  context->Cancel();
  canceller.join();
  EXPECT_EQ(cancelled.code(), absl::StatusCode::kCancelled) << cancelled;

  release_second.Set();
  release_blocker.Set();
  second.join();
  blocker.join();
  EXPECT_TRUE(WaitFor([] { return LiveIn("capped") == 0; }));
  EXPECT_EQ(PoolNamed(GetRuntimeMetrics(), "capped").refused_at_cap, 2u);
}

// No stack to be had: TryStart is refused with the cause, a plain start waits for one
// (it runs once stacks can be had again), nothing leaks, and live counts return to zero.
TEST_P(PoolsTest, AStartWithNoStackIsRefusedOrWaits) {
  const std::size_t workers = GetParam();
  ScopedPoolFlags flags("");
  ScopedRuntime runtime(workers);
  internal::FailStackCreationForTesting(true);
  Event release;
  std::vector<Fiber> held;
  absl::Status refused;
  auto owned = std::make_shared<int>(0);
  // Every stack already made (cached or pooled) is taken, then the next start fails.
  for (std::size_t i = 0; i < 1'000'000; ++i) {
    absl::StatusOr<Fiber> fiber = Fiber::TryStart(Fiber::Attributes(), [&release, owned] {
      release.Wait();
      (void)owned;
    });
    if (!fiber.ok()) {
      refused = fiber.status();
      break;
    }
    held.push_back(*std::move(fiber));
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_NE(refused.message().find("fiber pool \"default\": no stack for a new fiber"),
            std::string::npos)
      << refused;
  EXPECT_NE(refused.message().find("FailStackCreationForTesting"), std::string::npos)
      << refused;
  EXPECT_EQ(owned.use_count(), static_cast<long>(held.size()) + 1);
  EXPECT_EQ(PoolNamed(GetRuntimeMetrics(), "default").refused_no_stack, 1u);

  // A plain start now waits for a stack on the worker that takes it...
  std::atomic<bool> plain_ran{false};
  const std::uint64_t waits_before = internal::StackAllocator::Default(0).stack_waits.load();
  StartFiberDetached([&] { plain_ran = true; });
  // ... until stacks can be had again (the held fibers keep theirs meanwhile).
  EXPECT_TRUE(WaitFor(
      [&] { return internal::StackAllocator::Default(0).stack_waits.load() > waits_before; }));
  EXPECT_FALSE(plain_ran.load());
  internal::FailStackCreationForTesting(false);
  EXPECT_TRUE(WaitFor([&] { return plain_ran.load(); }));
  release.Set();
  for (Fiber& fiber : held) fiber.join();
  EXPECT_EQ(owned.use_count(), 1);
  EXPECT_TRUE(WaitFor([] { return GetFiberCount() == 0 && LiveIn("default") == 0; }));
}

INSTANTIATE_TEST_SUITE_P(Workers, PoolsTest, testing::WorkerCounts(), testing::WorkerCountName);

// Every kind of start counts against the cap, so that every end, which gives a place
// back, matches a count: RunAsFiber's fiber and timers' callbacks here (a count that
// missed them drifted down, and the cap admitted more than it should).
TEST(PoolCapTest, EveryKindOfStartCountsAgainstTheCap) {
  ScopedPoolFlags flags("", /*default_cap=*/3);
  ScopedRuntime runtime(2);
  RunAsFiber([] {  // one live fiber: this one
    std::atomic<int> fired{0};
    for (int i = 0; i < 5; ++i) {
      SetDetachedTimer(std::chrono::steady_clock::now() + std::chrono::milliseconds(1),
                       [&fired] { fired.fetch_add(1); });
    }
    ASSERT_TRUE(WaitFor([&] { return fired.load() == 5; }));
    ASSERT_TRUE(WaitFor([] { return LiveIn("default") == 1; }));
    Event release;
    int admitted = 0;
    for (int i = 0; i < 10; ++i) {
      if (TryStartFiberDetached(Fiber::Attributes(), [&release] { release.Wait(); }).ok()) {
        ++admitted;
      }
    }
    EXPECT_EQ(admitted, 2);  // the cap of 3, less this fiber
    release.Set();
    // `release` lives on this fiber's stack: wait until its waiters are gone.
    EXPECT_TRUE(WaitFor([] { return LiveIn("default") == 1; }));
  });
  EXPECT_TRUE(WaitFor([] { return LiveIn("default") == 0; }));
}

// The default pool with no --fiber_pools is exactly the runtime of before: one pool,
// all groups, no cap, and its metrics agree with the groups'.
TEST(DefaultPoolTest, WithoutPoolsThereIsOneDefaultPoolOfEveryGroup) {
  ScopedRuntime runtime(4, 2);
  const RuntimeMetrics metrics = GetRuntimeMetrics();
  ASSERT_EQ(metrics.pools.size(), 1u);
  EXPECT_EQ(metrics.pools[0].name, "default");
  EXPECT_EQ(metrics.pools[0].workers, 4u);
  EXPECT_EQ(metrics.pools[0].groups, 2u);
  EXPECT_EQ(metrics.pools[0].max_fibers, 0u);
  for (const GroupMetrics& group : metrics.groups) EXPECT_EQ(group.pool, 0u);
  EXPECT_EQ(FiberPool::Current().name(), "default");
}

// The acceptance's isolation: pools a and b of one worker each on different CPUs, b
// saturated by CPU-bound fibers and a 2 s hog; a probe in a that sleeps 1 ms keeps its
// wake-up latency (the bound is generous: the figures, idle and with one shared pool,
// come from benchmarks/pool_isolation_bench.cc).
TEST(PoolIsolationTest, AProbeInItsOwnPoolIsNotDelayedByASaturatedPool) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  if (CPU_COUNT(&set) < 2) GTEST_SKIP() << "needs two CPUs to pin the pools apart";
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  ScopedPoolFlags flags("a:1:cpus=" + std::to_string(cpus[0]) +
                        ",b:1:cpus=" + std::to_string(cpus[1]));
  ScopedRuntime runtime(3);
  testing::IsolationLoad load;
  load.probe_pool = "a";
  load.load_pool = "b";
  load.samples = testing::Scaled(1000);
  const testing::ProbeFigures figures = testing::RunIsolationProbe(load);
  std::printf("probe in pool a, pool b saturated: p50 %.0f us, p99 %.0f us, max %.0f us\n",
              figures.p50_us, figures.p99_us, figures.max_us);
  EXPECT_EQ(figures.samples, load.samples);
  // Had b's load or its hog reached a's worker, wake-ups would wait for 2 ms slices or
  // the 2 s hog. 50 ms leaves room for a noisy, oversubscribed machine.
  EXPECT_LT(figures.p99_us, 50'000) << "the probe waited behind the other pool's load";
}

}  // namespace
}  // namespace spindle
